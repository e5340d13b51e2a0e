"""``lscpu`` pasted on its own (flat, or util-linux's tree layout), read as collect_env's CPU
section: model, cores, ISA, and on Arm the core design the FLOP/cycle table needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.advise import advise
from hwadvisor.catalog.peaks import cpu_peak_details
from hwadvisor.importers.detect import LSCPU, detect_format, import_text
from hwadvisor.workloads import get_workload

IMPORT = Path(__file__).parent / "fixtures" / "import"


@pytest.mark.parametrize(
    ("name", "model", "cores", "isa"),
    [
        ("lscpu-gh200-grace-tree.txt", "Neoverse-V2", 72, "neon"),
        ("lscpu-neoverse-n2-runner.txt", "Neoverse-N2", 4, "sve2"),
    ],
)
def test_real_lscpu_pastes(name: str, model: str, cores: int, isa: str) -> None:
    text = (IMPORT / name).read_text(encoding="utf-8")
    assert detect_format(text) == LSCPU
    profile = import_text(text, name)
    cpu = profile.cpu
    assert cpu.architecture.value == "aarch64"
    assert cpu.model_name.value == model and cpu.microarchitecture.value == model
    assert cpu.physical_cores.value == cores and cpu.logical_cores.value == cores
    assert cpu.isa_features.value is not None and isa in cpu.isa_features.value
    # The core design gives a FLOP/cycle figure; with a clock (the GH200 paste has one, the
    # VM runner's none) the CPU gets a peak and an estimate.
    details = cpu_peak_details(cpu)
    assert details.flops_per_cycle
    mine = next(
        e
        for e in advise(profile, get_workload("small-cnn")).estimates
        if e.origin == "this-machine"
    )
    if cpu.max_frequency_mhz.value:
        assert details.gflops and mine.seconds is not None
    else:
        assert details.gflops is None and "clock" in details.basis


def test_an_x86_brand_string_is_not_taken_for_a_core_design() -> None:
    text = (IMPORT / "collect_env-cpu-section-xeon-8480.txt").read_text(encoding="utf-8")
    profile = import_text(text, "x")
    assert profile.cpu.microarchitecture.value is None


def test_a_short_estimate_is_never_zero_minutes() -> None:
    from hwadvisor.advise.engine import _dur

    assert _dur(20) == "20 s"
    assert _dur(0.0) == "1 s"
    assert _dur(1800) == "30 min"
