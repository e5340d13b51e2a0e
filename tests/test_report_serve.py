"""`report --serve MODEL`: the inference answer as the report's first page, with the same
figures the terminal prints (one answer, two renderings)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from hwadvisor.advise.serving import ServeRequest, serve_advice
from hwadvisor.cli import main
from hwadvisor.model.load import load_profile
from hwadvisor.present.serve import option_cells, serve_context, shown_options, verdict_lines

H200 = Path(__file__).parent / "fixtures" / "validation" / "h200-2026-11-27.json"


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.parametrize(
    ("argv", "model"),
    [
        (["--serve", "llama-3.1-8b", "--engine", "vllm", "--users", "8"], "llama-3.1-8b"),
        (["--serve", "qwen3-30b-a3b-local"], "qwen3-30b-a3b"),
        (["--serve", "llama-3.1-70b", "--quant", "bf16", "--engine", "vllm"], "llama-3.1-70b"),
    ],
)
def test_the_first_page_is_the_answer_the_terminal_prints(
    tmp_path: Path, argv: list[str], model: str
) -> None:
    code = main(["report", str(H200), "-o", str(tmp_path), "-f", "html", "--no-redact", *argv])
    assert code == 0
    (page,) = tmp_path.glob("*.html")
    assert page.name.startswith(f"h200-2026-11-27-serve-{model}")
    text = _text(page.read_text(encoding="utf-8"))
    first = text[: text.index("The machine")] if "The machine" in text else text
    assert f"Can this machine serve {model}?" in first
    from hwadvisor.advise.serving import build_request

    request = build_request(argv[1], **_given(argv[2:]))
    advice = serve_advice(load_profile(H200), request)
    for line in verdict_lines(advice):  # word for word, as in the terminal
        assert " ".join(line.split()).removeprefix("- ") in first, line
        if line.startswith("  - "):  # a suggestion: listed once, not twice
            assert first.count(line.strip().removeprefix("- ")) == 1, line
    for e in shown_options(advice):
        cells = option_cells(advice, e)
        row = re.escape(cells["memory"]) + r".{0,80}?" + re.escape(cells["decode"])
        assert re.search(row, first), (cells["option"], cells["memory"], cells["decode"])


def _given(rest: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        key = flag.lstrip("-").replace("-", "_")
        out[key] = int(value) if value.isdigit() else value
    return out


def test_serving_options_without_serve_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(H200), "-o", str(tmp_path), "--users", "4"]) == 2
    err = capsys.readouterr().err
    assert "--serve" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_an_unknown_model_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", str(H200), "-o", str(tmp_path), "--serve", "no-such-model-9b"])
    assert code in (2, 5)
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_a_local_model_file_is_named_without_its_folder() -> None:
    """A GGUF under a home folder would put the user's name on a page sent to others."""
    advice = serve_advice(load_profile(H200), ServeRequest(model="llama-3.1-8b"))
    advice.model_source = "/home/alice/models/Meta-Llama-3-8B.Q4_K_M.gguf"
    assert serve_context(advice)["source"] == "Meta-Llama-3-8B.Q4_K_M.gguf"
    advice.model_source = "C:\\Users\\alice\\m.gguf"
    assert serve_context(advice)["source"] == "m.gguf"


def test_the_report_of_a_machine_not_sized_says_why(tmp_path: Path) -> None:
    unmeasured = Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json"
    code = main(
        ["report", str(unmeasured), "-o", str(tmp_path), "-f", "html", "--serve", "llama-3.2-1b"]
    )
    assert code == 0
    (page,) = tmp_path.glob("*.html")
    assert "not sized" in _text(page.read_text(encoding="utf-8"))


def test_a_full_disk_writes_nothing_and_is_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno
    import os

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    argv = ["report", str(H200), "-o", str(tmp_path), "-f", "html", "--serve", "llama-3.1-8b"]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no partial page, no temporary file


def test_an_earlier_serving_report_is_never_replaced(tmp_path: Path) -> None:
    argv = ["report", str(H200), "-o", str(tmp_path), "-f", "html", "--no-redact",
            "--serve", "llama-3.1-8b"]  # fmt: skip
    earlier = tmp_path / "h200-2026-11-27-serve-llama-3.1-8b.html"
    earlier.write_text("mine", encoding="utf-8")
    assert main(argv) == 0
    assert earlier.read_text(encoding="utf-8") == "mine"
    assert len(list(tmp_path.glob("h200-2026-11-27-serve-llama-3.1-8b*.html"))) == 2


def test_a_local_model_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is checked before the machine is read, and that check's shape is the one the
    answer uses: a GGUF or config.json header is read once."""
    import hwadvisor.importers.modelfile as modelfile

    calls: list[Path] = []
    real = modelfile.geometry_from_file

    def counted(path: Path) -> object:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(modelfile, "geometry_from_file", counted)
    config = Path(__file__).parent / "fixtures" / "modelfiles" / "llama-3.1-8b.config.json"
    argv = ["report", str(H200), "-o", str(tmp_path), "-f", "html", "--serve", str(config)]
    assert main(argv) == 0
    assert main(["advise", "-p", str(H200), "--serve", str(config), "--json", "-"]) == 0
    assert calls == [config, config]


def test_the_serving_page_takes_the_users_prices(tmp_path: Path) -> None:
    """report --serve --prices FILE: the page's prices are the file's; without --serve the
    option is one line, exit 2 (a saved profile's advice keeps its own prices)."""
    from hwadvisor.cli import main

    prices = tmp_path / "eur.toml"
    prices.write_text(
        'currency = "EUR"\n[[card]]\ngpu = "GeForce RTX 4090"\nprice = 1900.0\n'
        'source = "a shop"\ndate = "2026-10"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(["report", str(H200), "--serve", "llama3-8b-chat", "--prices", str(prices),
                 "--format", "html", "-o", str(out)])  # fmt: skip
    assert code == 0
    (page,) = out.glob("*.html")
    text = page.read_text(encoding="utf-8")
    # the file stands alone: its one card and no built-in row (no Mac, no host for the card)
    assert "GeForce RTX 4090" in text and "Mac mini" not in text and "Arc B580" not in text
    assert main(["report", str(H200), "--prices", str(prices), "-o", str(out)]) == 2


@pytest.mark.parametrize("gpu", ["RTX 3090", "RTX 4090", "A100 SXM4 80GB", "RX 7900 XTX", "L4"])
@pytest.mark.parametrize("engine", ["llama.cpp", "vllm"])
def test_each_option_is_shown_once_even_where_the_assumed_gpu_is_the_cheapest_rental(
    gpu: str, engine: str
) -> None:
    """An assumed RTX 3090 was also the cheapest rental: the table listed it twice."""
    from hwadvisor.advise.serving import build_request

    quant = "Q4_K_M" if engine == "llama.cpp" else "bf16"
    request = build_request("llama-3.1-8b", quant=quant, engine=engine, assume_gpu=(gpu,))
    advice = serve_advice(None, request)
    shown = shown_options(advice)
    assert len({id(e) for e in shown}) == len(shown)
    names = [e.hardware for e in shown]
    assert len(set(names)) == len(names), names
    rent = advice.cheapest_to_rent
    assert rent is None or rent.hardware in names
