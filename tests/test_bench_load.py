"""Benchmarks on a busy machine: sizes that one slow call cannot shrink, threads from the free
cores, a second run after a passing load, and figures flagged when they are not the machine's.

The CPU load is played by a fake monitor (``tests.helpers.load``); calls that stall are played
by fake blocks and a stalling torch proxy. No test depends on the real load of the test machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from hwadvisor.model.bench import BenchStatus, CpuLoad, Disturbance, Measurement
from hwadvisor.probes.bench import cpu, harness
from hwadvisor.probes.bench.harness import (
    LoadMonitor,
    best_call,
    contended,
    free_threads,
)
from hwadvisor.probes.bench.plan import BenchContext, BenchPlan, CaseSpec, run_plan
from hwadvisor.probes.bench.timing import summarize
from tests.helpers import load

# --------------------------------------------------------------------------------------------
# The size probe: the shortest of a few calls


def test_best_call_ignores_a_first_call_that_stalls() -> None:
    durations = iter([0.5, 0.010, 0.012, 0.011])
    now = [0.0]

    def block(reps: int) -> float:
        d = next(durations)
        now[0] += d
        return d

    shortest, calls = best_call(block, calls=4, max_s=10.0, clock=lambda: now[0])
    assert (shortest, calls) == (0.010, 4)


def test_best_call_stops_once_its_time_is_spent_but_makes_two_calls() -> None:
    now = [0.0]

    def block(reps: int) -> float:
        now[0] += 1.0
        return 1.0

    assert best_call(block, calls=5, max_s=0.1, clock=lambda: now[0]) == (1.0, 2)


def test_best_call_with_a_clock_that_does_not_advance_reports_zero_not_infinity() -> None:
    assert best_call(lambda reps: 0.0, calls=3, max_s=0.0, clock=lambda: 0.0) == (0.0, 2)


def test_a_native_matmul_is_never_shrunk_below_the_compute_floor() -> None:
    # A probe that measured the scheduler (0.0001 GFLOP/s) would have picked n = 32.
    assert cpu.fit_matmul_n(1024, 1e-4, 1.0, floor=cpu.COMPUTE_FLOOR_N) == cpu.COMPUTE_FLOOR_N
    assert cpu.fit_matmul_n(1024, 1e-4, 1.0) == cpu.MIN_MATMUL_N
    assert cpu.fit_matmul_n(128, 1e-4, 1.0, floor=cpu.COMPUTE_FLOOR_N) == 128  # never grows


torch = pytest.importorskip("torch")


class StallingTorch:
    """torch, but the first ``stalls`` calls of ``mm`` (and of conv2d) each lose ``seconds`` to
    a descheduling, as on a machine where another process holds the core."""

    def __init__(self, stalls: int, seconds: float = 0.2) -> None:
        self.stalls, self.seconds = stalls, seconds
        self.nn = _StallingNN(self)

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    def stall(self) -> None:
        if self.stalls > 0:
            self.stalls -= 1
            time.sleep(self.seconds)

    def mm(self, *args: Any, **kwargs: Any) -> Any:
        self.stall()
        return torch.mm(*args, **kwargs)


class _StallingNN:
    def __init__(self, owner: StallingTorch) -> None:
        self.owner = owner
        self.functional = self

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.nn, name)

    def conv2d(self, *args: Any, **kwargs: Any) -> Any:
        self.owner.stall()
        return torch.nn.functional.conv2d(*args, **kwargs)


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    return load.install(monkeypatch, load.quiet(2))


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _ctx(fake: Any) -> BenchContext:
    state = cpu.start_load_watch(2, 0.0, load.quiet(2))
    state.wait = lambda _s: None
    return BenchContext(torch=fake, threads=2, seed=0, usable=2, load=state)


def _case(kind: str, case: str, seconds: float, **params: Any) -> CaseSpec:
    return CaseSpec(
        id=f"cpu.{case}",
        title=case,
        kind=kind,
        case=case,
        precision="fp32",
        seconds=seconds,
        params=params,
    )


def _measurement(results: Iterator[Any]) -> Measurement:
    return next(r for r in results if isinstance(r, Measurement))


def test_a_stalled_first_probe_call_does_not_shrink_the_matmul() -> None:
    fake = StallingTorch(stalls=1, seconds=0.3)
    m = _measurement(cpu.CASES["cpu_matmul"](_case("cpu_matmul", "matmul", 0.6, n=256), _ctx(fake)))
    assert m.status == BenchStatus.OK
    assert m.params["n"] == 256
    assert m.message is None


def test_a_stalled_first_conv_call_does_not_shrink_the_batch() -> None:
    fake = StallingTorch(stalls=1, seconds=0.3)
    m = _measurement(
        cpu.CASES["cpu_conv2d"](_case("cpu_conv2d", "conv2d", 0.6, batch=2), _ctx(fake))
    )
    assert m.status == BenchStatus.OK
    assert m.params["batch"] == 2


def test_every_call_slow_still_shrinks_the_batch() -> None:
    # A CPU that is slow on every call (not one descheduling) gets a smaller batch: honest.
    fake = StallingTorch(stalls=100, seconds=0.05)
    m = _measurement(
        cpu.CASES["cpu_conv2d"](_case("cpu_conv2d", "conv2d", 0.3, batch=8), _ctx(fake))
    )
    assert m.status == BenchStatus.OK
    assert int(m.params["batch"]) < 8
    assert m.message is not None and "at best" in m.message


# --------------------------------------------------------------------------------------------
# Threads from the free cores


@pytest.mark.parametrize(
    ("usable", "cpus", "others", "threads"),
    [
        (2, 2, 0.0, 2),  # idle
        (2, 2, 0.2, 2),  # daemons and timer noise take no core
        (2, 2, 1.0, 1),  # one busy loop
        (2, 2, 0.8, 1),  # 40 % of two CPUs from a multi-threaded process
        (2, 2, 2.0, 1),  # everything taken: still one thread
        (2, 64, 30.0, 2),  # a 2-CPU quota on a big host: others' load lands on spare CPUs
        (64, 64, 2.0, 64),  # a big machine with a small background job keeps every thread
        (64, 64, 10.0, 57),
        (4, 4, None, 4),  # load unknown: the usable CPUs
    ],
)
def test_free_threads(usable: int, cpus: int, others: float | None, threads: int) -> None:
    assert free_threads(usable, cpus, others) == threads


def test_contended_means_others_ran_on_the_cores_the_case_needed() -> None:
    assert contended(1.0, 2, 2, 2)  # a busy loop beside two threads
    assert not contended(1.0, 2, 1, 2)  # one thread on the free core
    assert not contended(0.1, 2, 2, 2)
    assert not contended(None, 2, 2, 2)


def test_load_monitor_subtracts_its_own_time() -> None:
    readings = {"busy": [10.0, 13.0], "own": [4.0, 5.0], "clock": [0.0, 2.0]}

    def take(key: str) -> float:
        return readings[key].pop(0)

    monitor = LoadMonitor(
        cpus=[0, 1],
        busy=lambda _cpus: take("busy"),
        own=lambda: take("own"),
        clock=lambda: take("clock"),
    )
    monitor.start()
    # 3 busy CPU-seconds in 2 s, 1 of them ours: others kept one CPU busy.
    assert monitor.others() == 1.0


def test_load_monitor_without_cpu_times_reports_unknown() -> None:
    monitor = LoadMonitor(busy=lambda _cpus: None, own=lambda: 1.0)
    monitor.start()
    assert monitor.others() is None


# --------------------------------------------------------------------------------------------
# Whole plans under played loads


def _run(
    monkeypatch: pytest.MonkeyPatch, values: list[float], *cases: CaseSpec, retry: float = 0.0
) -> tuple[list[Measurement], list[CpuLoad], Any]:
    played = load.PlayedLoad(values, cpus=2)
    states = load.install(monkeypatch, played.monitor())
    plan = BenchPlan(threads=2, seed=0, cases=list(cases), retry_budget_s=retry)
    events = list(run_plan(plan.model_dump(mode="json")))
    results = [e for e in events if e["event"] == "result"]
    ms = [Measurement.model_validate(e["data"]) for e in results if e["kind"] == "measurement"]
    loads = [CpuLoad.model_validate(e["data"]) for e in results if e["kind"] == "cpu_load"]
    return ms, loads, states[0]


def _matmul(seconds: float = 0.15, case_id: str = "cpu.matmul.fp32") -> CaseSpec:
    return CaseSpec(
        id=case_id,
        title="matmul",
        kind="cpu_matmul",
        case="matmul",
        precision="fp32",
        seconds=seconds,
        params={"n": 128},
    )


def test_idle_machine_uses_every_thread_and_flags_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    (m,), loads, _ = _run(monkeypatch, [0.0], _matmul())
    assert m.threads == 2 and m.settings["threads"] == "2"
    assert m.disturbances == [] and m.disturbance_note is None
    assert loads[-1].threads_chosen == 2 and loads[-1].note is None


def test_a_busy_core_means_one_thread_and_the_figure_is_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A busy loop: the first look and every look after find one CPU taken.
    (m,), loads, state = _run(monkeypatch, [1.0], _matmul())
    assert m.threads == 1 and m.settings["threads"] == "1"
    assert m.other_cpus == 1.0
    assert m.disturbances == [Disturbance.FEWER_THREADS]
    assert m.disturbance_note is not None and "1 of 2 threads" in m.disturbance_note
    assert not m.trusted
    assert loads[-1].threads_chosen == 1
    assert loads[-1].other_cpus_before == 1.0
    assert loads[-1].note is not None and "1.0 of 2 CPUs" in loads[-1].note
    # It looked again (a passing load would have freed the core) before settling on one thread.
    assert state.waited > 0


def test_a_passing_load_before_the_phase_is_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # The import window saw a busy core; the next look found the machine idle again.
    (m,), loads, _ = _run(monkeypatch, [1.0, 0.0], _matmul())
    assert m.threads == 2
    assert m.disturbances == []
    assert loads[-1].other_cpus_before == 0.0
    assert loads[-1].waited_seconds > 0


def test_a_load_that_comes_up_during_a_case_means_a_second_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # First look idle; during the case another process takes 1.2 CPUs; the re-check finds the
    # load gone and the second run is clean.
    (m,), loads, _ = _run(monkeypatch, [0.0, 1.2, 0.0, 0.0], _matmul(), retry=1.0)
    assert m.attempts == 2
    assert m.disturbances == []
    assert m.threads == 2
    assert loads[-1].retried == ["cpu.matmul.fp32"]


def test_without_retry_time_a_contended_case_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    (m,), loads, _ = _run(monkeypatch, [0.0, 1.2], _matmul(), retry=0.0)
    assert m.attempts == 1
    assert Disturbance.CPU_CONTENDED in m.disturbances
    assert m.disturbance_note is not None and "the figure is low" in m.disturbance_note
    assert not m.trusted
    assert loads[-1].retried == []


def test_a_load_that_stays_means_fewer_threads_on_the_second_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (m,), _, _ = _run(monkeypatch, [0.0, 1.2, 1.0, 1.0], _matmul(), retry=1.0)
    assert m.attempts == 2
    assert m.threads == 1
    assert m.disturbances == [Disturbance.FEWER_THREADS]


def test_retries_stop_when_their_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [_matmul(0.15, "cpu.a"), _matmul(0.15, "cpu.b")]
    # Every case is contended on its first run; budget for one second run only.
    ms, loads, _ = _run(monkeypatch, [0.0, 1.5, 0.0, 0.0, 1.5, 0.0], *cases, retry=0.35)
    assert [m.attempts for m in ms] == [2, 1]
    assert loads[-1].retried == ["cpu.a"]


def test_harness_is_shared_by_cpu_and_mps_cases() -> None:
    from hwadvisor.probes.bench import mps

    assert mps.SyncedBurst is harness.SyncedBurst
    assert issubclass(harness.SyncedBurst, harness.Burst)
    assert cpu.Burst is harness.Burst


# --------------------------------------------------------------------------------------------
# Confidence of a best-of-blocks headline


def test_confidence_high_when_several_blocks_reproduce_the_best() -> None:
    # A noisy VM: slow phases widen the spread, but four blocks came within 5 % of the best.
    values = [100.0, 99.0, 98.0, 97.0, 60.0, 62.0, 61.0, 63.0, 64.0]
    summary = summarize(values)
    assert summary.spread > 0.10
    assert summary.confidence == "high"


def test_confidence_low_when_the_best_is_a_lone_outlier() -> None:
    values = [140.0, 60.0, 62.0, 61.0, 63.0, 64.0, 80.0, 90.0]
    assert summarize(values).confidence == "low"


# --------------------------------------------------------------------------------------------
# What the parent makes of flagged figures: peaks for the cores used, one sentence for the user


def _judged(disturbance: Disturbance) -> Any:
    from pathlib import Path

    from hwadvisor.benchrun import judge
    from hwadvisor.model.bench import Benchmarks, Confidence
    from hwadvisor.model.facts import Fact
    from hwadvisor.model.load import load_profile

    profile = load_profile(Path(__file__).parent / "fixtures" / "reports" / "cpu-only.json")
    profile.cpu.usable_cpus = Fact(value=2, source="derived")
    m = Measurement(
        case="matmul",
        device="cpu",
        precision="fp32",
        unit="GFLOP/s",
        best=80.0,
        threads=1,
        disturbances=[disturbance],
        confidence=Confidence.HIGH,
    )
    idle = m.model_copy(update={"threads": 2, "disturbances": [], "best": 160.0})
    bench = Benchmarks(measurements=[m], load=CpuLoad(cpus=2, usable_cpus=2, other_cpus_before=1.0))
    judge(bench, profile, env={})
    reference = Benchmarks(measurements=[idle])
    judge(reference, profile, env={})
    return bench, reference


def test_a_figure_from_the_free_cores_is_compared_with_their_peak() -> None:
    bench, reference = _judged(Disturbance.FEWER_THREADS)
    m, idle = bench.measurements[0], reference.measurements[0]
    assert m.peak is not None and idle.peak is not None
    assert abs(m.peak - idle.peak / 2) <= 0.1
    assert m.peak_basis is not None and "1 of 2 CPUs it ran on" in m.peak_basis
    assert bench.message is not None
    assert "1 of 2 threads on the free cores" in bench.message
    assert "scales them to 2" in bench.message
    assert "check with top)" in bench.message  # no GPU figure: no nvidia-smi hint
    assert reference.message is None


def test_contended_figures_are_said_to_be_unused() -> None:
    bench, _ = _judged(Disturbance.CPU_CONTENDED)
    assert bench.message is not None
    assert "does not use the disturbed ones" in bench.message


def test_cpu_times_that_raise_or_lack_a_cpu_read_as_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psutil

    from hwadvisor.probes.bench.harness import machine_busy_seconds

    def broken(percpu: bool = False) -> Any:
        raise psutil.AccessDenied()

    monkeypatch.setattr(psutil, "cpu_times", broken)
    assert machine_busy_seconds(None) is None
    assert machine_busy_seconds([0, 1]) is None
    monitor = LoadMonitor(cpus=[0, 1])
    monitor.start()
    assert monitor.others() is None


def test_the_phase_load_is_a_share_of_all_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    from hwadvisor import benchrun

    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 4)
    assert benchrun._share(1.0) == 0.25
    assert benchrun._share(9.0) == 1.0
    assert benchrun._share(None) is None
