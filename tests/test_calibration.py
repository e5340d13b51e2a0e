"""The calibration table of measured training throughputs, and the comparison with hwadvisor's
estimates. Only what holds whatever the model's accuracy is asserted; ``pytest -s`` prints the
summary the accuracy script gives."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hwadvisor.calibration import (
    TIME_UNITS,
    UNITS,
    CalibrationError,
    CalibrationRow,
    Comparison,
    calibration_candidate,
    calibration_workload,
    compare,
    compare_all,
    load_calibration,
    report_lines,
    summarize,
)
from hwadvisor.catalog import find_gpu_peak
from hwadvisor.catalog.model import model_params
from hwadvisor.workloads import DEVICE_CLASSES, memory_traffic_per_sample

ROWS = load_calibration()
IDS = [r.id for r in ROWS]


@pytest.fixture(scope="module")
def comparisons() -> list[Comparison]:
    return compare_all(ROWS)


def test_the_table_loads_and_has_enough_rows() -> None:
    assert len(ROWS) >= 45


def test_ids_are_unique() -> None:
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_row_has_a_source_and_a_positive_figure(row: CalibrationRow) -> None:
    assert len(row.source.strip()) > 20
    assert row.workload.strip()
    assert row.measured > 0 and math.isfinite(row.measured)
    assert row.unit in UNITS


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_row_is_catalog_hardware_or_a_cpu(row: CalibrationRow) -> None:
    if row.gpus == 0:
        assert row.cpu_cores and row.cpu_ghz and row.cpu_microarchitecture
        candidate = calibration_candidate(row)
        assert candidate.role == "cpu" and candidate.flops_per_cycle
    else:
        assert find_gpu_peak(row.hardware) is not None
        candidate = calibration_candidate(row)
        assert candidate.gpus == row.gpus
    assert candidate.device_class in DEVICE_CLASSES


def test_the_table_is_varied() -> None:
    kinds = {calibration_workload(r).kind for r in ROWS}
    assert kinds == {"conv", "transformer"}
    assert {r.precision for r in ROWS} >= {"fp32", "tf32", "fp16", "bf16"}
    assert any(r.gpus == 0 for r in ROWS)
    assert any(r.gpus == 1 for r in ROWS) and any(r.gpus > 1 for r in ROWS)
    classes = {calibration_candidate(r).device_class for r in ROWS}
    assert classes == set(DEVICE_CLASSES)


def test_every_row_gives_a_finite_positive_ratio(comparisons: list[Comparison]) -> None:
    assert [c.row.id for c in comparisons] == IDS
    for c in comparisons:
        assert math.isfinite(c.predicted) and c.predicted > 0, c.row.id
        assert math.isfinite(c.ratio) and c.ratio > 0, c.row.id
        expected = (
            c.row.measured / c.predicted
            if c.row.unit in TIME_UNITS
            else c.predicted / c.row.measured
        )
        assert c.ratio == pytest.approx(expected)


def test_the_summary_counts_are_consistent(comparisons: list[Comparison]) -> None:
    s = summarize(comparisons, worst=5)
    assert s.rows == len(ROWS)
    assert 0 <= s.within_1_5 <= s.within_2 <= s.rows
    assert s.share_within_1_5 == pytest.approx(s.within_1_5 / s.rows)
    assert math.isfinite(s.geomean) and s.geomean > 0
    assert sum(count for _name, count, _gm in s.groups) == s.rows
    assert len(s.worst) == 5
    worst = max(comparisons, key=lambda c: c.factor)
    assert s.worst[0].factor == worst.factor
    assert [ok for _label, ok in s.targets] == [
        s.within_1_5 >= 0.9 * s.rows,
        s.within_2 == s.rows,
        0.85 <= s.geomean <= 1.15,
    ]
    lines = report_lines(comparisons)
    assert len([line for line in lines if line.startswith(("  PASS", "  MISS"))]) == 3
    print()
    print("\n".join(lines))


def test_rounding_of_the_estimate_does_not_move_the_prediction() -> None:
    """The comparison sizes the work so that 2-significant-figure rounding stays under 1 %:
    a throughput row's prediction equals the unrounded formula of the documented model — the
    arithmetic (peak × efficiency) and the memory traffic (bandwidth) overlapping in part."""
    row = next(r for r in ROWS if r.id == "dle-pyt-rn50-a100-80g-1x-amp")
    c = compare(row)
    peak = find_gpu_peak(row.hardware)
    assert peak is not None and peak.fp16_tflops is not None and peak.bandwidth_gbs
    w = calibration_workload(row)
    assert w.flops_per_sample is not None
    p = model_params()
    compute = w.flops_per_sample / (peak.fp16_tflops * 1e12 * p.tensor_conv)
    traffic = memory_traffic_per_sample(w)
    assert traffic is not None
    memory = traffic / (peak.bandwidth_gbs * 1e9)
    exact = 1.0 / (max(compute, memory) + p.overlap * min(compute, memory))
    assert c.predicted == pytest.approx(exact, rel=0.01)


# --------------------------------------------------------------------------------------------
# Bad tables: one-line errors

GOOD = """
[[row]]
id = "a-row"
origin = "tests"
hardware = "A100 SXM4 80GB"
gpus = 1
workload = "ResNet-50"
preset = "resnet50-imagenet"
precision = "fp16"
measured = 2470
unit = "samples_per_s"
source = "NVIDIA DeepLearningExamples ResNet-50 README, DGX A100 table"
"""


def _load(tmp_path: Path, text: str) -> list[CalibrationRow]:
    path = tmp_path / "table.toml"
    path.write_text(text, encoding="utf-8")
    return load_calibration(path)


def test_a_good_tiny_table_loads_and_compares(tmp_path: Path) -> None:
    (row,) = _load(tmp_path, GOOD)
    assert compare(row).ratio > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("measured = 2470", "measured = 2470\ncolour = 'red'"), "unknown key 'colour'"),
        (("source = ", "# source = "), "missing key 'source'"),
        (('source = "NVIDIA', 'source = "  "\nnote = "NVIDIA'), "'source' must be non-empty"),
        (("measured = 2470", "measured = 0"), "'measured' must be a positive number"),
        (("measured = 2470", "measured = -3.5"), "'measured' must be a positive number"),
        (("measured = 2470", "measured = true"), "'measured' must be a positive number"),
        (('unit = "samples_per_s"', 'unit = "img/s"'), "key 'unit' must be one of"),
        (('precision = "fp16"', 'precision = "fp8"'), "key 'precision' must be one of"),
        (('hardware = "A100 SXM4 80GB"', 'hardware = "Voodoo 2"'), "not in the GPU catalog"),
        (("gpus = 1", "gpus = -1"), "'gpus' must be a whole number"),
        (('preset = "resnet50-imagenet"', 'preset = "resnet51"'), "unknown workload"),
        (('preset = "resnet50-imagenet"', 'kind = "conv"\nparameters = 1000'), "flops_per_sample"),
        (('unit = "samples_per_s"', 'unit = "tokens_per_s"'), "needs a transformer"),
        (('unit = "samples_per_s"', 'unit = "hours"'), "needs 'run_samples'"),
        (("gpus = 1", "gpus = 0"), "needs 'cpu_cores'"),
        (('id = "a-row"', 'id = "A Row"'), "lower-case slug"),
    ],
)
def test_bad_tables_give_one_line_errors(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(CalibrationError) as caught:
        _load(tmp_path, GOOD.replace(old, new, 1))
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    assert "table.toml" in text


def test_duplicate_ids_and_empty_or_invalid_tables_are_refused(tmp_path: Path) -> None:
    for text, message in (
        (GOOD + GOOD, "appears more than once"),
        ("title = 'x'\n", "unknown top-level key"),
        ("", "no [[row]] tables"),
        ("[[row]\n", "not valid TOML"),
    ):
        with pytest.raises(CalibrationError) as caught:
            _load(tmp_path, text)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)


def test_a_cpu_row_needs_a_known_core(tmp_path: Path) -> None:
    cpu = GOOD.replace('hardware = "A100 SXM4 80GB"\ngpus = 1', 'hardware = "a CPU"\ngpus = 0')
    cpu = cpu.replace(
        "precision", 'cpu_cores = 8\ncpu_ghz = 4.0\ncpu_microarchitecture = "Zen 2"\nprecision'
    )
    (row,) = _load(tmp_path, cpu)
    assert compare(row).device_class == "cpu"
    with pytest.raises(CalibrationError, match="no FLOP/cycle figure"):
        _load(tmp_path, cpu.replace('"Zen 2"', '"Transmeta Crusoe"'))
    with pytest.raises(CalibrationError, match="for CPU rows"):
        _load(tmp_path, GOOD.replace("precision", "cpu_cores = 8\nprecision"))


def test_a_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="cannot be read"):
        load_calibration(tmp_path / "missing.toml")
