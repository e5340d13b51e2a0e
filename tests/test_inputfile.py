"""The one input reader (hwadvisor.inputfile): regular files only, a size cap, UTF-8/UTF-16, and
every failure one line with exit 5 through the CLI, never a hang or a traceback."""

from __future__ import annotations

import codecs
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.cli import main
from hwadvisor.errors import InputError
from hwadvisor.inputfile import decode_text, read_input
from hwadvisor.model.load import parse_profile

FIXTURES = Path(__file__).parent / "fixtures"
V1 = FIXTURES / "profiles" / "v1-cpu-only.json"
COLLECT_ENV = FIXTURES / "import" / "collect_env-cpu-section-xeon-8480.txt"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    return code, err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _in_time(fn, seconds: float = 5.0):  # type: ignore[no-untyped-def]
    """Run ``fn`` in a thread; fail (instead of hanging the suite) when it blocks."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked: the reader waited on a special file"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def test_a_fifo_is_refused_at_once(fifo: Path) -> None:
    with pytest.raises(InputError, match="named pipe"):
        _in_time(lambda: read_input(fifo))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_unread(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    with pytest.raises(InputError, match="character device"):
        _in_time(lambda: read_input(Path(device)))


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_input(tmp_path)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_input(tmp_path / "nope.json")


def test_an_unreadable_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}", encoding="utf-8")

    def denied(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)  # as for a file without read permission
    with pytest.raises(InputError, match=r"cannot be read: Permission denied"):
        read_input(path)


def test_a_read_error_midway_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "flaky.json"
    path.write_text("{}", encoding="utf-8")

    def failing(*_args: object) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", failing)  # a disk or network file system failing
    with pytest.raises(InputError, match="Input/output error"):
        read_input(path)


def test_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 2048)
    assert read_input(path, max_bytes=4096) == "x" * 2048
    with pytest.raises(InputError, match="more than an input can be"):
        read_input(path, max_bytes=1024)


@pytest.mark.parametrize(
    ("prefix", "encoding"),
    [
        (b"", "utf-8"),
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (b"", "utf-16-le"),  # PowerShell's Out-File without a BOM
    ],
)
def test_encodings_people_save_files_in(tmp_path: Path, prefix: bytes, encoding: str) -> None:
    text = COLLECT_ENV.read_text(encoding="utf-8")
    path = tmp_path / "pasted.txt"
    path.write_bytes(prefix + text.encode(encoding))
    assert read_input(path) == text


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_utf8_text_round_trips(text: str) -> None:
    assert decode_text(text.encode("utf-8"), "t") == text
    assert decode_text(codecs.BOM_UTF8 + text.encode("utf-8"), "t") == text


@given(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=5),
    st.text(alphabet="äéß°±µ×—…", max_size=3),
)
def test_tool_output_in_utf16_round_trips(ascii_text: str, accents: str) -> None:
    text = ascii_text * 4 + accents  # tool output: ASCII with the odd non-ASCII character
    assert decode_text(codecs.BOM_UTF16_LE + text.encode("utf-16-le"), "t") == text
    assert decode_text(codecs.BOM_UTF16_BE + text.encode("utf-16-be"), "t") == text


def test_binary_is_not_text() -> None:
    with pytest.raises(InputError, match="not text"):
        decode_text(bytes(range(256)) * 4, "blob")


def test_deeply_nested_json_is_an_input_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InputError, match=r"nested too deeply"):
        parse_profile(json.dumps({"schema_version": 4, "x": 0})[:-1] + ', "y": ' + deep + "}")


@pytest.mark.parametrize(
    "command",
    [
        ["import", "{f}"],
        ["advise", "-p", "{f}", "-w", "small-cnn"],
        ["report", "{f}"],
        ["diff", "{f}", str(V1)],
        ["diff", str(V1), "{f}"],
        ["advise", "-p", str(V1), "-w", "small-cnn", "--rules", "{f}"],
        ["advise", "-p", str(V1), "-w", "small-cnn", "--prices", "{f}"],
    ],
)
def test_every_command_refuses_special_files_with_exit_5(
    capsys: pytest.CaptureFixture[str], fifo: Path, tmp_path: Path, command: list[str]
) -> None:
    for target in (str(fifo), str(tmp_path)):
        args = [a.replace("{f}", target) for a in command]
        code, err = _in_time(lambda args=args: _run(capsys, *args))  # type: ignore[misc]
        assert code == 5, err
        assert "error:" in err and "Traceback" not in err and "internal error" not in err
        assert len(err.strip().splitlines()) == 1


def test_report_reads_a_bom_profile_like_every_other_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(codecs.BOM_UTF8 + V1.read_bytes())
    code, err = _run(capsys, "report", str(path), "--format", "html")
    assert code == 0, err
    assert (tmp_path / "bom.html").exists()


def test_deeply_nested_toml_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rules = tmp_path / "deep.toml"
    rules.write_text("x = " + "[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code, err = _run(capsys, "advise", "-p", str(V1), "-w", "small-cnn", "--rules", str(rules))
    assert code == 5
    assert "nested too deeply" in err and "internal error" not in err
