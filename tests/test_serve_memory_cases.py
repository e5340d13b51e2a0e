"""The memory plan against documented runs: every ``[[memory]]`` case with an outcome in
``serve_calibration.toml`` (a vLLM, llama.cpp, Ollama or MLX log that fitted or ran out of
memory, each with its source)."""

from __future__ import annotations

import math

import pytest

from hwadvisor.advise.serve.calib import MemoryCase, geometry, load_calibration, memory_cases
from hwadvisor.advise.serve.memory import (
    VLLM_PROFILE_MAX_TOKENS,
    DeviceMemory,
    GiB,
    leftover_fits,
    max_context,
    plan_serve_memory,
    weights_bytes,
)
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.llms import find_llm
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
    assert len(cases) >= 34
    assert all(c.source.startswith("https://") for c in cases)
    outcomes = {c.outcome for c in cases}
    assert outcomes == {"fit", "oom"}
    assert sum(c.outcome == "fit" for c in cases) >= 5
    assert {c.engine for c in cases} >= {"vllm", "llama.cpp", "ollama", "mlx"}
    assert any(c.device.count > 1 for c in cases)
    # tensor parallel both ways: several GPUs that fitted and several that ran out
    assert {c.outcome for c in cases if c.device.count > 1} == {"fit", "oom"}
    assert {c.outcome for c in cases if c.device.platform == "darwin"} == {"fit", "oom"}
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


def _calib_geom(name: str) -> LlmGeometry:
    return geometry(name, load_calibration())


def test_checkpoint_quantizations_keep_the_embedding_and_output_at_16_bits() -> None:
    qwen7 = _calib_geom("qwen2.5-7b")
    # vLLM issue 13882: Qwen2.5-7B 4-bit "model weights take 5.20GiB"
    awq = weights_bytes(qwen7, find_quant("AWQ"), "vllm") / GiB
    assert awq == pytest.approx(5.20, rel=0.05)
    # 4.25 bits throughout would be 3.8 GiB
    assert qwen7.params_total * find_quant("AWQ").bytes_per_weight / GiB < 4.0
    # vLLM PR 12569: Llama 3.1 70B w8a8 "weights 67.72 GB" (GiB in vLLM's log)
    llama70 = _calib_geom("llama-3.1-70b")
    assert weights_bytes(llama70, find_quant("int8"), "vllm") / GiB == pytest.approx(
        67.72, rel=0.03
    )
    # Float formats and MLX (which quantizes the embedding too) are their bits throughout
    for quant, engine in (("bf16", "vllm"), ("int4", "mlx")):
        q = find_quant(quant)
        assert weights_bytes(qwen7, q, engine) == pytest.approx(
            qwen7.params_total * q.bytes_per_weight
        )


def test_mxfp4_quantizes_only_the_experts_and_vllm_pads_them() -> None:
    gpt120 = find_llm("gpt-oss-120b")
    # vLLM issue 23278 (H100, Marlin MXFP4): "Model loading took 65.9651 GiB"
    assert weights_bytes(gpt120, find_quant("MXFP4"), "vllm") / GiB == pytest.approx(
        65.97, rel=0.03
    )
    # A GGUF keeps what is not an expert at Q8_0: bartowski's openai_gpt-oss-20b-MXFP4.gguf
    # ("Full MXFP4 weights") is 12.1 GB, where MXFP4 throughout would be 11.1 GB.
    gpt20 = find_llm("gpt-oss-20b")
    assert weights_bytes(gpt20, find_quant("MXFP4"), "llama.cpp") == pytest.approx(12.1e9, rel=0.03)
    assert weights_bytes(gpt120, find_quant("MXFP4"), "llama.cpp") > (
        gpt120.params_total * find_quant("MXFP4").bytes_per_weight
    )


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


def test_vllm_needs_the_share_it_leaves_for_cuda_graphs_and_nccl() -> None:
    # vLLM issue 10797: Llama 3.2 3B on a 16 GB GPU at gpu_memory_utilization=1 cannot load;
    # the same model and length fit at 0.9 on an 80 GB GPU
    q = find_quant("bf16")
    full = DeviceMemory(kind="gpu", total_bytes=80 * GiB, gpu_memory_utilization=1.0)
    assert not leftover_fits(full, "vllm")
    plan = plan_serve_memory(LLAMA_8B, q, context=4096, engine="vllm", device=full)
    assert not plan.fits and plan.max_context_that_fits == 0
    assert any("--gpu-memory-utilization of at most" in s for s in plan.suggestions)
    default = DeviceMemory(kind="gpu", total_bytes=80 * GiB)
    assert plan_serve_memory(LLAMA_8B, q, context=4096, engine="vllm", device=default).fits
    # 0.98 of 80 GiB leaves 1.6 GiB: enough for one GPU (vLLM PR 12569), and for NCCL too
    assert leftover_fits(
        DeviceMemory(kind="gpu", total_bytes=80 * GiB, gpu_memory_utilization=0.98), "vllm"
    )
    # llama.cpp takes no share: the whole GPU is its budget
    assert leftover_fits(full, "llama.cpp")


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


@pytest.mark.parametrize(
    ("model", "file_gb"),
    [("llama-3.2-1b", 0.81), ("llama-3.2-3b", 2.02), ("llama-3.1-8b", 4.92)],
)
def test_a_gguf_weighs_what_its_file_does(model: str, file_gb: float) -> None:
    # bartowski's Llama-3.2-1B/3B- and Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf listings: a small
    # model's head (kept at Q6_K) is a larger share of it, so 4.85 bits throughout says too
    # little (0.75 GB for the 1B); the head at its own width gets each within 2 %.
    from hwadvisor.catalog.llms import find_llm

    geom = find_llm(model)
    assert weights_bytes(geom, find_quant("Q4_K_M"), "llama.cpp") / 1e9 == pytest.approx(
        file_gb, rel=0.02
    )
