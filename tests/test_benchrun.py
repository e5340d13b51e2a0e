"""Planning and running the benchmark phase, with a fake child that can hang or crash."""

from __future__ import annotations

import time

from hwadvisor.benchrun import CaseEvent, plan_cases, run_plan
from hwadvisor.model.bench import BenchStatus, CrossoverPoint
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import Profile, ToolInfo, TorchDevice, TorchInfo
from hwadvisor.probes.bench.plan import BenchPlan, CaseSpec

T = "tests.helpers.child_targets:fake_bench"


def _profile(gpus: int = 0, isa: list[str] | None = None) -> Profile:
    p = Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z")
    p.cpu.usable_cpus = fact(2, Source.DERIVED)
    p.cpu.isa_features = fact(isa or ["avx2", "fma"], Source.PROCFS)
    p.frameworks.torch = TorchInfo(
        installed=True,
        cuda_available=fact(gpus > 0, Source.TORCH),
        device_count=fact(gpus, Source.TORCH),
        devices=[TorchDevice(index=i) for i in range(gpus)],
    )
    return p


def test_cpu_only_plan_fits_the_default_budget() -> None:
    plan = plan_cases(_profile())
    assert plan.threads == 2
    assert {c.device for c in plan.cases} == {"cpu"}
    kinds = {(c.case, c.precision) for c in plan.cases}
    assert {
        ("matmul", "fp32"),
        ("matmul", "bf16"),
        ("conv2d", "fp32"),
        ("triad", None),
        ("train_step", "fp32"),
    } <= kinds
    # About 5.5 s of shares: with start-up and torch's import the phase stays under 8 s.
    assert 5.0 <= sum(c.seconds for c in plan.cases) <= 5.6
    emulated = [c for c in plan.cases if c.params.get("native") is False]
    assert emulated and all(c.seconds >= 0.25 for c in emulated)
    assert len({c.id for c in plan.cases}) == len(plan.cases)
    bf16 = next(c for c in plan.cases if c.precision == "bf16")
    assert bf16.params["native"] is False


def test_native_bf16_from_isa() -> None:
    plan = plan_cases(_profile(isa=["avx512f", "avx512_bf16"]))
    bf16 = next(c for c in plan.cases if c.precision == "bf16")
    assert bf16.params["native"] is True


def test_gpu_plan_adds_cases_per_gpu_sweep_and_multi_gpu() -> None:
    plan = plan_cases(_profile(gpus=2))
    devices = {c.device for c in plan.cases}
    assert devices == {"cpu", "cuda:0", "cuda:1"}
    assert any(c.kind == "cpu_sweep" for c in plan.cases)
    assert {c.kind for c in plan.cases} >= {"gpu_matmul", "gpu_transfer", "gpu_p2p", "all_reduce"}
    bf16 = [c for c in plan.cases if c.kind == "gpu_matmul" and c.precision == "bf16"]
    assert len(bf16) == 2


def test_explicit_budget_scales_every_share() -> None:
    default = plan_cases(_profile())
    half = plan_cases(_profile(), budget_s=sum(c.seconds for c in default.cases) / 2)
    for a, b in zip(default.cases, half.cases, strict=True):
        assert abs(b.seconds - a.seconds / 2) < 0.01


def _case(i: int, **params: object) -> CaseSpec:
    return CaseSpec(
        id=f"cpu.c{i}",
        title=f"case {i}",
        kind="cpu_matmul",
        case="matmul",
        precision="fp32",
        seconds=0.2,
        params={"value": float(i + 1), **params},
    )


def test_results_and_progress_come_back_per_case() -> None:
    events: list[CaseEvent] = []
    plan = BenchPlan(threads=1, cases=[_case(0), _case(1)])
    bench = run_plan(plan, events.append, target=T, startup_limit_s=30)
    assert [m.best for m in bench.measurements] == [1.0, 2.0]
    assert [(e.id, e.status) for e in events] == [
        ("cpu.c0", None),
        ("cpu.c0", BenchStatus.OK),
        ("cpu.c1", None),
        ("cpu.c1", BenchStatus.OK),
    ]


def test_hung_case_is_stopped_and_the_rest_still_run() -> None:
    plan = BenchPlan(threads=1, cases=[_case(0), _case(1, hang=True), _case(2)])
    start = time.monotonic()
    bench = run_plan(plan, target=T, startup_limit_s=30)
    # The hung case's limit is max(4 × share, share + 10 s) = 10.2 s; then a new child.
    assert time.monotonic() - start < 10.2 + 2.0 + 6.0
    statuses = [(m.best, m.status) for m in bench.measurements]
    assert statuses[0] == (1.0, BenchStatus.OK)
    assert statuses[1][1] == BenchStatus.TIMEOUT
    assert statuses[2] == (3.0, BenchStatus.OK)
    assert "hung" in (bench.measurements[1].message or "")


def test_crashed_child_marks_the_cases_left_failed() -> None:
    plan = BenchPlan(threads=1, cases=[_case(0), _case(1, crash=True), _case(2)])
    bench = run_plan(plan, target=T, startup_limit_s=30)
    assert [m.status for m in bench.measurements] == [
        BenchStatus.OK,
        BenchStatus.FAILED,
        BenchStatus.FAILED,
    ]
    assert "exit status 3" in (bench.measurements[1].message or "")


def test_crossover_merge_and_training_speedup() -> None:
    from hwadvisor.benchrun import _merge_crossovers, _speedups
    from hwadvisor.model.bench import Crossover, Measurement

    cpu = Crossover(
        device="cpu",
        points=[
            CrossoverPoint(n=n, cpu_gflops=g) for n, g in ((64, 20.0), (256, 90.0), (1024, 150.0))
        ],
    )
    gpu = Crossover(
        device="cuda:0",
        points=[
            CrossoverPoint(n=64, gpu_gflops=5.0, gpu_with_transfer_gflops=1.0),
            CrossoverPoint(n=256, gpu_gflops=400.0, gpu_with_transfer_gflops=50.0),
            CrossoverPoint(n=1024, gpu_gflops=9000.0, gpu_with_transfer_gflops=800.0),
        ],
    )
    (merged,) = _merge_crossovers([cpu, gpu])
    assert [p.cpu_gflops for p in merged.points] == [20.0, 90.0, 150.0]
    assert merged.cpu_faster_below_n == 256
    assert merged.cpu_faster_below_n_with_transfer == 1024

    steps = [
        Measurement(case="train_step", device="cpu", unit="samples/s", best=10.0),
        Measurement(case="train_step", device="cuda:0", unit="samples/s", best=250.0),
    ]
    (speedup,) = _speedups(steps)
    assert speedup.speedup == 25.0
