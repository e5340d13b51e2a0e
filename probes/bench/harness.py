"""The measurement harness every benchmark case shares: bursts timed on the host clock (CPU, and
MPS with a synchronize), the case's time share, the robust size probe, the Measurement built from
the blocks, and the CPU load around a case.

Why sizes are never chosen from one timed call: on a machine where another process holds a core,
one call measures a scheduler time slice rather than compute (a 2-core VM with one busy core
timed one 128² matmul at 0.26 GFLOP/s against 150 for the same call a moment later). The
*shortest* of a few calls is what the hardware does; a descheduling lengthens single calls only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hwadvisor.model.bench import BenchStatus, Confidence, Measurement
from hwadvisor.probes.bench.plan import CaseSpec, failed
from hwadvisor.probes.bench.timing import Timing, measure, rates, summarize

#: Least time given to ``measure`` after setup, so that it still times one block.
MIN_MEASURE_S = 0.02
TARGET_BLOCK_S = 0.03
#: Fraction of the share spent before a narrow spread may end the case.
EARLY_STOP_AFTER = 0.5
#: The size probe: at most this many calls, and at most this much time once two calls ran.
PROBE_CALLS = 5
PROBE_MAX_S = 0.15


class Burst:
    """``block(reps)`` for :func:`measure`: ``reps`` calls of ``fn`` timed with ``perf_counter``.

    Remembers the first call's duration (kernel selection, JIT, first-touch page faults).
    """

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        self.first_call: float | None = None

    def run(self, reps: int) -> None:
        fn = self.fn
        for _ in range(reps):
            fn()

    def __call__(self, reps: int) -> float:
        start = time.perf_counter()
        self.run(reps)
        elapsed = time.perf_counter() - start
        if self.first_call is None:
            self.first_call = elapsed
        return elapsed


class SyncedBurst(Burst):
    """``block(reps)``: ``reps`` calls, then one device synchronize, timed on the host clock
    (MPS has no events; without the synchronize its timings come out ~10× too fast)."""

    def __init__(self, fn: Callable[[], object], sync: Callable[[], None]) -> None:
        super().__init__(fn)
        self.sync = sync

    def run(self, reps: int) -> None:
        super().run(reps)
        self.sync()


def sig(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits."""
    return float(f"{value:.{digits}g}")


def left(case: CaseSpec, start: float) -> float:
    """What is left of the case's share (at least :data:`MIN_MEASURE_S`)."""
    return max(MIN_MEASURE_S, case.seconds - (time.perf_counter() - start))


def best_call(
    block: Callable[[int], float],
    *,
    calls: int = PROBE_CALLS,
    max_s: float = PROBE_MAX_S,
    min_calls: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, int]:
    """The shortest of up to ``calls`` single calls of ``block(1)`` (at least ``min_calls``,
    and no new call once ``max_s`` is spent): (seconds, calls made).

    One descheduling, a first call's setup or a stalled clock lengthens one call, never the
    shortest of several, so a size chosen from it measures compute and not the scheduler.
    """
    start = clock()
    shortest = math.inf
    made = 0
    while made < max(1, calls):
        elapsed = block(1)
        made += 1
        if elapsed > 0:
            shortest = min(shortest, elapsed)
        if made >= min_calls and clock() - start >= max_s:
            break
    return (shortest if math.isfinite(shortest) else 0.0), made


def timed(case: CaseSpec, block: Callable[[int], float], seconds: float, **kw: Any) -> Timing:
    """:func:`measure`, stopping early (spread < 3 %) only once about half the share is spent.

    Best-of-4 blocks is not a stable headline on a shared VM: slow phases last longer than four
    30 ms blocks (2-core Zen 4: fp32 matmul best-of-4 varied 7.6 % over 8 runs, best-of-12
    3.4 %). ``params`` may override the rule: ``min_blocks``, ``stop_spread`` (0 for a reference
    run that uses its whole share), ``max_blocks``. ``kw`` goes to :func:`measure`.
    """
    p = case.params
    min_blocks = max(4, int(EARLY_STOP_AFTER * seconds / TARGET_BLOCK_S))
    return measure(
        block,
        max_seconds=seconds,
        target_block_s=TARGET_BLOCK_S,
        stop_spread=float(p.get("stop_spread", 0.03)),
        min_blocks=int(p.get("min_blocks", min_blocks)),
        max_blocks=int(p.get("max_blocks", 200)),
        **kw,
    )


def settings(torch: Any, **extra: str) -> dict[str, str]:
    """The thread count and CPU kernel level in force, and the case's own settings."""
    found = {"threads": str(torch.get_num_threads())}
    try:
        found["cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):  # torch < 2.1 has no backends.cpu
        found["cpu_capability"] = "unknown"
    return {**found, **extra}


def measurement(
    case: CaseSpec,
    timing: Timing,
    work_per_rep: float,
    *,
    unit: str,
    start: float,
    burst: Burst,
    params: dict[str, int | float | str],
    settings: dict[str, str],
) -> Measurement:
    """The case's Measurement from its blocks; a failed one if no block gave a finite rate."""
    values = [v for v in rates(timing, work_per_rep) if math.isfinite(v) and v > 0]
    if not values:
        return failed(case, "no usable timing: the clock did not advance during the blocks")
    summary = summarize(values)
    first = burst.first_call
    return Measurement(
        case=case.case,
        device=case.device,
        precision=case.precision,
        variant=case.variant,
        status=BenchStatus.OK,
        unit=unit,
        best=sig(summary.best),
        median=sig(summary.median),
        spread=summary.spread,
        blocks=timing.blocks,
        reps_per_block=timing.reps_per_block,
        seconds=round(time.perf_counter() - start, 3),
        first_call_seconds=round(first, 6) if first is not None else None,
        params=params,
        settings=settings,
        confidence=Confidence(summary.confidence),
    )


# ------------------------------------------------------------------------------------------
# CPU load: what other processes take from the CPUs a case runs on


def affinity_cpus() -> list[int] | None:
    """The CPUs this process may run on, or None where the OS does not say."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return None


def machine_busy_seconds(cpus: Sequence[int] | None) -> float | None:
    """Busy CPU-seconds since boot, summed over ``cpus`` (all CPUs when None): everything but
    idle and iowait. Steal time counts as busy: a hypervisor's other guests took it."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        if cpus is None:
            rows = [psutil.cpu_times()]
        else:
            per_cpu = psutil.cpu_times(percpu=True)
            rows = [per_cpu[i] for i in cpus if i < len(per_cpu)]
    except (psutil.Error, OSError):
        return None
    total = 0.0
    for times in rows:
        idle = times.idle + getattr(times, "iowait", 0.0)
        guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
        total += float(sum(times)) - idle - guest  # guest time is inside user time already
    return total


def own_cpu_seconds(children: bool = False) -> float | None:
    """CPU-seconds this process (all its threads) has used, and with ``children`` those of
    the children it has waited for."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    who = [resource.RUSAGE_SELF] + ([resource.RUSAGE_CHILDREN] if children else [])
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, who))


@dataclass
class LoadMonitor:
    """Measures how many CPUs' worth of time other processes take, on the CPUs of ``cpus``,
    between :meth:`start` and :meth:`others`: the CPUs' busy time less this process's own.

    The readers are injectable so tests can play any load.
    """

    cpus: Sequence[int] | None = None
    busy: Callable[[Sequence[int] | None], float | None] = machine_busy_seconds
    own: Callable[[], float | None] = own_cpu_seconds
    clock: Callable[[], float] = time.monotonic
    _t0: float = 0.0
    _busy0: float | None = None
    _own0: float | None = None

    def start(self) -> None:
        self._t0, self._busy0, self._own0 = self.clock(), self.busy(self.cpus), self.own()

    def elapsed(self) -> float:
        return self.clock() - self._t0

    def others(self) -> float | None:
        """Others' CPUs since :meth:`start` (e.g. 1.0 = one core kept busy); None if unknown."""
        wall = self.clock() - self._t0
        busy, own = self.busy(self.cpus), self.own()
        if busy is None or own is None or self._busy0 is None or self._own0 is None or wall <= 0:
            return None
        taken = (busy - self._busy0) - (own - self._own0)
        return round(max(0.0, taken / wall), 3)

    def sample(self, seconds: float, wait: Callable[[float], None] | None = None) -> float | None:
        """Others' CPUs over the next ``seconds``.

        By default this process keeps one core busy meanwhile (its own time is subtracted): a
        virtual CPU that sleeps is slow to come back, and the next case would time that.
        """
        self.start()
        (wait or spin)(seconds)
        return self.others()


def spin(seconds: float) -> None:
    """Busy-wait ``seconds`` on this thread."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def tolerance(usable: int) -> float:
    """Others' CPUs that do not count as taking a core: daemons, the parent, timer noise
    (/proc/stat counts in 10 ms ticks)."""
    return 0.35 + 0.05 * usable


def free_threads(usable: int, cpus: int, others: float | None) -> int:
    """Threads to measure with: the usable CPUs, less the cores other processes hold.

    ``cpus`` is how many CPUs the load was measured on (a container's quota may be far smaller
    than the CPUs it can run on; there others' load matters only past what is left over).
    """
    usable = max(1, usable)
    if others is None:
        return usable
    spare = max(0, cpus - usable)  # CPUs beyond the quota absorb others' load first
    taken = math.ceil(max(0.0, others - spare - tolerance(usable)))
    return max(1, usable - taken)


def contended(others: float | None, cpus: int, threads: int, usable: int) -> bool:
    """Whether other processes ran on cores this case's ``threads`` needed."""
    if others is None:
        return False
    return others > cpus - threads + tolerance(usable)
