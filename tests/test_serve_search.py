"""The crossing searches of inference sizing (``advise/serve/search.py``): the longest context
that fits and the most users at a target speed are what a plain scan finds, for any function
that never rises, and a near-linear one takes a few looks."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from hwadvisor.advise.serve.memory import DeviceMemory, _fits, max_context
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.search import last_at_or_above_zero
from hwadvisor.advise.serve.speed import MAX_USERS, _largest_users
from hwadvisor.catalog.llms import find_llm

GiB = 2**30


def _scan(f: object, lo: int, hi: int) -> int:
    return max(n for n in range(lo, hi) if f(n) >= 0)  # type: ignore[operator]


# A falling function: a sum of falling steps and falling lines (kinks, flats, jumps, -inf).
pieces = st.lists(
    st.tuples(st.integers(0, 400), st.floats(0, 1e6), st.sampled_from(["step", "line"])),
    min_size=1,
    max_size=6,
)


@given(pieces=pieces, start=st.floats(-1e6, 1e7), lo=st.integers(0, 50), span=st.integers(1, 400))
@example(pieces=[(0, 1.0, "line")], start=100.0, lo=0, span=400)
@example(pieces=[(200, 1e6, "step")], start=10.0, lo=0, span=400)
def test_the_search_finds_what_a_scan_finds(
    pieces: list[tuple[int, float, str]], start: float, lo: int, span: int
) -> None:
    looks: list[int] = []

    def f(n: int) -> float:
        looks.append(n)
        value = start
        for at, size, shape in pieces:
            value -= size * (n >= at) if shape == "step" else size * max(0, n - at)
        return value if n < 380 else -math.inf  # a point past which nothing is left

    hi = lo + span
    f_lo, f_hi = f(lo), f(hi)
    if not (f_lo >= 0 > f_hi):
        return
    assert last_at_or_above_zero(f, lo, hi, f_lo, f_hi) == _scan(f, lo, hi)


@given(slope=st.floats(1e-3, 1e9), zero=st.floats(1.0, 1 << 24))
def test_a_line_takes_a_few_looks_where_halving_took_twenty(slope: float, zero: float) -> None:
    looks: list[int] = []

    def f(n: int) -> float:
        looks.append(n)
        return slope * (zero - n)

    hi = 1 << 24
    if not f(1) >= 0 > f(hi):
        return
    looks.clear()
    assert last_at_or_above_zero(f, 1, hi, f(1), f(hi)) == math.floor(zero)
    assert len(looks) <= 2 + 6


@given(
    base=st.floats(1.0, 1e4), per_user=st.floats(0.0, 50.0), target=st.floats(0.1, 500.0),
    cap=st.one_of(st.none(), st.integers(0, MAX_USERS)),
)  # fmt: skip
@example(base=20.0, per_user=0.0, target=20.0, cap=None)  # exactly at the target, no slow-down
def test_the_most_users_at_a_target_is_the_scans(
    base: float, per_user: float, target: float, cap: int | None
) -> None:
    def pace(n: int) -> float:  # tokens/s each: a step that grows with the users
        return 1.0 / (1.0 / base + per_user * 1e-3 * (n - 1))

    most = MAX_USERS if cap is None else min(cap, MAX_USERS)
    scan = max((n for n in range(1, most + 1) if pace(n) >= target), default=0)
    assert _largest_users(pace, target, cap) == scan


def test_the_longest_context_is_the_last_that_fits_for_each_engine() -> None:
    """Against the fit itself: the answer fits and one token more does not, for llama.cpp and
    for vLLM (whose memory drops where its profiled prefill becomes one chunk)."""
    for model, quant, engine in (
        ("llama-3.1-8b", "Q4_K_M", "llama.cpp"),
        ("gemma-3-27b", "Q4_K_M", "llama.cpp"),  # sliding-window layers
        ("deepseek-v3", "Q4_K_M", "llama.cpp"),  # MLA
        ("llama-3.1-8b", "fp8", "vllm"),
        ("qwen3-30b-a3b", "bf16", "vllm"),
    ):
        geom, q = find_llm(model), find_quant(quant)
        for gib in (6, 12, 24, 48, 80, 141, 640):
            device = DeviceMemory(total_bytes=gib * GiB, kind="gpu")
            for users in (1, 8):

                def fits(context: int) -> bool:
                    return _fits(geom, q, context, users, engine, "f16", device)  # noqa: B023

                best = max_context(geom, q, users, engine, "f16", device, upper=1 << 20)
                if best == 0:
                    assert not fits(1)
                    continue
                assert fits(best), (model, engine, gib, users)
                if best < 1 << 20:
                    assert not fits(best + 1), (model, engine, gib, users, best)
