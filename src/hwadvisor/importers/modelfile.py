"""A model's shape from the files a user has: a Hugging Face ``config.json``, or the header of a
GGUF or safetensors file. Never the weights, never the network.

- :func:`geometry_from_config`: the keys of a ``config.json`` (Llama, Mistral, Qwen2/3, Qwen3-MoE,
  Mixtral, Gemma 2/3 with its ``text_config``, Phi-3, DeepSeek V3, gpt-oss), with the parameter
  count computed from the shape (:func:`hwadvisor.catalog.llms.count_params`).
- :func:`geometry_from_file`: a ``config.json``; a GGUF file (its metadata and tensor infos, which
  come before the weights: the parameter count is the tensors' own); a safetensors file (its JSON
  header: the count and dtype of the tensors; the shape from the ``config.json`` beside it). Every
  read is bounded; a truncated, corrupt or absurd header is one :class:`InputError` line.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import re
import stat
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.llms import LlmShape, count_params
from hwadvisor.errors import InputError

__all__ = [
    "GGUF_FILE_TYPES",
    "MAX_SAFETENSORS_HEADER",
    "geometry_from_config",
    "geometry_from_file",
]

#: A safetensors header larger than this is not one (DeepSeek V3's biggest shard's is ~2 MB).
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024
_MAX_COUNT = 1 << 24
"""More tensors, metadata keys or array items than any model has (a vocabulary is < 1M)."""
_MAX_STRING = 1 << 24
_MAX_DIMS = 8
_MAX_SIZE = 1 << 30
"""A dimension of a model's shape larger than this is not one."""
_MAX_NUMBERS = 65536
"""Arrays of numbers up to this long are kept (per-layer head counts); longer ones skipped."""

#: llama.cpp's ``general.file_type`` (``enum llama_ftype``) → the quantization's name.
GGUF_FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M",
    30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip

# ----------------------------------------------------------------------------------------------
# config.json

#: Keys a model type's config class fills in when its config.json leaves them out.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
    },
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256},
    "gemma": {"tie_word_embeddings": True},
}


def geometry_from_config(config: Mapping[str, Any], name: str) -> LlmGeometry:
    """The shape in a Hugging Face ``config.json`` (a multimodal one's ``text_config``);
    :class:`InputError` naming the key when one the shape needs is missing or not a number."""
    cfg = _text_config(config)
    where = f"config of {name}"

    def size(key: str, default: int | None = None) -> int:
        value = cfg.get(key, default)
        if value is None and default is None:
            raise InputError(f"{where}: no {key!r}: is it a language model's config.json?")
        return _positive(value, key, where)

    def optional(*keys: str) -> int | None:
        for key in keys:
            if cfg.get(key) is not None:
                return _positive(cfg[key], key, where)
        return None

    model_type = str(cfg.get("model_type", ""))
    layers = size("num_hidden_layers")
    hidden = size("hidden_size")
    heads = size("num_attention_heads")
    kv_heads = optional("num_key_value_heads") or heads
    vocab = size("vocab_size")
    experts = optional("num_experts", "num_local_experts", "n_routed_experts") or 0
    active = optional("num_experts_per_tok", "experts_per_token") if experts else None
    if experts and not active:
        raise InputError(f"{where}: {experts} experts but no 'num_experts_per_tok'")
    kv_lora = optional("kv_lora_rank")
    rope = optional("qk_rope_head_dim") if kv_lora else None
    if kv_lora:
        head_dim = optional("qk_nope_head_dim") or optional("head_dim") or hidden // heads
    else:
        head_dim = optional("head_dim") or hidden // heads
    dense_intermediate = optional("intermediate_size")
    intermediate = (optional("moe_intermediate_size") if experts else None) or dense_intermediate
    dense_layers = (optional("first_k_dense_replace") or 0) if experts else 0
    if dense_layers >= layers:
        raise InputError(f"{where}: 'first_k_dense_replace' leaves no MoE layer")
    window, sliding = _sliding(cfg, model_type, layers, where)
    geometry = LlmGeometry(
        name=name,
        params_total=0.0,
        params_active=0.0,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        intermediate=intermediate,
        experts=experts,
        experts_active=active or 0,
        sliding_window=window,
        sliding_layers=sliding,
        kv_lora_rank=kv_lora,
        rope_head_dim=rope,
        max_context=optional("max_position_embeddings"),
        tied_embeddings=cfg.get("tie_word_embeddings") is True,
    )
    shape = LlmShape(
        tied_embeddings=cfg.get("tie_word_embeddings") is True,
        shared_experts=(optional("n_shared_experts") or 0) if experts else 0,
        dense_layers=dense_layers,
        dense_intermediate=dense_intermediate if dense_layers else None,
        q_lora_rank=optional("q_lora_rank") if kv_lora else None,
        v_head_dim=optional("v_head_dim") if kv_lora else None,
    )
    total, reads = count_params(geometry, shape)
    return dataclasses.replace(geometry, params_total=total, params_active=reads)


def _text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    text = config.get("text_config")
    cfg = dict(text) if isinstance(text, Mapping) else dict(config)
    if (
        isinstance(text, Mapping)
        and "tie_word_embeddings" in config
        and "tie_word_embeddings" not in text
    ):
        cfg["tie_word_embeddings"] = config["tie_word_embeddings"]
    model_type = str(cfg.get("model_type") or config.get("model_type") or "")
    if isinstance(text, Mapping) and model_type == "gemma3":
        model_type = "gemma3_text"
    cfg["model_type"] = model_type
    return {**_DEFAULTS.get(model_type, {}), **cfg}


def _positive(value: object, key: str, where: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_SIZE:
        raise InputError(f"{where}: {key!r} must be a positive whole number, got {value!r}")
    return value


def _sliding(
    cfg: Mapping[str, Any], model_type: str, layers: int, where: str
) -> tuple[int | None, int]:
    """(window, how many layers use it) from a config's sliding-window keys."""
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False or model_type == "phi3":
        # Qwen configs name a window they do not use; Phi-3's is kept whole by the engines.
        return None, 0
    window = _positive(window, "sliding_window", where)
    if window >= int(cfg.get("max_position_embeddings") or 0) > 0:
        return None, 0  # a window as long as the context is no window
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        sliding = sum(1 for t in types[:layers] if t == "sliding_attention")
    elif cfg.get("sliding_window_pattern") is not None:
        pattern = _positive(cfg["sliding_window_pattern"], "sliding_window_pattern", where)
        sliding = layers - layers // pattern
    elif model_type == "gemma2":
        sliding = (layers + 1) // 2  # even layers local, odd global
    else:
        sliding = layers  # Mistral 7B v0.1: every layer
    return (window, sliding) if sliding else (None, 0)


# ----------------------------------------------------------------------------------------------
# Files


def geometry_from_file(path: Path) -> tuple[LlmGeometry, str | None]:
    """The shape in the file at ``path`` (a ``config.json``, a GGUF or a safetensors file) and
    the quantization it detects (``Q4_K_M``, ``bf16``, ``fp8`` ...; None for a config.json)."""
    with _open(path) as f:
        head = f.read(8)
        if head[:4] == b"GGUF":
            f.seek(0)
            return _gguf(f, path)
        if path.suffix == ".safetensors" or (
            len(head) == 8 and f.read(1) == b"{" and path.suffix != ".json"
        ):
            return _safetensors(path)
    if head.lstrip()[:1] == b"{" or path.suffix == ".json":
        return _config_file(path), None
    raise InputError(f"{path}: not a config.json, GGUF or safetensors file")


def _open(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (a FIFO would block, a device never
    end): :class:`InputError` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a directory, not a model file") from exc
    except OSError as exc:
        why = "no such file" if exc.errno == errno.ENOENT else (exc.strerror or str(exc))
        raise InputError(f"{path}: cannot be read: {why}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "is a directory, not a model file" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputError(f"{path}: {what}: hwadvisor reads model files")
    return os.fdopen(fd, "rb")


def _config_file(path: Path) -> LlmGeometry:
    from hwadvisor.inputfile import read_input

    try:
        config = json.loads(read_input(path))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise InputError(f"{path}: a config.json is a JSON object")
    name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    geometry = geometry_from_config(config, name)
    return dataclasses.replace(geometry, source=str(path))


# --- GGUF -------------------------------------------------------------------------------------

# type id → (struct format, size) of GGUF's scalar metadata values
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
    6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}  # fmt: skip
_STRING, _ARRAY = 8, 9


class _Reader:
    """Bounded little-endian reads of a file; running out is a one-line error."""

    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f = f
        self.path = path
        self.size = os.fstat(f.fileno()).st_size

    def bytes(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise InputError(f"{self.path}: the GGUF header is cut short (a partial download?)")
        return data

    def skip(self, n: int) -> None:
        if self.f.tell() + n > self.size:
            raise InputError(f"{self.path}: the GGUF header is cut short (a partial download?)")
        self.f.seek(n, os.SEEK_CUR)

    def unpack(self, fmt: str, n: int) -> Any:
        return struct.unpack(fmt, self.bytes(n))[0]

    def count(self, what: str, limit: int = _MAX_COUNT) -> int:
        n = int(self.unpack("<Q", 8))
        if n > limit:
            raise InputError(f"{self.path}: GGUF header claims {n:,} {what}: a corrupt file")
        return n

    def string(self) -> str:
        return self.bytes(self.count("bytes in a string", _MAX_STRING)).decode("utf-8", "replace")

    def skip_string(self) -> None:
        self.skip(self.count("bytes in a string", _MAX_STRING))


def _value(r: _Reader, kind: int, key: str) -> Any:
    """One metadata value; arrays of strings and long arrays are skipped and stand as their
    length (an ``int``) wrapped in a tuple ``("array", n)``."""
    if kind in _SCALARS:
        fmt, n = _SCALARS[kind]
        return r.unpack(fmt, n)
    if kind == _STRING:
        return r.string()
    if kind == _ARRAY:
        item = int(r.unpack("<I", 4))
        n = r.count("array items")
        if item == _STRING:
            for _ in range(n):
                r.skip_string()
            return ("array", n)
        if item not in _SCALARS:
            raise InputError(f"{r.path}: GGUF key {key!r} has arrays of unknown type {item}")
        fmt, width = _SCALARS[item]
        if n > _MAX_NUMBERS:
            r.skip(n * width)
            return ("array", n)
        return [
            struct.unpack_from(fmt, raw, i * width)[0]
            for raw in [r.bytes(n * width)]
            for i in range(n)
        ]
    raise InputError(f"{r.path}: GGUF key {key!r} has unknown type {kind}")


def _gguf(f: BinaryIO, path: Path) -> tuple[LlmGeometry, str | None]:
    r = _Reader(f, path)
    r.bytes(4)
    version = int(r.unpack("<I", 4))
    if version not in (2, 3):
        raise InputError(f"{path}: GGUF version {version}: hwadvisor reads versions 2 and 3")
    tensors = r.count("tensors")
    keys = r.count("metadata keys")
    meta: dict[str, Any] = {}
    for _ in range(keys):
        key = r.string()
        meta[key] = _value(r, int(r.unpack("<I", 4)), key)
    total = routed = 0
    has_output = False
    types: dict[int, int] = {}
    for _ in range(tensors):
        name = r.string()
        has_output = has_output or name == "output.weight"
        dims = int(r.unpack("<I", 4))
        if not 0 < dims <= _MAX_DIMS:
            raise InputError(f"{path}: GGUF tensor {name!r} has {dims} dimensions: a corrupt file")
        shape = [int(r.unpack("<Q", 8)) for _ in range(dims)]
        if any(d > 1 << 40 for d in shape):
            raise InputError(f"{path}: GGUF tensor {name!r} is {shape}: a corrupt file")
        kind = int(r.unpack("<I", 4))
        r.skip(8)  # offset of its data
        n = math.prod(shape)
        total += n
        types[kind] = types.get(kind, 0) + n
        if "_exps" in name:
            routed += n
    # No output.weight: the head is the token embedding (tied).
    geometry = dataclasses.replace(
        _gguf_geometry(meta, path, total, routed), tied_embeddings=not has_output
    )
    return geometry, _gguf_quant(meta, types)


def _gguf_geometry(meta: dict[str, Any], path: Path, total: int, routed: int) -> LlmGeometry:
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise InputError(f"{path}: GGUF file has no 'general.architecture': not a model?")
    where = f"{path} ({arch})"

    def get(key: str, required: bool = True) -> int | None:
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, list):  # per-layer values: the largest
            value = max(value, default=None)
        if value is None:
            if required:
                raise InputError(f"{where}: GGUF metadata has no '{arch}.{key}'")
            return None
        return _positive(value, f"{arch}.{key}", where)

    layers = get("block_count") or 0
    hidden = get("embedding_length") or 0
    heads = get("attention.head_count") or 0
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = (
        tokens[1]
        if isinstance(tokens, tuple)
        else len(tokens)
        if isinstance(tokens, list)
        else None
    )
    vocab = vocab or get("vocab_size")
    experts = get("expert_count", False) or 0
    used = get("expert_used_count", False) or 0 if experts else 0
    if experts and not used:
        raise InputError(f"{where}: {experts} experts but no '{arch}.expert_used_count'")
    kv_lora = get("attention.kv_lora_rank", False)
    rope = get("rope.dimension_count", False) if kv_lora else None
    key_length = get("attention.key_length", False)
    head_dim = key_length or hidden // heads
    if kv_lora and key_length and rope and key_length > rope:
        head_dim = key_length - rope
    window = get("attention.sliding_window", False)
    sliding = _gguf_sliding(meta, arch, layers) if window else 0
    inter = (get("expert_feed_forward_length", False) if experts else None) or get(
        "feed_forward_length", False
    )
    active = total - routed + routed * used / experts if experts and routed else total
    return LlmGeometry(
        name=path.stem,
        params_total=float(total),
        params_active=float(active),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=get("attention.head_count_kv", False) or heads,
        head_dim=head_dim,
        vocab=int(vocab or 0),
        intermediate=inter,
        experts=experts,
        experts_active=used,
        sliding_window=window if sliding else None,
        sliding_layers=sliding,
        kv_lora_rank=kv_lora,
        rope_head_dim=rope,
        max_context=get("context_length", False),
        source=str(path),
    )


def _gguf_sliding(meta: dict[str, Any], arch: str, layers: int) -> int:
    pattern = meta.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern, list):
        return sum(1 for p in pattern[:layers] if p)
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
        return layers - layers // pattern
    if arch == "gemma3":
        return layers - layers // 6
    if arch in ("gemma2", "gpt-oss"):
        return (layers + 1) // 2
    return layers


#: ggml tensor type id → name, for a file whose ``general.file_type`` is missing.
_GGML_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 29: "IQ1_M", 30: "BF16",
    34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}  # fmt: skip


def _gguf_quant(meta: dict[str, Any], types: dict[int, int]) -> str | None:
    file_type = meta.get("general.file_type")
    if isinstance(file_type, int) and file_type in GGUF_FILE_TYPES:
        return GGUF_FILE_TYPES[file_type]
    if not types:
        return None
    return _GGML_TYPES.get(max(types, key=lambda k: types[k]))


# --- safetensors ------------------------------------------------------------------------------

_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.safetensors$")
_DTYPES = {
    "BF16": "bf16", "F16": "fp16", "F32": "fp32", "F64": "fp64", "F8_E4M3": "fp8",
    "F8_E5M2": "fp8", "I8": "int8", "U8": "int8",
}  # fmt: skip
_SKIPPED = re.compile(r"(_scales?|_scale_inv|\.qzeros|\.g_idx|\.zeros|input_scale)$")


def _safetensors(path: Path) -> tuple[LlmGeometry, str | None]:
    shard = _SHARD.match(path.name)
    files = [path]
    if shard:
        count = int(shard["n"])
        files = [
            path.with_name(f"{shard['stem']}-{i:05d}-of-{count:05d}.safetensors")
            for i in range(1, count + 1)
        ]
        missing = [f.name for f in files if not f.exists()]
        if missing:
            raise InputError(
                f"{path}: shard {missing[0]} is missing: the count needs every shard's header"
            )
    config_path = path.parent / "config.json"
    if not config_path.is_file():
        raise InputError(
            f"{path}: a safetensors file holds no model shape: put the model's config.json "
            "beside it (or give the config.json)"
        )
    config = _config_file(config_path)
    from hwadvisor.inputfile import read_input

    raw = json.loads(read_input(config_path))
    quant_config = raw.get("quantization_config") if isinstance(raw, dict) else None
    bits = quant_config.get("bits", 4) if isinstance(quant_config, dict) else 4
    counts: dict[str, float] = {}
    for file in files:
        for dtype, n in _safetensors_counts(file, bits if isinstance(bits, int) else 4).items():
            counts[dtype] = counts.get(dtype, 0) + n
    total = sum(counts.values())
    if not total:
        raise InputError(f"{path}: the safetensors header lists no tensors")
    quant = _safetensors_quant(counts, quant_config)
    ratio = config.params_active / config.params_total
    name = shard["stem"] if shard else path.stem
    if name == "model":
        name = path.parent.name or name
    geometry = dataclasses.replace(
        config, name=name, params_total=total, params_active=total * ratio, source=str(path)
    )
    return geometry, quant


def _safetensors_counts(path: Path, bits: int) -> dict[str, float]:
    """Parameters per dtype in one safetensors file's header (packed 4-bit tensors unpacked;
    scales and zero points left out)."""
    with _open(path) as f:
        head = f.read(8)
        if len(head) != 8:
            raise InputError(f"{path}: too short to be a safetensors file")
        length = struct.unpack("<Q", head)[0]
        if length > MAX_SAFETENSORS_HEADER:
            raise InputError(
                f"{path}: safetensors header claims {length:,} bytes: a corrupt or other file"
            )
        text = f.read(length)
    if len(text) != length:
        raise InputError(f"{path}: the safetensors header is cut short (a partial download?)")
    try:
        header = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: the safetensors header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise InputError(f"{path}: the safetensors header is not a JSON object")
    counts: dict[str, float] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype") if isinstance(info, dict) else None
        shape = info.get("shape") if isinstance(info, dict) else None
        if (
            not isinstance(dtype, str)
            or not isinstance(shape, list)
            or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 1 << 40 for d in shape
            )
        ):
            raise InputError(f"{path}: tensor {name!r} has no valid dtype and shape")
        if _SKIPPED.search(name):
            continue
        n = float(math.prod(shape))
        if name.endswith("_blocks") and dtype == "U8":
            dtype, n = "MXFP4", n * 2  # two 4-bit values a byte
        elif name.endswith("qweight") and dtype == "I32":
            dtype, n = "INT4" if bits == 4 else f"INT{bits}", n * 32 / bits
        counts[dtype] = counts.get(dtype, 0) + n
    return counts


def _safetensors_quant(counts: dict[str, float], quant_config: object) -> str | None:
    if isinstance(quant_config, dict):
        method = quant_config.get("quant_method")
        if isinstance(method, str) and method:
            return method.lower()
    dtype = max(counts, key=lambda k: counts[k])
    return _DTYPES.get(dtype, dtype.lower())
