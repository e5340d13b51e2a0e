"""Memory of serving a model, as the engines allocate it.

Per device: ``weights + kv + buffers + runtime <= usable``.

- weights: ``params_total x bits_per_weight / 8`` (a MoE keeps every expert resident); a
  checkpoint quantization served by vLLM/SGLang/TensorRT-LLM/transformers (AWQ, GPTQ, int8, fp8,
  NVFP4) keeps the token embedding and the output head at 16 bits, and MXFP4 (gpt-oss) quantizes
  only the routed experts, which vLLM pads for its kernels (:func:`weights_bytes`);
- kv: ``LlmGeometry.kv_bytes(context, bytes_per_value, sequences)``; llama.cpp allocates the
  whole context up front, vLLM a pool of what is left after the weights and its profiling peak
  (reported as "maximum concurrency": how many full-length sequences the pool holds);
- buffers: llama.cpp's compute buffer (flash attention on), ``4 B x n_ubatch x (vocab + 6 x hidden)
  + 8 B x n_ubatch x context`` (the f32 logits and activations of one micro-batch, and the mask and
  attention tile); vLLM's profiling peak, ``2 B x tokens x (2 x intermediate + 4 x hidden) +
  4 B x 256 x vocab`` where tokens is the prefill it profiles (``max_model_len`` up to 32768: V0
  profiles the whole length, the cautious side; above it chunked prefill is on by default and
  one chunk of 8192 tokens is profiled);
- runtime: the engine's own (vLLM: CUDA graphs about 0.5 GiB, NCCL 0.25 GiB per GPU when split;
  llama.cpp 0.15 GiB); the CUDA context (about 0.45 GiB) is taken off the usable memory. vLLM's
  KV pool fills ``gpu_memory_utilization`` of the GPU, so what it allocates after profiling
  (CUDA graphs, communication buffers) must also fit in the ``1 - gpu_memory_utilization``
  left over (:func:`leftover_fits`): at 1.0 nothing is left and the start fails.

With ``count`` GPUs the weights and the KV cache are split evenly (tensor parallel); buffers and
runtime are paid on each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from hwadvisor.advise.serve.quant import (
    LLAMA_CPP_FAMILY,
    QUANTS,
    Quant,
    kv_bytes_per_value,
)
from hwadvisor.advise.serve.search import last_at_or_above_zero
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.errors import UsageError

GiB = 1024.0**3
CUDA_CONTEXT_BYTES = 0.45 * GiB
"""The CUDA context and cuBLAS workspace each process holds per GPU (0.3 to 0.5 GiB)."""
VLLM_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's ``--gpu-memory-utilization`` default: the share of total GPU memory it may use."""
VLLM_CUDA_GRAPHS_BYTES = 0.5 * GiB
NCCL_BYTES = 0.25 * GiB
LLAMA_CPP_RUNTIME_BYTES = 0.15 * GiB
METAL_RUNTIME_BYTES = 0.1 * GiB
N_UBATCH = 512
"""llama.cpp's default micro-batch (``-ub``)."""
VLLM_PROFILE_MAX_TOKENS = 32768
"""Up to this ``max_model_len`` vLLM (V0) profiles a prefill of the whole length."""
VLLM_CHUNK_TOKENS = 8192
"""Above it chunked prefill is on by default and vLLM profiles one chunk of
``max_num_batched_tokens``: V0's default was 2048, V1's 8192 (the larger, cautious side)."""
VLLM_PROFILE_SEQS = 256
"""vLLM's default ``max_num_seqs``: the logits of that many sequences are in its profiling peak."""
MIN_USEFUL_CONTEXT = 512
CHECKPOINT_QUANT_FAMILIES = ("int4", "int8", "fp8", "fp4", "nf4")
"""Quantizations stored in the checkpoint (not GGUF): their embedding and output stay 16-bit."""
SIXTEEN_BIT_HEAD_ENGINES = ("vllm", "sglang", "tensorrt-llm", "transformers")
"""Engines that load such checkpoints as stored (MLX quantizes the embedding too; GGUF
averages already count the higher-precision tensors)."""
GGUF_HEAD_BITS = {"gguf-k": 6.5625, "gguf-legacy": 6.5625, "gguf-iq": 5.5}
"""llama.cpp's quantizer stores the output head (or the tied embedding that serves as one) at
Q6_K under the K and legacy mixtures below it and at Q5_K under the IQ types
(``llama_tensor_get_type`` in llama-quant.cpp)."""
GGUF_FP4_REST_BITS = 8.5
"""An MXFP4 MoE GGUF (gpt-oss) stores only the routed experts in MXFP4 and the rest at Q8_0:
gpt-oss-20b's file is 12.1 GB, 19.1 B expert parameters at 4.25 bits and 1.8 B at 8.5."""
MOE_PAD_HIDDEN = 256
MOE_PAD_INTERMEDIATE = 128
"""vLLM's MXFP4 MoE kernels pad each expert's hidden size to a multiple of 256 and its
intermediate size to a multiple of 128 (gpt-oss: 2880 becomes 3072 and 2944)."""

Kind = Literal["gpu", "cpu", "unified"]


@dataclass(frozen=True)
class DeviceMemory:
    """Where the model would live. ``total_bytes`` is per device (one GPU's memory, the RAM)."""

    kind: Kind
    total_bytes: float
    count: int = 1
    name: str = ""
    platform: str = "linux"
    """``linux``, ``darwin`` (Apple), ``windows``."""
    apu: bool = False
    """An AMD APU (Ryzen AI, Strix Halo): unified memory split between a carve-out and GTT."""
    gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION
    """vLLM/SGLang ``--gpu-memory-utilization`` on a GPU: the share of its memory they take."""

    def __post_init__(self) -> None:
        if self.kind not in ("gpu", "cpu", "unified"):
            raise UsageError(f"unknown memory kind {self.kind!r}: use gpu, cpu or unified")
        if self.total_bytes <= 0 or self.count < 1:
            raise UsageError("device memory must be positive and the device count at least 1")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise UsageError("the GPU memory utilization must be above 0 and at most 1")


def _os_reserve(total: float) -> float:
    """What the OS and the desktop keep of system RAM: 10 %, at least 2 GiB, at most 8 GiB."""
    return min(max(2.0 * GiB, 0.1 * total), 8.0 * GiB)


def apple_working_set(total: float) -> float:
    """Metal's ``recommendedMaxWorkingSetSize``: about 2/3 of RAM up to 36 GB, 3/4 above."""
    return total * (2.0 / 3.0 if total <= 36e9 else 0.75)


@lru_cache(maxsize=4096)
def usable_bytes(device: DeviceMemory, engine: str) -> tuple[float, str]:
    """Bytes one device gives the engine, and a note saying why."""
    total = device.total_bytes
    if device.kind == "unified" and device.platform in ("darwin", "macos"):
        limit = apple_working_set(total)
        mb = int(total * 0.9 / 1e6 / 1.048576)
        return limit, (
            f"Apple unified memory: the GPU may wire {limit / GiB:.1f} GiB of "
            f"{total / GiB:.1f} GiB (recommendedMaxWorkingSetSize); "
            f"`sudo sysctl iogpu.wired_limit_mb={mb}` raises it until the next reboot"
        )
    if device.kind == "unified":
        usable = total - _os_reserve(total)
        note = f"unified memory less an OS reserve: {usable / GiB:.1f} GiB"
        if device.apu:
            note += (
                "; AMD APU: the BIOS carve-out (UMA frame buffer) is all ROCm sees by default, "
                "while Vulkan and HIP with GTT (amdgpu.gttsize / ttm.pages_limit) can use "
                "system RAM beyond it"
            )
        return usable, note
    if device.kind == "cpu":
        usable = total - _os_reserve(total)
        return usable, f"RAM less an OS reserve: {usable / GiB:.1f} GiB"
    if engine in ("vllm", "sglang"):
        share = device.gpu_memory_utilization
        usable = total * share - CUDA_CONTEXT_BYTES
        return usable, (
            f"{share:.0%} of {total / GiB:.1f} GiB (--gpu-memory-utilization) less the CUDA context"
        )
    usable = total - CUDA_CONTEXT_BYTES
    return usable, f"{total / GiB:.1f} GiB less the CUDA context ({CUDA_CONTEXT_BYTES / GiB:.2f})"


def _vllm_like(engine: str) -> bool:
    return engine in ("vllm", "sglang", "tensorrt-llm")


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


@dataclass(frozen=True)
class TensorBytes:
    """Bytes per parameter of each class of a model's tensors, as the engine stores them."""

    expert: float
    """A routed expert's (a MoE)."""
    body: float
    """Attention, dense MLPs, shared experts: every other layer tensor."""
    head: float
    """The output head (vocab x hidden), read at every step."""


@lru_cache(maxsize=4096)
def tensor_bytes(geom: LlmGeometry, quant: Quant, engine: str) -> TensorBytes:
    """What each class of tensor weighs per parameter under ``quant`` in ``engine``: the
    format's bits, except where the formats keep some tensors wider (the constants above, and
    a checkpoint quantization's 16-bit head in the engines that load it as stored)."""
    b = quant.bytes_per_weight
    if quant.family == "fp4" and geom.moe:
        rest = 2.0 if engine in SIXTEEN_BIT_HEAD_ENGINES else GGUF_FP4_REST_BITS / 8
        return TensorBytes(b, rest, rest)
    if quant.family in CHECKPOINT_QUANT_FAMILIES and engine in SIXTEEN_BIT_HEAD_ENGINES:
        return TensorBytes(b, b, 2.0)
    head_bits = GGUF_HEAD_BITS.get(quant.family)
    if head_bits is not None and quant.bits_per_weight < head_bits:
        return TensorBytes(b, b, head_bits / 8)
    return TensorBytes(b, b, b)


@lru_cache(maxsize=4096)
def weights_bytes(geom: LlmGeometry, quant: Quant, engine: str) -> float:
    """The resident weights over all devices, as the engine loads them.

    ``params_total x bits / 8`` for float formats and MLX; a GGUF's output head at the width
    llama.cpp's quantizer keeps it (:data:`GGUF_HEAD_BITS`), the rest at the format's
    average. A checkpoint quantization (AWQ, GPTQ,
    int8, fp8, NVFP4) loaded by vLLM, SGLang, TensorRT-LLM or transformers keeps the token
    embedding and the output head at 16 bits (counted untied, the cautious side): Qwen2.5-7B
    AWQ loads 5.20 GiB in vLLM, not the 3.8 GiB of 4.25 bits throughout. An MXFP4 MoE
    (gpt-oss) stores only the routed experts in MXFP4 and the rest at 16 bits (Q8_0 in a
    GGUF, :data:`GGUF_FP4_REST_BITS`), and vLLM pads the experts for its kernels:
    gpt-oss-120b loads 65.97 GiB on an H100 (vLLM issue 23278).
    """
    plain = geom.params_total * quant.bytes_per_weight
    if quant.family == "fp4" and geom.moe and geom.intermediate:
        t = tensor_bytes(geom, quant, engine)
        experts = min(
            float(geom.layers * geom.experts * 3 * geom.hidden * geom.intermediate),
            geom.params_total,
        )
        expert_bytes = experts * t.expert
        if _vllm_like(engine):
            padded = _round_up(geom.hidden, MOE_PAD_HIDDEN) * _round_up(
                geom.intermediate, MOE_PAD_INTERMEDIATE
            )
            expert_bytes *= padded / (geom.hidden * geom.intermediate)
        return expert_bytes + (geom.params_total - experts) * t.body
    if quant.family in GGUF_HEAD_BITS:
        # The head at its own width, the rest at the format's average: Llama 3.2 1B at Q4_K_M
        # is 0.81 GB this way and on disk, 0.75 GB at 4.85 bits throughout.
        head = min(float(geom.vocab * geom.hidden), geom.params_total)
        t = tensor_bytes(geom, quant, engine)
        return (geom.params_total - head) * t.body + head * t.head
    if quant.family not in CHECKPOINT_QUANT_FAMILIES or engine not in SIXTEEN_BIT_HEAD_ENGINES:
        return plain
    head = min(2.0 * geom.vocab * geom.hidden, geom.params_total)
    return (geom.params_total - head) * quant.bytes_per_weight + head * 2.0


def buffers_bytes(geom: LlmGeometry, context: int, engine: str) -> float:
    """Compute buffers (activations, logits, attention scratch) on one device."""
    if _vllm_like(engine):
        tokens = context if context <= VLLM_PROFILE_MAX_TOKENS else VLLM_CHUNK_TOKENS
        inter = geom.intermediate or 4 * geom.hidden
        if geom.moe:
            inter *= max(1, geom.experts_active)
        return 2.0 * tokens * (2 * inter + 4 * geom.hidden) + 4.0 * VLLM_PROFILE_SEQS * geom.vocab
    ub = min(N_UBATCH, max(1, context))
    return 4.0 * ub * (geom.vocab + 6 * geom.hidden) + 8.0 * ub * context


def runtime_bytes(device: DeviceMemory, engine: str) -> float:
    """The engine's own memory on one device (the CUDA context is off ``usable_bytes``)."""
    if device.kind == "cpu":
        return LLAMA_CPP_RUNTIME_BYTES
    if _vllm_like(engine):
        return VLLM_CUDA_GRAPHS_BYTES + (NCCL_BYTES if device.count > 1 else 0.0)
    if device.platform in ("darwin", "macos"):
        return METAL_RUNTIME_BYTES
    return LLAMA_CPP_RUNTIME_BYTES


def leftover_fits(device: DeviceMemory, engine: str) -> bool:
    """vLLM/SGLang on a GPU: whether the share it leaves (``1 - gpu_memory_utilization``)
    holds what it allocates after sizing its KV pool (its runtime: CUDA graphs, and NCCL when
    split). The pool fills the utilization share, so with 1.0 these allocations fail (vLLM
    issues 10797 and 2348); the plan also keeps them in the budget, the cautious side for the
    versions that profile them."""
    if device.kind != "gpu" or not _vllm_like(engine):
        return True
    left = (1.0 - device.gpu_memory_utilization) * device.total_bytes
    return left >= runtime_bytes(device, engine)


@dataclass(frozen=True)
class ServeMemory:
    """The memory plan. Byte figures are totals over every device; ``fits`` is per device."""

    weights_bytes: float
    kv_bytes: float
    buffers_bytes: float
    runtime_bytes: float
    total_bytes: float
    usable_bytes: float
    fits: bool
    headroom_bytes: float
    max_context_that_fits: int
    usable_note: str
    kv_per_sequence_bytes: float
    max_concurrency: float | None
    """vLLM: how many full-length sequences its KV pool holds (as it prints at start-up)."""
    suggestions: list[str] = field(default_factory=list)


def _per_device(
    geom: LlmGeometry,
    quant: Quant,
    context: int,
    sequences: int,
    engine: str,
    kv_cache: str,
    device: DeviceMemory,
) -> tuple[float, float, float, float]:
    n = device.count
    weights = weights_bytes(geom, quant, engine) / n
    kv = geom.kv_bytes(context, kv_bytes_per_value(kv_cache), sequences) / n
    return weights, kv, buffers_bytes(geom, context, engine), runtime_bytes(device, engine)


def _fits(
    geom: LlmGeometry,
    quant: Quant,
    context: int,
    sequences: int,
    engine: str,
    kv_cache: str,
    device: DeviceMemory,
) -> bool:
    slack = _slack(geom, quant, sequences, engine, kv_cache, device)
    return slack is not None and slack(context) >= 0


def _slack(
    geom: LlmGeometry,
    quant: Quant,
    sequences: int,
    engine: str,
    kv_cache: str,
    device: DeviceMemory,
) -> Callable[[int], float] | None:
    """The memory left on one device at a context (negative: short by that much); None where
    nothing fits whatever the context (vLLM's share left for its runtime is too small)."""
    if not leftover_fits(device, engine):
        return None
    usable, _ = usable_bytes(device, engine)
    n = device.count
    fixed = weights_bytes(geom, quant, engine) / n + runtime_bytes(device, engine)
    per_value = kv_bytes_per_value(kv_cache)

    def slack(context: int) -> float:
        kv = geom.kv_bytes(context, per_value, sequences) / n
        return usable - (fixed + kv + buffers_bytes(geom, context, engine))

    return slack


def max_context(
    geom: LlmGeometry,
    quant: Quant,
    sequences: int,
    engine: str,
    kv_cache: str,
    device: DeviceMemory,
    upper: int = 1 << 24,
) -> int:
    """The longest context that fits (0: not even one token). Memory grows with the context,
    so the crossing is searched for (:mod:`.search`); for vLLM it grows on each side of
    ``VLLM_PROFILE_MAX_TOKENS`` (where the profiled prefill drops to one chunk), so the upper
    side is tried first."""
    slack = _slack(geom, quant, sequences, engine, kv_cache, device)
    if slack is None:
        return 0
    if _vllm_like(engine) and upper > VLLM_PROFILE_MAX_TOKENS + 1:
        above = VLLM_PROFILE_MAX_TOKENS + 1
        left = slack(above)
        if left >= 0:
            return _longest(slack, above, left, upper)
        upper = VLLM_PROFILE_MAX_TOKENS
    left = slack(1)
    if not left >= 0:
        return 0
    return _longest(slack, 1, left, upper)


def _longest(slack: Callable[[int], float], lo: int, at_lo: float, hi: int) -> int:
    """The longest context in ``[lo, hi]`` that fits, ``lo`` fitting (``at_lo`` left)."""
    at_hi = slack(hi)
    if at_hi >= 0:
        return hi
    return last_at_or_above_zero(slack, lo, hi, at_lo, at_hi)


def plan_serve_memory(
    geom: LlmGeometry,
    quant: Quant,
    *,
    context: int,
    sequences: int = 1,
    engine: str = "llama.cpp",
    kv_cache: str = "f16",
    device: DeviceMemory,
) -> ServeMemory:
    """Whether ``geom`` at ``quant`` serves ``sequences`` sequences of ``context`` tokens on
    ``device``, with the breakdown and, when it does not fit, what to change."""
    if context < 1 or sequences < 1:
        raise UsageError("the context and the number of sequences must be at least 1")
    n = device.count
    usable, note = usable_bytes(device, engine)
    weights, kv, buffers, runtime = _per_device(
        geom, quant, context, sequences, engine, kv_cache, device
    )
    per_device = weights + kv + buffers + runtime
    fits = per_device <= usable and leftover_fits(device, engine)
    kv_one = geom.kv_bytes(context, kv_bytes_per_value(kv_cache), 1)
    concurrency: float | None = None
    if _vllm_like(engine):
        pool = max(0.0, usable - weights - buffers - runtime) * n
        concurrency = pool / kv_one if kv_one > 0 else None
    # Up to the model's own limit: a longer context is not one it can use.
    best = max_context(
        geom, quant, sequences, engine, kv_cache, device, upper=geom.max_context or 1 << 24
    )
    plan = ServeMemory(
        weights_bytes=weights * n,
        kv_bytes=kv * n,
        buffers_bytes=buffers * n,
        runtime_bytes=runtime * n,
        total_bytes=per_device * n,
        usable_bytes=usable * n,
        fits=fits,
        headroom_bytes=(usable - per_device) * n,
        max_context_that_fits=best,
        usable_note=note,
        kv_per_sequence_bytes=kv_one,
        max_concurrency=concurrency,
    )
    if not fits:
        plan = replace(
            plan,
            suggestions=_suggest(geom, quant, context, sequences, engine, kv_cache, device, best),
        )
    return plan


def _suggest(
    geom: LlmGeometry,
    quant: Quant,
    context: int,
    sequences: int,
    engine: str,
    kv_cache: str,
    device: DeviceMemory,
    best: int,
) -> list[str]:
    out: list[str] = []
    if not leftover_fits(device, engine):
        need = runtime_bytes(device, engine) / device.total_bytes
        out.append(
            f"a --gpu-memory-utilization of at most {1.0 - need:.2f}: vLLM's KV pool fills "
            "that share and CUDA graphs and NCCL need the rest"
        )
    flag = "--max-model-len" if _vllm_like(engine) else "--context (llama.cpp -c)"
    if best >= MIN_USEFUL_CONTEXT:
        out.append(f"a shorter context: {flag} {best} is the longest that fits")
    if sequences > 1:
        # the most users whose whole contexts fit at once (the fit falls as users grow)
        lo, hi = 0, sequences - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _fits(geom, quant, context, mid, engine, kv_cache, device):
                lo = mid
            else:
                hi = mid - 1
        if lo >= 1:
            out.append(
                f"fewer users at once: {lo} with {context:,} tokens of context each fit "
                "(the server queues the rest)"
            )
    cheaper = "fp8" if _vllm_like(engine) else "q8_0"
    if kv_bytes_per_value(kv_cache) > kv_bytes_per_value(cheaper) and _fits(
        geom, quant, context, sequences, engine, cheaper, device
    ):
        option = "--kv-cache-dtype fp8" if _vllm_like(engine) else "-ctk q8_0 -ctv q8_0"
        out.append(f"a {cheaper} KV cache ({option}) fits at this context")
    # The most bits that fit (of equals, the first listed): tried from the most bits down.
    smaller = sorted(
        (q for q in QUANTS if q.bits_per_weight < quant.bits_per_weight and engine in q.engines),
        key=lambda q: -q.bits_per_weight,
    )
    pick = next(
        (q for q in smaller if _fits(geom, q, context, sequences, engine, kv_cache, device)),
        None,
    )
    if pick is not None:
        out.append(f"a smaller quantization: {pick.name} ({pick.bits_per_weight:g} bits) fits")
    if device.kind == "gpu":
        for count in (2, 4, 8):
            if count > device.count and _fits(
                geom, quant, context, sequences, engine, kv_cache, replace(device, count=count)
            ):
                tp = "--tensor-parallel-size" if _vllm_like(engine) else "--split-mode layer"
                out.append(f"{count} such GPUs ({tp} {count}): weights and KV split")
                break
    if engine in LLAMA_CPP_FAMILY and device.kind in ("gpu", "unified"):
        usable, _ = usable_bytes(device, engine)
        per_layer = (
            weights_bytes(geom, quant, engine)
            + geom.kv_bytes(context, kv_bytes_per_value(kv_cache), sequences)
        ) / geom.layers
        room = (
            usable * device.count
            - (buffers_bytes(geom, context, engine) + runtime_bytes(device, engine)) * device.count
        )
        layers = int(max(0.0, room) // per_layer)
        if 0 < layers < geom.layers:
            out.append(
                f"partial CPU offload: -ngl {layers} keeps {layers} of {geom.layers} layers "
                "on the GPU, the rest in RAM (decode slows to RAM bandwidth for them)"
            )
    return out
