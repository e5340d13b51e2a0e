"""Jobs and machines as practitioners describe them, for tests/test_practice.py and
benchmarks/practice_cases.py: a workload typed on the command line, a desktop CPU as a scan
without benchmarks sees it."""

from __future__ import annotations

from pathlib import Path

from hwadvisor.methods import TrainingOptions, with_training
from hwadvisor.model.facts import Fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile
from hwadvisor.workloads import Workload, custom_workload

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def cpu_only() -> Profile:
    """The recorded scan of a 2-CPU VM without a GPU."""
    return load_profile(REPORTS / "cpu-only.json")


def typed(params: float, tokens: float, **options: object) -> Workload:
    """``--params P --tokens T`` with training options (``method="qlora"`` …), batch 16."""
    w = custom_workload(parameters=int(params), tokens=int(tokens), batch_size=16)
    return with_training(w, TrainingOptions(**options))  # type: ignore[arg-type]


def desktop_6_core() -> Profile:
    """A Ryzen 5 5600X desktop as a scan without benchmarks sees it: 6 Zen 3 cores with SMT,
    AVX2 and FMA, 3.7 GHz base, 4.6 GHz boost, 32 GiB."""
    profile = cpu_only()
    cpu = profile.cpu
    cpu.model_name = Fact[str](value="AMD Ryzen 5 5600X 6-Core Processor", source="procfs")
    cpu.physical_cores = Fact[int](value=6, source="procfs")
    cpu.logical_cores = Fact[int](value=12, source="procfs")
    cpu.usable_cpus = Fact[int](value=12, source="procfs")
    cpu.base_frequency_mhz = Fact[float](value=3700.0, source="procfs")
    cpu.max_frequency_mhz = Fact[float](value=4650.0, source="procfs")
    cpu.microarchitecture = Fact[str](value="Zen 3", source="procfs")
    cpu.architecture = Fact[str](value="x86_64", source="procfs")
    cpu.isa_features = Fact[list[str]](value=["avx", "avx2", "fma", "sse4_2"], source="procfs")
    cpu.sockets = Fact[int](value=1, source="procfs")
    profile.memory.total_bytes = Fact[int](value=32 * 2**30, source="procfs")
    profile.memory.cgroup_limit_bytes = Fact[int](value=None, source=None, reason="none")
    profile.benchmarks = None
    return profile
