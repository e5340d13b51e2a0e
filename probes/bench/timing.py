"""How to time a kernel so that the figure converges fast and is honest (pure logic, no torch).

The caller supplies ``block(reps) -> seconds``: run the kernel ``reps`` times and return the elapsed
time of the burst (CPU: ``perf_counter`` around it; GPU: CUDA events around the burst with one
synchronize at the end). :func:`measure` warms up, sizes the blocks so timer overhead is
negligible, and repeats blocks until the spread is narrow or the time share is spent.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

#: Spread (IQR / median) above which a figure is flagged as low confidence.
LOW_CONFIDENCE_SPREAD = 0.10
#: Blocks within this fraction of the best one count as reproducing it.
BEST_CLUSTER = 0.05


@dataclass
class Timing:
    """Per-repetition seconds of each measured block, and how they were obtained."""

    per_rep_seconds: list[float] = field(default_factory=list)
    reps_per_block: int = 1
    warmup_calls: int = 0
    warmup_seconds: float = 0.0
    total_seconds: float = 0.0
    stopped_because: str = ""

    @property
    def blocks(self) -> int:
        return len(self.per_rep_seconds)


@dataclass(frozen=True)
class Summary:
    """Best and median of a rate (or a latency), the spread, and the confidence flag."""

    best: float
    median: float
    spread: float
    confidence: str


def spread(values: list[float]) -> float:
    """Interquartile range over median; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    med = statistics.median(values)
    if med == 0:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / abs(med)


def measure(
    block: Callable[[int], float],
    *,
    max_seconds: float,
    target_block_s: float = 0.03,
    warmup_s: float = 0.05,
    min_warmup_calls: int = 2,
    min_blocks: int = 4,
    max_blocks: int = 200,
    stop_spread: float = 0.03,
    at_least: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Warm up, then time blocks of repetitions until the spread is below ``stop_spread`` (after
    at least ``min_blocks``) or ``max_seconds`` (warm-up included) is spent.

    At least ``at_least`` blocks (one by default) are always measured, even when the warm-up
    used the whole share.
    """
    start = clock()
    timing = Timing()
    last = 0.0
    while timing.warmup_calls < min_warmup_calls or clock() - start < warmup_s:
        last = block(1)
        timing.warmup_calls += 1
        if clock() - start > max_seconds:
            break
    timing.warmup_seconds = clock() - start
    per_rep = last if last > 0 else 1e-6
    timing.reps_per_block = max(1, math.ceil(target_block_s / per_rep))
    reason = "time share spent"
    while True:
        elapsed = block(timing.reps_per_block)
        timing.per_rep_seconds.append(elapsed / timing.reps_per_block)
        n = timing.blocks
        if n >= min_blocks and spread(timing.per_rep_seconds) < stop_spread:
            reason = f"spread below {stop_spread:.0%}"
            break
        if n >= max_blocks:
            reason = "block limit"
            break
        if clock() - start >= max_seconds and timing.blocks >= at_least:
            break
    timing.total_seconds = clock() - start
    timing.stopped_because = reason
    return timing


def summarize(values: list[float], *, higher_is_better: bool = True) -> Summary:
    """Best and median of ``values`` (rates: highest is best; latencies: lowest is best)."""
    if not values:
        raise ValueError("no values to summarize")
    best = max(values) if higher_is_better else min(values)
    s = spread(values)
    # The headline is the best block: it stands when the blocks agree, or when several blocks
    # came close to it (a noisy VM's slow phases widen the spread, not the best).
    near = sum(1 for v in values if abs(v - best) <= BEST_CLUSTER * abs(best))
    steady = s <= LOW_CONFIDENCE_SPREAD or near >= 3
    confidence = "high" if steady and len(values) >= 3 else "low"
    return Summary(
        best=best, median=statistics.median(values), spread=round(s, 4), confidence=confidence
    )


def rates(timing: Timing, work_per_rep: float) -> list[float]:
    """Throughput of each block: ``work_per_rep`` units per repetition / seconds per repetition."""
    return [work_per_rep / t for t in timing.per_rep_seconds if t > 0]


def split_budget(
    total_s: float, weights: dict[str, float], floor_s: float = 0.05
) -> dict[str, float]:
    """Share ``total_s`` among cases in proportion to their weights, each at least ``floor_s``."""
    positive = {k: w for k, w in weights.items() if w > 0}
    if not positive:
        return {}
    scale = sum(positive.values())
    return {k: max(floor_s, total_s * w / scale) for k, w in positive.items()}


def halve_on_oom(
    run: Callable[[int], T],
    size: int,
    *,
    min_size: int,
    is_oom: Callable[[BaseException], bool],
    after_oom: Callable[[], None] = lambda: None,
) -> tuple[T, int, int]:
    """``run(size)``; on out-of-memory halve the size and retry, down to ``min_size``.

    Returns (result, size used, number of halvings). The last out-of-memory error propagates.
    """
    halvings = 0
    while True:
        try:
            return run(size), size, halvings
        except (RuntimeError, MemoryError) as exc:
            if not is_oom(exc) or size // 2 < min_size:
                raise
            after_oom()
            size //= 2
            halvings += 1
