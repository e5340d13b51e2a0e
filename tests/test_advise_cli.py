"""`hwadvisor advise`, `import` and `workloads` through ``cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.cli import main
from hwadvisor.model.profile import SCHEMA_VERSION
from tests.helpers.expectations import load

FIXTURES = Path(__file__).parent / "fixtures"
V1 = FIXTURES / "profiles" / "v1-cpu-only.json"
XML = FIXTURES / "nvidia-smi" / "telegraf-a100-sxm4-80gb-mig.xml"
#: Recorded pastes that give no useful profile: the import refuses them in one line.
REFUSED = sorted(
    FIXTURES / "import" / e["file"]
    for e in load(FIXTURES / "import" / "expected.toml")
    if "refused" in e
)
IMPORTS = sorted(
    [p for p in (FIXTURES / "import").iterdir() if p.suffix == ".txt" and p not in REFUSED]
    + list((FIXTURES / "nvidia-smi").glob("*.xml"))
    + [V1]
)
PRESETS = (
    "tabular",
    "small-cnn",
    "resnet50-imagenet",
    "bert-base-finetune",
    "llm-7b-lora",
    "llm-7b-pretrain",
)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    code = main(["advise", "--profile", str(V1), *args, "--json", "-"])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)  # type: ignore[no-any-return]


def test_advise_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--profile", str(V1), "--workload", "small-cnn"])
    out = capsys.readouterr().out
    assert code == 0
    assert "scenario 1 of 4 (A CPU is enough)" in out
    assert (
        out.strip().splitlines()[0].startswith("This machine is enough for small-cnn within 24 h")
    )


def test_advise_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--workload", "resnet50-imagenet")
    assert doc["deadline_hours"] == 24
    assert doc["scenario"]["id"] == 2
    assert set(doc["scenario"]) >= {"id", "title", "because", "confidence", "rule"}
    assert doc["scenario"]["confidence"] in ("high", "medium", "low")
    assert doc["this_machine"]["sufficient"] is False
    assert doc["this_machine"]["verdict"] == "not enough"
    rec = doc["recommendation"]
    for key in (
        "hardware",
        "scenario_class",
        "seconds",
        "fits_memory",
        "purchase_cost",
        "hourly_cost",
        "run_cost",
        "energy_cost",
        "break_even_runs",
        "price_date",
        "price_source",
    ):
        assert key in rec, key
    assert rec["scenario_class"] == doc["scenario"]["id"]
    assert doc["estimates"]
    for row in doc["estimates"]:
        for key in (
            "hardware",
            "scenario_class",
            "seconds",
            "low_seconds",
            "high_seconds",
            "fits_memory",
        ):
            assert key in row
    assert [t["rule"] for t in doc["trace"]] == ["class-1", "class-2", "class-3", "class-4"]


def test_unknown_workload(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "--profile", str(V1), "--workload", "resnet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "resnet50-imagenet" in err


def test_no_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--profile", str(V1)]) == 2
    assert "--workload" in capsys.readouterr().err


def test_unknown_assume_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["advise", "--profile", str(V1), "--workload", "small-cnn", "--assume-gpu", "RTX 4909"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "RTX 4909" in err
    assert "closest" in err


def test_assume_gpu_adds_a_row(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "--workload", "resnet50-imagenet", "--assume-gpu", "H100 SXM", "--gpus", "8"
    )
    rows = [r for r in doc["estimates"] if r["origin"] == "assumed"]
    assert [r["hardware"] for r in rows] == ["8× H100 SXM (assumed)"]
    assert rows[0]["scenario_class"] == 3
    assert rows[0]["gpus"] == 8
    assert rows[0]["seconds"] > 0


def test_custom_workload(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--params", "1e8", "--tokens", "1e9")
    assert doc["workload"]["name"] == "custom"
    assert doc["workload"]["kind"] == "transformer"
    # 6·N·D for the weights plus the attention of the shape assumed for 1e8 parameters.
    assert 6 * 1e8 * 1e9 < doc["workload"]["total_flops"] < 1.2 * 6 * 1e8 * 1e9
    assert doc["workload"]["shape_assumed"].startswith("shape assumed (")
    assert doc["scenario"]["id"] in (1, 2, 3, 4)


def test_custom_transformer_shape(capsys: pytest.CaptureFixture[str]) -> None:
    shape = ["--seq-len", "384", "--layers", "24", "--hidden", "1024", "--heads", "16"]
    plain = _json(capsys, "--params", "3.3e8", "--tokens", "1e9", "--precision", "fp16")
    shaped = _json(capsys, "--params", "3.3e8", "--tokens", "1e9", "--precision", "fp16", *shape)
    attention = 12 * 24 * 1024 * 384
    assert shaped["workload"]["total_flops"] == pytest.approx((6 * 3.3e8 + attention) * 1e9)
    # Either shape sizes the activations: more memory than the parameters' 18 bytes alone.
    for doc in (plain, shaped):
        assert doc["workload"]["memory_bytes"] > 18 * 3.3e8 * 1.05
    # The assumed one is said; a given one is not.
    assert any(w.startswith("Shape assumed (") for w in plain["caveats"])
    assert not any(w.startswith("Shape assumed") for w in shaped["caveats"])
    assert shaped["workload"]["shape_assumed"] is None
    flash = _json(
        capsys, "--params", "3.3e8", "--tokens", "1e9", "--precision", "fp16", *shape,
        "--flash-attention",
    )  # fmt: skip
    assert flash["workload"]["memory_bytes"] < shaped["workload"]["memory_bytes"]


def test_custom_conv_activation_figure(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--params", "2.5e7", "--flops-per-sample", "2.46e10", "--samples", "100000"]
    plain = _json(capsys, *base)
    given = _json(capsys, *base, "--activation-bytes", "5e7")
    assert given["workload"]["memory_bytes"] > plain["workload"]["memory_bytes"] + 32 * 5e7 * 0.9
    assert any("--activation-bytes" in w for w in plain["caveats"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--params", "0", "--tokens", "1e9"], "parameters"),
        (["--params", "1e8"], "give samples"),
        (["--params", "nan", "--tokens", "1e9"], "--params must be a finite number"),
        (["--params", "inf", "--tokens", "1e9"], "--params must be a finite number"),
        (["--params", "1e8", "--tokens", "-inf"], "--tokens must be a finite number"),
        (["--params", "1.5", "--tokens", "1e9"], "--params must be a whole number"),
        (["--params", "1e8", "--tokens", "1e9", "--epochs", "nan"], "--epochs must be"),
        (["--params", "1e8", "--tokens", "1e9", "--layers", "12"], "hidden, heads missing"),
        (
            [
                "--params",
                "1e8",
                "--tokens",
                "1e9",
                "--layers",
                "2",
                "--hidden",
                "8",
                "--heads",
                "16",
                "--seq-len",
                "64",
            ],
            "cannot exceed",
        ),
        (["--layers", "12", "--workload", "small-cnn"], "give --params too"),
        (["--params", "1e8", "--tokens", "1e9", "--activation-bytes", "nan"], "finite"),
    ],
)
def test_bad_custom_workload(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["advise", "--profile", str(V1), *args]) == 2
    err = capsys.readouterr().err
    assert "error" in err and said in err
    assert "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("path", IMPORTS, ids=lambda p: p.name)
def test_advise_on_every_import_format(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code = main(
        ["advise", "--profile", str(path), "--workload", "bert-base-finetune", "--json", "-"]
    )
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)
    assert doc["scenario"]["id"] == 2
    assert doc["estimates"][0]["origin"] == "this-machine"


@pytest.mark.parametrize("path", REFUSED, ids=lambda p: p.name)
def test_advise_on_a_refused_paste_is_one_line_exit_5(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    code = main(["advise", "--profile", str(path), "--workload", "bert-base-finetune"])
    err = capsys.readouterr().err
    assert code == 5
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("content", [None, b"\x00\x01\x02\xff\xfe binary", b""])
def test_bad_profile_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "profile.json"
    if content is not None:
        path.write_bytes(content)
    code = main(["advise", "--profile", str(path), "--workload", "small-cnn"])
    err = capsys.readouterr().err
    assert code == 5
    assert err.strip().count("\n") == 0
    assert err.startswith("hwadvisor: error:")


def test_import_writes_unique_profiles(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    assert main(["import", str(XML), "--out", str(out), "--quiet"]) == 0
    assert main(["import", str(XML), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    names = sorted(p.name for p in out.iterdir())
    stem = "telegraf-a100-sxm4-80gb-mig-imported"
    assert names == [f"{stem}-2.json", f"{stem}.json"]
    first = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    assert first["schema_version"] == SCHEMA_VERSION
    # The written profile is itself a valid --profile.
    assert main(["advise", "--profile", str(out / f"{stem}.json"), "-w", "small-cnn"]) == 0


def test_import_json_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["import", str(XML), "--json", "-"])
    out = capsys.readouterr().out
    assert code in (0, 3)
    doc = json.loads(out)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert any("A100" in (g["name"]["value"] or "") for g in doc["gpus"])


def test_workloads_lists_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workloads"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert name in out


def test_rules_and_prices_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[[price]]\nhardware = "node"\nhourly = 30\n', encoding="utf-8")
    doc = _json(capsys, "-w", "resnet50-imagenet", "--prices", str(prices), "--kwh-price", "0.4")
    node = next(r for r in doc["estimates"] if r["hardware"].startswith("8× H100 SXM server"))
    assert node["hourly_cost"] == 30 and node["run_cost"] is not None
    assert doc["kwh_price"] == 0.4
    bad = tmp_path / "rules.toml"
    bad.write_text("[scenarios\n", encoding="utf-8")
    code = main(["advise", "--profile", str(V1), "-w", "small-cnn", "--rules", str(bad)])
    err = capsys.readouterr().err
    assert code == 5
    assert str(bad) in err


def test_the_terminal_says_how_a_workload_fits_memory(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "advise",
            "--profile",
            str(Path(__file__).parent / "fixtures" / "reports" / "cpu-only.json"),
            "--workload",
            "resnet50-imagenet",
            "--assume-gpu",
            "RTX 4060",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    # The row's "yes [n]" points to the plan, in words, under the table.
    said = " ".join(out.split())
    assert "GeForce RTX 4060 (assumed): fits at batch 64 (gradient accumulation ×4" in said
