"""The memory plan against documented runs: every ``[[memory]]`` case with an outcome in
``serve_calibration.toml`` (a vLLM, llama.cpp, Ollama or MLX log that fitted or ran out of
memory, each with its source)."""

from __future__ import annotations

import math

import pytest

from hwadvisor.advise.serve.calib import MemoryCase, load_calibration, memory_cases
from hwadvisor.advise.serve.memory import (
    VLLM_PROFILE_MAX_TOKENS,
    DeviceMemory,
    GiB,
    max_context,
    plan_serve_memory,
)
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.errors import InputError, UsageError
from tests.helpers.llms import LLAMA_8B

MIN_AGREEMENT = 0.97


@pytest.fixture(scope="module")
def cases() -> list[MemoryCase]:
    return memory_cases(load_calibration())


def _label(case: MemoryCase) -> str:
    return (
        f"{case.geom.name} {case.quant} {case.engine} ctx {case.context} on "
        f"{case.device.count} x {case.device.total_bytes / GiB:.1f} GiB: "
        f"documented {case.outcome} ({case.source})"
    )


def test_the_cases_are_documented_and_cover_both_outcomes_and_engines(
    cases: list[MemoryCase],
) -> None:
    assert len(cases) >= 20
    assert all(c.source.startswith("https://") for c in cases)
    outcomes = {c.outcome for c in cases}
    assert outcomes == {"fit", "oom"}
    assert sum(c.outcome == "fit" for c in cases) >= 5
    assert {c.engine for c in cases} >= {"vllm", "llama.cpp", "mlx"}
    assert any(c.device.count > 1 for c in cases)
    assert any(c.device.gpu_memory_utilization != 0.9 for c in cases)


def test_never_fits_where_the_run_ran_out_of_memory(cases: list[MemoryCase]) -> None:
    wrong = [_label(c) for c in cases if c.outcome == "oom" and c.plan().fits]
    assert wrong == []


def test_agrees_with_the_documented_outcomes(cases: list[MemoryCase]) -> None:
    misses = [_label(c) for c in cases if c.plan().fits != (c.outcome == "fit")]
    agree = len(cases) - len(misses)
    print(f"\nmemory plan agrees on {agree}/{len(cases)} documented cases")
    for miss in misses:
        print("  disagrees:", miss)
    assert agree >= math.ceil(MIN_AGREEMENT * len(cases)) - (1 if len(cases) < 34 else 0)


def test_reported_concurrency_is_within_a_factor_of_two(cases: list[MemoryCase]) -> None:
    # vLLM's "Maximum concurrency for N tokens per request" where the log gives it
    with_figure = [c for c in cases if c.reported_concurrency is not None]
    assert len(with_figure) >= 3
    for case in with_figure:
        got = case.plan().max_concurrency
        assert got is not None and case.reported_concurrency is not None
        assert case.reported_concurrency / 2 <= got <= case.reported_concurrency * 2, _label(case)


def test_gpu_memory_utilization_sets_vllms_share() -> None:
    dev = DeviceMemory(kind="gpu", total_bytes=24 * GiB)
    q = find_quant("bf16")
    low = plan_serve_memory(LLAMA_8B, q, context=8192, engine="vllm", device=dev)
    high = plan_serve_memory(
        LLAMA_8B,
        q,
        context=8192,
        engine="vllm",
        device=DeviceMemory(kind="gpu", total_bytes=24 * GiB, gpu_memory_utilization=0.98),
    )
    assert high.usable_bytes - low.usable_bytes == pytest.approx(0.08 * 24 * GiB)
    assert "98%" in high.usable_note
    # llama.cpp does not take a share
    lc = plan_serve_memory(LLAMA_8B, find_quant("Q4_K_M"), context=8192, device=dev)
    assert lc.usable_bytes > high.usable_bytes
    for bad in (0.0, 1.01, -0.5):
        with pytest.raises(UsageError, match="utilization"):
            DeviceMemory(kind="gpu", total_bytes=GiB, gpu_memory_utilization=bad)


def test_vllm_profiles_one_chunk_above_32k_tokens() -> None:
    # vLLM issue 10517 (RTX 3090, Llama 3.1 8B bf16): 29000 tokens ran out, 35000 started
    dev = DeviceMemory(kind="gpu", total_bytes=23.58 * GiB)
    q = find_quant("bf16")
    at = plan_serve_memory(LLAMA_8B, q, context=VLLM_PROFILE_MAX_TOKENS, engine="vllm", device=dev)
    above = plan_serve_memory(
        LLAMA_8B, q, context=VLLM_PROFILE_MAX_TOKENS + 1, engine="vllm", device=dev
    )
    assert above.buffers_bytes < at.buffers_bytes
    assert not plan_serve_memory(LLAMA_8B, q, context=29000, engine="vllm", device=dev).fits
    assert plan_serve_memory(LLAMA_8B, q, context=35000, engine="vllm", device=dev).fits
    # the longest context is found on the upper side, and one more token does not fit
    best = max_context(LLAMA_8B, q, 1, "vllm", "f16", dev)
    assert best > VLLM_PROFILE_MAX_TOKENS
    assert plan_serve_memory(LLAMA_8B, q, context=best, engine="vllm", device=dev).fits
    assert not plan_serve_memory(LLAMA_8B, q, context=best + 1, engine="vllm", device=dev).fits


def test_max_context_below_the_chunk_threshold_when_the_upper_side_does_not_fit() -> None:
    dev = DeviceMemory(kind="gpu", total_bytes=22 * GiB)
    q = find_quant("bf16")
    best = max_context(LLAMA_8B, q, 1, "vllm", "f16", dev)
    assert 0 < best <= VLLM_PROFILE_MAX_TOKENS
    assert plan_serve_memory(LLAMA_8B, q, context=best, engine="vllm", device=dev).fits
    assert not plan_serve_memory(LLAMA_8B, q, context=best + 1, engine="vllm", device=dev).fits


def test_a_bad_case_row_is_an_input_error() -> None:
    data = load_calibration()
    row = dict(next(r for r in data["memory"] if "outcome" in r))
    with pytest.raises(InputError, match="outcome"):
        memory_cases({"models": data["models"], "memory": [row | {"outcome": "maybe"}]})
    with pytest.raises(InputError, match="no-such-model"):
        memory_cases({"models": data["models"], "memory": [row | {"model": "no-such-model"}]})
