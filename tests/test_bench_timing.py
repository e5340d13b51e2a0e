"""The timing method (warm-up, adaptive blocks, budget split, OOM halving) with fake clocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.probes.bench.timing import (
    LOW_CONFIDENCE_SPREAD,
    Timing,
    halve_on_oom,
    measure,
    rates,
    split_budget,
    spread,
    summarize,
)


class FakeKernel:
    """A clock and a ``block(reps)`` that advances it: each rep takes the next per-rep time."""

    def __init__(self, per_rep: Callable[[int], float]) -> None:
        self.now = 0.0
        self.calls: list[int] = []
        self.per_rep = per_rep

    def clock(self) -> float:
        return self.now

    def block(self, reps: int) -> float:
        elapsed = reps * self.per_rep(len(self.calls))
        self.calls.append(reps)
        self.now += elapsed
        return elapsed


def constant(seconds: float) -> Callable[[int], float]:
    return lambda _call: seconds


def alternating(low: float, high: float) -> Callable[[int], float]:
    """A noisy kernel: blocks alternate between two speeds, the spread never narrows."""
    return lambda call: low if call % 2 else high


def run(kernel: FakeKernel, **kwargs: Any) -> Timing:
    return measure(kernel.block, clock=kernel.clock, **kwargs)


def test_narrow_spread_stops_after_the_minimum_blocks() -> None:
    kernel = FakeKernel(constant(0.001))
    timing = run(kernel, max_seconds=10.0)
    assert timing.blocks == 4
    assert timing.stopped_because == "spread below 3%"
    assert timing.per_rep_seconds == [pytest.approx(0.001)] * 4
    assert timing.total_seconds < 0.5  # far less than the share


def test_wide_spread_runs_until_the_time_share_is_spent() -> None:
    kernel = FakeKernel(alternating(0.001, 0.002))
    timing = run(kernel, max_seconds=1.0)
    assert timing.stopped_because == "time share spent"
    assert timing.blocks > 4
    # It stops at the first block that ends past the share: at most one block over.
    assert 1.0 <= timing.total_seconds <= 1.0 + 0.03 * 2 + 0.002


def test_one_block_is_measured_even_when_warm_up_spends_the_share() -> None:
    kernel = FakeKernel(constant(2.0))  # one call is longer than the whole share
    timing = run(kernel, max_seconds=0.5)
    assert timing.warmup_calls == 1
    assert timing.blocks == 1
    assert timing.reps_per_block == 1
    assert timing.per_rep_seconds == [2.0]


def test_warm_up_is_two_calls_and_50_ms_at_least() -> None:
    slow = run(FakeKernel(constant(0.04)), max_seconds=10.0)
    assert slow.warmup_calls == 2  # 80 ms: two calls already pass 50 ms
    # 1/1024 s per call (exact in binary): 52 calls are the first to pass 50 ms.
    fast = run(FakeKernel(constant(1 / 1024)), max_seconds=10.0)
    assert fast.warmup_calls == 52
    assert fast.warmup_seconds == pytest.approx(52 / 1024)


def test_reps_per_block_are_sized_from_the_last_warm_up_call() -> None:
    # The first call is slow (JIT, page faults); the block size follows the warm one.
    kernel = FakeKernel(lambda call: 0.02 if call == 0 else 1 / 1024)
    timing = run(kernel, max_seconds=10.0, target_block_s=30 / 1024)
    assert timing.reps_per_block == 30
    assert kernel.calls[timing.warmup_calls :] == [30] * timing.blocks


def test_a_clock_that_does_not_move_does_not_divide_by_zero() -> None:
    kernel = FakeKernel(constant(0.0))
    timing = measure(kernel.block, max_seconds=1.0, warmup_s=0.0, clock=lambda: 0.0)
    assert timing.reps_per_block in (30_000, 30_001)  # 30 ms at the assumed 1 µs
    assert timing.blocks == 4  # zero spread; the share is never spent on this clock
    assert rates(timing, 1.0) == []  # zero-time blocks give no rate


def test_block_limit_ends_a_noisy_run() -> None:
    kernel = FakeKernel(alternating(0.001, 0.002))
    timing = run(kernel, max_seconds=1e9, max_blocks=7)
    assert timing.blocks == 7
    assert timing.stopped_because == "block limit"


def test_rates_are_work_over_seconds_per_rep() -> None:
    timing = Timing(per_rep_seconds=[0.5, 0.25, 0.0])
    assert rates(timing, 10.0) == [20.0, 40.0]


def test_spread_is_iqr_over_median() -> None:
    assert spread([]) == 0.0
    assert spread([5.0]) == 0.0
    assert spread([0.0, 0.0]) == 0.0
    # quartiles (inclusive) of 1..5 are 2 and 4; median 3
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2 / 3)


def test_summary_best_and_confidence() -> None:
    rates_ = summarize([100.0, 101.0, 99.0, 100.5])
    assert (rates_.best, rates_.confidence) == (101.0, "high")
    latency = summarize([3.0, 2.0, 2.5], higher_is_better=False)
    assert latency.best == 2.0
    assert summarize([100.0, 200.0, 100.0, 200.0]).confidence == "low"  # spread > 10 %
    assert summarize([100.0, 100.0]).confidence == "low"  # too few blocks
    with pytest.raises(ValueError):
        summarize([])


def test_confidence_threshold_is_ten_percent() -> None:
    assert LOW_CONFIDENCE_SPREAD == 0.10
    narrow = [100.0, 104.0, 96.0, 100.0, 100.0]  # IQR 0 → high
    assert summarize(narrow).confidence == "high"


@given(st.lists(st.floats(min_value=1e-3, max_value=1e6), min_size=1, max_size=50))
def test_summary_properties(values: list[float]) -> None:
    s = summarize(values)
    assert s.best >= s.median > 0
    assert s.spread >= 0
    low = summarize(values, higher_is_better=False)
    assert low.best <= low.median


def test_budget_split_is_proportional_with_a_floor() -> None:
    shares = split_budget(10.0, {"a": 3.0, "b": 1.0, "c": 1.0})
    assert shares == pytest.approx({"a": 6.0, "b": 2.0, "c": 2.0})
    tiny = split_budget(1.0, {"big": 99.0, "small": 1.0}, floor_s=0.05)
    assert tiny["small"] == 0.05
    assert tiny["big"] == pytest.approx(0.99)
    assert split_budget(5.0, {"on": 1.0, "off": 0.0, "neg": -1.0}) == {"on": 5.0}
    assert split_budget(5.0, {}) == {}


def _oom_until(fits: int, error: BaseException) -> tuple[Callable[[int], str], list[int]]:
    tried: list[int] = []

    def run_at(size: int) -> str:
        tried.append(size)
        if size > fits:
            raise error
        return f"ran at {size}"

    return run_at, tried


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc)


def test_out_of_memory_halves_the_size_and_records_it() -> None:
    cleanups: list[int] = []
    run_at, tried = _oom_until(1000, RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"))
    result, size, halvings = halve_on_oom(
        run_at, 8192, min_size=256, is_oom=_is_oom, after_oom=lambda: cleanups.append(1)
    )
    assert (result, size, halvings) == ("ran at 512", 512, 4)
    assert tried == [8192, 4096, 2048, 1024, 512]
    assert len(cleanups) == 4  # the cache is emptied after each failure


def test_other_errors_propagate_at_once() -> None:
    run_at, tried = _oom_until(0, RuntimeError("cuBLAS error: not supported"))
    with pytest.raises(RuntimeError, match="not supported"):
        halve_on_oom(run_at, 8192, min_size=256, is_oom=_is_oom)
    assert tried == [8192]


def test_halving_stops_at_the_minimum_size() -> None:
    run_at, tried = _oom_until(10, RuntimeError("CUDA out of memory"))
    with pytest.raises(RuntimeError, match="out of memory"):
        halve_on_oom(run_at, 1024, min_size=256, is_oom=_is_oom)
    assert tried == [1024, 512, 256]


def test_memory_error_counts_when_the_predicate_says_so() -> None:
    run_at, _ = _oom_until(100, MemoryError("can't allocate"))
    _, size, halvings = halve_on_oom(run_at, 400, min_size=1, is_oom=lambda e: True)
    assert (size, halvings) == (100, 2)


@pytest.mark.parametrize("at_least", [1, 2, 3, 5])
def test_at_least_that_many_blocks_are_measured_whatever_the_time_left(at_least: int) -> None:
    """A second matmul size's figure must rest on three blocks (a real H200's rested on one,
    low confidence, when its warm-up took the time kept for it)."""
    kernel = FakeKernel(alternating(0.5, 1.0))  # every call is past the share
    timing = run(kernel, max_seconds=0.1, warmup_s=0.0, at_least=at_least)
    assert timing.blocks == at_least
