"""Weight and KV-cache number formats, at the bits per weight the files really take.

GGUF figures are measured averages over whole files, scales and the tensors kept at higher
precision included (Q4_K_M stores ``attn_v``/``ffn_down`` halves and the output at Q6_K):
llama.cpp's ``tools/quantize/README.md`` table and ``llama-quantize --help`` (sizes for
Llama 3.1 8B: Q4_0 4.34 GiB, Q4_K_M 4.58 GiB, Q5_K_M 5.33 GiB, Q6_K 6.14 GiB, Q8_0 7.95 GiB over
8.03e9 parameters give 4.6/4.9/5.7/6.6/8.5 bits). The block layouts give the floor: Q4_0 is 18
bytes per 32 weights (4.5 bits), Q8_0 34 bytes per 32 (8.5), Q6_K 210 per 256 (6.5625), IQ4_XS
136 per 256 (4.25), IQ3_XXS 98 per 256 (3.0625), IQ2_XXS 66 per 256 (2.0625), MXFP4 17 per 32
(4.25). AWQ/GPTQ 4-bit with group size 128 store an fp16 scale and a packed zero per 128 weights
(about 4.25 bits); NVFP4 stores an fp8 scale per 16 weights (4.5 bits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hwadvisor.errors import UsageError

LLAMA_CPP_FAMILY = ("llama.cpp", "ollama", "lm-studio")
"""Engines that load GGUF files."""
ALL_ENGINES = ("llama.cpp", "ollama", "vllm", "mlx", "transformers", "tensorrt-llm", "sglang")
ENGINES = ALL_ENGINES


@dataclass(frozen=True)
class Quant:
    """One weight format."""

    name: str
    bits_per_weight: float
    """The file's real average, scales and higher-precision tensors included."""
    family: str
    """``gguf-k``, ``gguf-legacy``, ``gguf-iq``, ``float``, ``fp8``, ``int8``, ``int4``, ``fp4``,
    ``nf4`` (bitsandbytes)."""
    engines: tuple[str, ...]

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8.0


_GGUF = LLAMA_CPP_FAMILY
_SERVED = ("vllm", "tensorrt-llm", "sglang", "transformers")

QUANTS: tuple[Quant, ...] = (
    Quant("Q4_0", 4.5, "gguf-legacy", _GGUF),
    Quant("Q4_K_M", 4.85, "gguf-k", _GGUF),
    Quant("Q5_K_M", 5.69, "gguf-k", _GGUF),
    Quant("Q6_K", 6.56, "gguf-k", _GGUF),
    Quant("Q8_0", 8.5, "gguf-legacy", (*_GGUF, "mlx")),
    # More GGUF types people download: the k-quants' body bits from ``llama-quantize --help``'s
    # sizes for Llama 3 8B (Q2_K 2.96G, Q3_K_S 3.41G, Q3_K_M 3.74G, Q3_K_L 4.03G, Q4_K_S 4.37G,
    # Q5_K_S 5.21G; Q2_K_S from the quantize README's 2.9697 bits per weight) less the Q6_K
    # output head; legacy blocks at their layout (Q4_1 20 bytes per 32 weights, Q5_0 22, Q5_1
    # 24); i-quants at the bits the help gives.
    Quant("Q2_K", 2.93, "gguf-k", _GGUF),
    Quant("Q3_K_S", 3.44, "gguf-k", _GGUF),
    Quant("Q3_K_M", 3.82, "gguf-k", _GGUF),
    Quant("Q3_K_L", 4.15, "gguf-k", _GGUF),
    Quant("Q4_K_S", 4.54, "gguf-k", _GGUF),
    Quant("Q5_K_S", 5.5, "gguf-k", _GGUF),
    Quant("Q4_1", 5.0, "gguf-legacy", _GGUF),
    Quant("Q5_0", 5.5, "gguf-legacy", _GGUF),
    Quant("Q5_1", 6.0, "gguf-legacy", _GGUF),
    Quant("Q2_K_S", 2.72, "gguf-k", _GGUF),
    Quant("IQ1_S", 1.56, "gguf-iq", _GGUF),
    Quant("IQ1_M", 1.75, "gguf-iq", _GGUF),
    Quant("IQ2_XS", 2.31, "gguf-iq", _GGUF),
    Quant("IQ2_S", 2.5, "gguf-iq", _GGUF),
    Quant("IQ2_M", 2.7, "gguf-iq", _GGUF),
    Quant("IQ3_XS", 3.3, "gguf-iq", _GGUF),
    Quant("IQ3_S", 3.44, "gguf-iq", _GGUF),
    Quant("IQ3_M", 3.66, "gguf-iq", _GGUF),
    Quant("IQ4_NL", 4.5, "gguf-iq", _GGUF),
    Quant("F32", 32.0, "float", _GGUF),
    Quant("F16", 16.0, "float", _GGUF),
    Quant("BF16", 16.0, "float", _GGUF),
    Quant("IQ2_XXS", 2.06, "gguf-iq", _GGUF),
    Quant("IQ3_XXS", 3.06, "gguf-iq", _GGUF),
    Quant("IQ4_XS", 4.25, "gguf-iq", _GGUF),
    Quant("MXFP4", 4.25, "fp4", (*_GGUF, "vllm", "tensorrt-llm", "sglang")),
    Quant("fp32", 32.0, "float", ("transformers",)),
    Quant("fp16", 16.0, "float", (*_SERVED, "mlx")),
    Quant("bf16", 16.0, "float", (*_SERVED, "mlx")),
    Quant("fp8", 8.0, "fp8", ("vllm", "tensorrt-llm", "sglang")),
    Quant("int8", 8.0, "int8", ("vllm", "tensorrt-llm", "sglang", "mlx")),
    Quant("AWQ", 4.25, "int4", ("vllm", "sglang", "transformers")),
    Quant("GPTQ", 4.25, "int4", ("vllm", "sglang", "transformers")),
    Quant("int4", 4.25, "int4", ("vllm", "tensorrt-llm", "sglang", "mlx")),
    Quant("NVFP4", 4.5, "fp4", ("vllm", "tensorrt-llm", "sglang")),
    # MLX's own quantization (mlx_lm.convert -q, the mlx-community "-4bit"/"-8bit" repositories):
    # groups of 64 weights with a 16-bit scale and bias each, 0.5 bits per weight on top.
    Quant("4bit", 4.5, "int4", ("mlx",)),
    Quant("8bit", 8.5, "int8", ("mlx",)),
    # bitsandbytes' 4-bit NF4 (transformers' load_in_4bit, the "-bnb-4bit" repositories, vLLM's
    # --quantization bitsandbytes): 4 bits and, with double quantization (as unsloth's
    # repositories and QLoRA set it), an 8-bit absmax per 64 weights and an FP32 scale per 256
    # of those: 4 + 8/64 + 32/(64 x 256) = 4.127 bits; the embedding and head stay 16-bit.
    Quant("bnb-4bit", 4.127, "nf4", ("transformers", "vllm")),
)

_BY_NAME = {q.name.lower(): q for q in QUANTS}
_EXACT = {q.name: q for q in QUANTS}
"""GGUF's ``BF16`` and the checkpoints' ``bf16`` share a name but not their engines."""
_ALIASES = {
    # llama-quantize's own aliases, and the file type a gpt-oss GGUF's header names
    "q3_k": "q3_k_m",
    "q4_k": "q4_k_m",
    "q5_k": "q5_k_m",
    "mxfp4_moe": "mxfp4",
    # bitsandbytes' 4-bit as people name it (vLLM's --quantization bitsandbytes, TGI's
    # bitsandbytes-nf4)
    "nf4": "bnb-4bit",
    "bnb": "bnb-4bit",
    "bnb4": "bnb-4bit",
    "bnb_4bit": "bnb-4bit",
    "bitsandbytes": "bnb-4bit",
    "bitsandbytes-nf4": "bnb-4bit",
}


def find_quant(name: str, engine: str | None = None) -> Quant:
    """The format named ``name`` (any case; where two share it, the one ``engine`` runs, else
    the one spelt the same); an unknown name is a usage error listing the valid."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    same = [q for q in QUANTS if q.name.lower() == key]
    if engine is not None and len(same) > 1:
        runs = engine if engine not in LLAMA_CPP_FAMILY else "llama.cpp"
        same = [q for q in same if runs in q.engines] or same
    quant = same[0] if len(same) == 1 else _EXACT.get(name.strip()) or _BY_NAME.get(key)
    if quant is None:
        valid = ", ".join(q.name for q in QUANTS)
        raise UsageError(f"unknown quantization {name!r}: use one of {valid}")
    return quant


#: A quantization named at the end of a model name, as Ollama tags (``qwen2.5:7b-instruct-q4_K_M``,
#: ``llama3.1:8b-instruct-fp16``) and Hugging Face repositories (``Qwen2.5-7B-Instruct-AWQ``,
#: ``Meta-Llama-3.1-8B-Instruct-FP8``, ``bartowski/...-GGUF:Q4_K_M``) spell it.
_NAMED_QUANT = re.compile(
    r"[-_:.](?P<quant>(?:unsloth[-_])?bnb[-_]4bit|nf4|i?q\d[a-z0-9_]*|f16|bf16|fp16|fp8|int8|int4"
    r"|[48]bit|w4a16|w8a8|awq|gptq|mxfp4|nvfp4)$",
    re.IGNORECASE,
)
_CHECKPOINT_ALIASES = {
    "w4a16": "int4",
    "w8a8": "int8",
    "nf4": "bnb-4bit",
    "bnb_4bit": "bnb-4bit",
    "unsloth-bnb-4bit": "bnb-4bit",
    "unsloth_bnb_4bit": "bnb-4bit",
    "unsloth-bnb_4bit": "bnb-4bit",
    "unsloth_bnb-4bit": "bnb-4bit",
}
_GGUF_FLOATS = {"f16": "F16", "fp16": "F16", "bf16": "BF16"}


def split_named_quant(name: str, engine: str) -> tuple[str, str | None]:
    """``name`` without the quantization its end names (and Ollama's ``:latest``, a ``-GGUF``
    repository suffix and an ``hf.co/`` prefix), and that quantization's name for ``engine``
    (``None`` where the name gives none it knows)."""
    model = name.strip()
    model = re.sub(r"^(https?://)?(hf\.co|huggingface\.co)/", "", model, flags=re.IGNORECASE)
    model = re.sub(r":latest$", "", model, flags=re.IGNORECASE)
    found: str | None = None
    match = _NAMED_QUANT.search(model)
    if match:
        token = match["quant"].lower()
        token = _CHECKPOINT_ALIASES.get(token, token)
        if engine in LLAMA_CPP_FAMILY and token in _GGUF_FLOATS:
            token = _GGUF_FLOATS[token]
        if token.lower() in _BY_NAME:
            found = find_quant(token, engine).name
            model = model[: match.start()]
    model = re.sub(r"[-_.]gguf$", "", model, flags=re.IGNORECASE)
    return model or name.strip(), found


KV_CACHE_BYTES: dict[str, float] = {
    "f16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    # GGUF block formats for the KV cache (llama.cpp --cache-type-k/-v): 34/32 and 18/32 bytes.
    "q8_0": 34.0 / 32.0,
    "q4_0": 18.0 / 32.0,
}
"""Bytes per stored KV value for each cache precision."""


@lru_cache(maxsize=64)
def kv_bytes_per_value(kv_cache: str) -> float:
    """Bytes per KV-cache value for ``kv_cache`` (``f16``, ``fp8``, ``q8_0``, ``q4_0``)."""
    value = KV_CACHE_BYTES.get(kv_cache.strip().lower())
    if value is None:
        valid = ", ".join(KV_CACHE_BYTES)
        raise UsageError(f"unknown KV-cache type {kv_cache!r}: use one of {valid}")
    return value
