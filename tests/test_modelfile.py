"""A model's shape from a config.json or a GGUF / safetensors header, and the one-line errors of
files that are cut, corrupt or lie about their sizes."""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog.llms import find_llm
from hwadvisor.errors import InputError
from hwadvisor.importers.modelfile import (
    _GGML_TYPES,
    GGUF_FILE_TYPES,
    geometry_from_config,
    geometry_from_file,
)

FIXTURES = Path(__file__).parent / "fixtures" / "modelfiles"
CONFIGS = sorted(FIXTURES.glob("*.config.json"))
SHAPE = [
    "layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate", "experts",
    "experts_active", "sliding_window", "sliding_layers", "kv_lora_rank", "rope_head_dim",
    "max_context",
]  # fmt: skip


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_public_config_gives_its_catalog_row(path: Path) -> None:
    row = find_llm(path.name.removesuffix(".config.json"))
    geometry, quant = geometry_from_file(path)
    assert quant is None and geometry.source == str(path)
    assert {k: getattr(geometry, k) for k in SHAPE} == {k: getattr(row, k) for k in SHAPE}
    assert geometry.params_total == pytest.approx(row.params_total, rel=0.03)
    # tie_word_embeddings (or the model type's default) as the catalog records it
    assert geometry.tied_embeddings == row.tied_embeddings


def test_config_json_keys_of_each_family() -> None:
    load = lambda name: json.loads((FIXTURES / f"{name}.config.json").read_text())  # noqa: E731
    oss = geometry_from_config(load("gpt-oss-20b"), "oss")
    assert (oss.experts, oss.experts_active, oss.sliding_layers) == (32, 4, 12)
    assert oss.params_active < oss.params_total / 4
    v3 = geometry_from_config(load("deepseek-v3"), "v3")
    assert v3.kv_values_per_token(4096) == 61 * (512 + 64)
    # A Qwen config names a window it does not use (use_sliding_window: false).
    qwen = {**load("qwen3-30b-a3b"), "sliding_window": 32768}
    assert geometry_from_config(qwen, "q").sliding_layers == 0
    # Mistral 7B v0.1: one window on every layer.
    mistral = {**load("llama-3.1-8b"), "model_type": "mistral", "sliding_window": 4096}
    m = geometry_from_config(mistral, "m")
    assert (m.sliding_window, m.sliding_layers) == (4096, 32)
    # Gemma 2 alternates local and global layers.
    gemma2 = {**load("llama-3.1-8b"), "model_type": "gemma2", "sliding_window": 4096}
    assert geometry_from_config(gemma2, "g").sliding_layers == 16
    # No head_dim: hidden / heads.
    assert geometry_from_config(load("llama-3.1-8b"), "l").head_dim == 128


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": None}, "no 'num_hidden_layers'"),
        ({"hidden_size": "4096"}, "'hidden_size' must be a positive whole number, got '4096'"),
        ({"num_attention_heads": True}, "'num_attention_heads' must be a positive whole number"),
        ({"vocab_size": 10**12}, "'vocab_size' must be a positive whole number"),
        ({"num_local_experts": 8}, "8 experts but no 'num_experts_per_tok'"),
    ],
)
def test_a_config_without_a_shape_is_one_line(change: dict[str, Any], message: str) -> None:
    config = json.loads((FIXTURES / "llama-3.1-8b.config.json").read_text())
    config.update(change)
    config = {k: v for k, v in config.items() if v is not None}
    with pytest.raises(InputError, match=message):
        geometry_from_config(config, "x")


def test_a_config_file_that_is_not_json_or_not_a_model(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        geometry_from_file(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        geometry_from_file(bad)
    with pytest.raises(InputError, match="no such file"):
        geometry_from_file(tmp_path / "absent.gguf")
    with pytest.raises(InputError, match="directory"):
        geometry_from_file(tmp_path)
    other = tmp_path / "notes.bin"
    other.write_bytes(b"\x00\x01plain bytes")
    with pytest.raises(InputError, match=r"not a config\.json, GGUF or safetensors"):
        geometry_from_file(other)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        geometry_from_file(fifo)


# --- GGUF -------------------------------------------------------------------------------------


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, value: Any) -> bytes:
    if isinstance(value, str):
        return _s(key) + struct.pack("<I", 8) + _s(value)
    if isinstance(value, list) and value and isinstance(value[0], str):
        return _s(key) + struct.pack("<IIQ", 9, 8, len(value)) + b"".join(_s(v) for v in value)
    if isinstance(value, list):
        return (
            _s(key) + struct.pack("<IIQ", 9, 4, len(value)) + struct.pack(f"<{len(value)}I", *value)
        )
    if isinstance(value, float):
        return _s(key) + struct.pack("<If", 6, value)
    return _s(key) + struct.pack("<II", 4, value)


def _tensor(name: str, *dims: int, kind: int = 12) -> bytes:
    return _s(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, kind, 0)


def _gguf(meta: dict[str, Any], tensors: list[bytes], version: int = 3) -> bytes:
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta))
    return head + b"".join(_kv(k, v) for k, v in meta.items()) + b"".join(tensors)


# A 2-layer MoE in llama.cpp's spelling: 4 experts, 2 used; 64 wide, 8 heads, 2 KV heads.
MOE_META: dict[str, Any] = {
    "general.architecture": "qwen3moe",
    "general.name": "tiny",
    "general.file_type": 15,
    "qwen3moe.block_count": 2,
    "qwen3moe.context_length": 4096,
    "qwen3moe.embedding_length": 64,
    "qwen3moe.feed_forward_length": 256,
    "qwen3moe.expert_feed_forward_length": 32,
    "qwen3moe.attention.head_count": 8,
    "qwen3moe.attention.head_count_kv": 2,
    "qwen3moe.attention.key_length": 16,
    "qwen3moe.expert_count": 4,
    "qwen3moe.expert_used_count": 2,
    "qwen3moe.rope.freq_base": 1e6,
    "tokenizer.ggml.tokens": [f"t{i}" for i in range(100)],
    "tokenizer.ggml.token_type": [1] * 100,
}
MOE_TENSORS = [_tensor("token_embd.weight", 64, 100), _tensor("output.weight", 64, 100)] + [
    t
    for layer in range(2)
    for t in (
        _tensor(f"blk.{layer}.attn_q.weight", 64, 128),
        _tensor(f"blk.{layer}.attn_k.weight", 64, 32),
        _tensor(f"blk.{layer}.attn_v.weight", 64, 32),
        _tensor(f"blk.{layer}.attn_output.weight", 128, 64),
        _tensor(f"blk.{layer}.ffn_gate_exps.weight", 64, 32, 4),
        _tensor(f"blk.{layer}.ffn_up_exps.weight", 64, 32, 4),
        _tensor(f"blk.{layer}.ffn_down_exps.weight", 32, 64, 4),
        _tensor(f"blk.{layer}.ffn_gate_inp.weight", 64, 4, kind=0),
    )
]
DENSE = 2 * 64 * 100 + 2 * (64 * 128 + 2 * 64 * 32 + 128 * 64 + 64 * 4)
EXPERTS = 2 * 3 * 64 * 32 * 4


def test_a_gguf_header_gives_shape_count_and_quant(tmp_path: Path) -> None:
    path = tmp_path / "tiny-Q4_K_M.gguf"
    path.write_bytes(_gguf(MOE_META, MOE_TENSORS) + b"\xff" * 4096)  # "weights" never read
    geometry, quant = geometry_from_file(path)
    assert quant == "Q4_K_M"
    assert (geometry.layers, geometry.hidden, geometry.heads, geometry.kv_heads) == (2, 64, 8, 2)
    assert (geometry.head_dim, geometry.vocab, geometry.intermediate) == (16, 100, 32)
    assert (geometry.experts, geometry.experts_active, geometry.max_context) == (4, 2, 4096)
    assert geometry.params_total == DENSE + EXPERTS
    assert geometry.params_active == DENSE + EXPERTS / 2
    assert geometry.name == "tiny-Q4_K_M" and geometry.source == str(path)
    assert not geometry.tied_embeddings  # it has an output.weight of its own


def test_a_gguf_with_sliding_windows_and_no_file_type(tmp_path: Path) -> None:
    meta = {
        "general.architecture": "gemma3",
        "gemma3.block_count": 12,
        "gemma3.embedding_length": 64,
        "gemma3.feed_forward_length": 128,
        "gemma3.attention.head_count": 4,
        "gemma3.attention.head_count_kv": [1] * 12,
        "gemma3.attention.sliding_window": 1024,
        "gemma3.vocab_size": 50,
    }
    path = tmp_path / "g.gguf"
    path.write_bytes(_gguf(meta, [_tensor("token_embd.weight", 64, 50, kind=8)], version=2))
    geometry, quant = geometry_from_file(path)
    assert quant == "Q8_0"  # the tensors' own type
    assert geometry.tied_embeddings  # no output.weight: the token embedding is the head
    assert (geometry.sliding_window, geometry.sliding_layers) == (1024, 10)
    assert (geometry.kv_heads, geometry.head_dim, geometry.vocab) == (1, 16, 50)


def _cut_points() -> list[int]:
    size = len(_gguf(MOE_META, MOE_TENSORS))
    return [3, 4, 10, 30, 100, size // 2, size - 1]


@pytest.mark.parametrize("cut", _cut_points())
def test_a_cut_gguf_is_one_line(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "cut.gguf"
    path.write_bytes(_gguf(MOE_META, MOE_TENSORS)[:cut])
    with pytest.raises(InputError) as caught:
        geometry_from_file(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "GGUF version 1"),
        (b"GGUF" + struct.pack("<IQQ", 3, 2**60, 0), "claims 1,152,921,504,606,846,976 tensors"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 2**40), "metadata keys: a corrupt file"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**50), "bytes in a string"),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _s("k") + struct.pack("<I", 99),
            "unknown type 99",
        ),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _s("k") + struct.pack("<IIQ", 9, 4, 2**40),
            "array items",
        ),
        (_gguf({"general.name": "x"}, []), "no 'general.architecture'"),
        (_gguf({"general.architecture": "llama"}, []), "no 'llama.block_count'"),
        (
            _gguf(MOE_META, [_s("t") + struct.pack("<I", 40)]),
            "tensor 't' has 40 dimensions",
        ),
    ],
)
def test_a_corrupt_gguf_is_one_line(tmp_path: Path, raw: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=message) as caught:
        geometry_from_file(path)
    assert "\n" not in str(caught.value)


# --- safetensors ------------------------------------------------------------------------------


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset]}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 64)


def test_a_safetensors_file_counts_its_tensors_with_the_config_beside_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes((FIXTURES / "qwen3-30b-a3b.config.json").read_bytes())
    path = tmp_path / "model.safetensors"
    _safetensors(path, {"a.weight": ("BF16", [1000, 1000]), "b.weight": ("BF16", [10, 100])})
    geometry, quant = geometry_from_file(path)
    assert quant == "bf16"
    assert geometry.params_total == 1_001_000
    ratio = 3.35282176 / 30.53191168  # the config's active share
    assert geometry.params_active == pytest.approx(1_001_000 * ratio, rel=1e-3)
    assert geometry.layers == 48 and geometry.name == tmp_path.name


def test_sharded_safetensors_read_every_shards_header(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes((FIXTURES / "llama-3.1-8b.config.json").read_bytes())
    for i in (1, 2):
        _safetensors(tmp_path / f"model-0000{i}-of-00002.safetensors", {"w": ("F16", [100, i])})
    geometry, quant = geometry_from_file(tmp_path / "model-00002-of-00002.safetensors")
    assert geometry.params_total == 300 and quant == "fp16"
    (tmp_path / "model-00001-of-00002.safetensors").unlink()
    with pytest.raises(InputError, match=r"shard model-00001-of-00002\.safetensors is missing"):
        geometry_from_file(tmp_path / "model-00002-of-00002.safetensors")


def test_packed_and_scaled_tensors_count_their_values(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "gpt-oss-20b.config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    path = tmp_path / "model.safetensors"
    _safetensors(
        path,
        {
            "mlp.experts.gate_up_proj_blocks": ("U8", [4, 10, 16]),  # 2 values a byte
            "mlp.experts.gate_up_proj_scales": ("U8", [4, 10]),  # left out
            "attn.q.weight": ("BF16", [10, 10]),
        },
    )
    geometry, quant = geometry_from_file(path)
    assert geometry.params_total == 4 * 10 * 16 * 2 + 100
    assert quant == "mxfp4"  # the config's quant_method
    fp8 = {"w.weight": ("F8_E4M3", [100, 100]), "w.weight_scale_inv": ("F32", [1, 1])}
    del config["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    _safetensors(path, fp8)
    geometry, quant = geometry_from_file(path)
    assert (geometry.params_total, quant) == (10_000, "fp8")


def test_a_safetensors_file_needs_its_config(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    _safetensors(path, {"w": ("BF16", [2, 2])})
    with pytest.raises(InputError, match=r"put the model's config\.json beside it"):
        geometry_from_file(path)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x01\x00", "too short"),
        (struct.pack("<Q", 2**40) + b"{", "claims 1,099,511,627,776 bytes"),
        (struct.pack("<Q", 100) + b'{"w": ', "cut short"),
        (struct.pack("<Q", 6) + b"{oops}", "not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 24) + b'{"w": {"shape": [1, 2]}}', "tensor 'w' has no valid dtype"),
        (struct.pack("<Q", 2) + b"{}", "lists no tensors"),
    ],
)
def test_a_corrupt_safetensors_header_is_one_line(tmp_path: Path, raw: bytes, message: str) -> None:
    (tmp_path / "config.json").write_bytes((FIXTURES / "llama-3.1-8b.config.json").read_bytes())
    path = tmp_path / "model.safetensors"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=message) as caught:
        geometry_from_file(path)
    assert "\n" not in str(caught.value)


def test_geometry_is_a_plain_value() -> None:
    geometry, _ = geometry_from_file(CONFIGS[0])
    assert dataclasses.replace(geometry) == geometry


# Ternary BitNet types: no model of the catalog ships in them, and no rule for their speed.
_UNSIZED_GGUF_TYPES = {"TQ1_0", "TQ2_0"}


@pytest.mark.parametrize(
    "name", sorted({*GGUF_FILE_TYPES.values(), *_GGML_TYPES.values()} - _UNSIZED_GGUF_TYPES)
)
def test_every_quantization_a_gguf_header_names_can_be_sized(name: str) -> None:
    """A file the header reader understands must not then fail as an 'unknown quantization'
    (a gpt-oss GGUF's header says MXFP4_MOE; llama-quantize's Q4_K means Q4_K_M)."""
    from hwadvisor.advise.serve.quant import LLAMA_CPP_FAMILY, find_quant

    quant = find_quant(name)
    assert 1.5 <= quant.bits_per_weight <= 32
    assert set(LLAMA_CPP_FAMILY) <= set(quant.engines)


def test_gguf_quantizations_are_ordered_by_their_bits() -> None:
    """The sizes llama-quantize gives for one model grow with the format: so must the bits."""
    from hwadvisor.advise.serve.quant import find_quant

    ladder = ["Q2_K_S", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S",
              "Q5_K_M", "Q6_K", "Q8_0", "F16", "F32"]  # fmt: skip
    bits = [find_quant(q).bits_per_weight for q in ladder]
    assert bits == sorted(bits) and len(set(bits)) == len(bits)
    iq = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S",
          "IQ3_M", "IQ4_XS", "IQ4_NL"]  # fmt: skip
    bits = [find_quant(q).bits_per_weight for q in iq]
    assert bits == sorted(bits) and len(set(bits)) == len(bits)


def test_a_gpt_oss_gguf_whose_header_says_mxfp4_moe_is_sized_in_mxfp4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from hwadvisor.cli import main

    path = tmp_path / "tiny-mxfp4.gguf"
    path.write_bytes(_gguf({**MOE_META, "general.file_type": 38}, MOE_TENSORS))
    code = main(["advise", "--serve", str(path), "--assume-gpu", "RTX 3070", "--json", "-"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["inference"]["quant"] == "MXFP4"
