"""The KV cache of a model shape: the standard formula, sliding windows and latent attention."""

from __future__ import annotations

import pytest

from hwadvisor.catalog.llm_geometry import LlmGeometry
from tests.helpers.llms import LLAMA_8B


def test_kv_cache_is_two_layers_heads_dim_bytes_tokens() -> None:
    # 2 · 32 · 8 · 128 · 2 bytes = 128 KiB per token; 8,192 tokens: 1 GiB.
    assert LLAMA_8B.kv_bytes(8192, 2) == pytest.approx(2 * 32 * 8 * 128 * 2 * 8192)
    assert LLAMA_8B.kv_bytes(8192, 2, sequences=4) == pytest.approx(4 * 2**30)


@pytest.mark.parametrize("context", [512, 4096, 32768])
def test_sliding_layers_stop_growing_at_their_window(context: int) -> None:
    half = LlmGeometry(**{**LLAMA_8B.__dict__, "sliding_window": 4096, "sliding_layers": 16})
    full_layers = 16 * 2 * 8 * 128 * context
    window_layers = 16 * 2 * 8 * 128 * min(context, 4096)
    assert half.kv_bytes(context, 1) == pytest.approx(full_layers + window_layers)
    assert half.kv_bytes(context, 1) <= LLAMA_8B.kv_bytes(context, 1)


def test_latent_attention_stores_the_compressed_width() -> None:
    # DeepSeek V3: 61 layers, kv_lora_rank 512 + rope 64 = 576 values per layer and token.
    v3 = LlmGeometry(
        name="deepseek-v3",
        params_total=671e9,
        params_active=37e9,
        layers=61,
        hidden=7168,
        heads=128,
        kv_heads=128,
        head_dim=128,
        vocab=129280,
        experts=256,
        experts_active=8,
        kv_lora_rank=512,
        rope_head_dim=64,
    )
    assert v3.moe
    assert v3.kv_values_per_token(4096) == 61 * 576


def test_a_shape_and_a_gpu_row_hash_as_their_equals_do() -> None:
    """The hashes are cheap (a few fields, for the caches keyed by them) and still those of
    equality: equal objects hash alike, and one field changed makes an unequal object."""
    import dataclasses

    from hwadvisor.catalog.llms import all_llms
    from hwadvisor.catalog.peaks import load_catalog

    for thing in [*all_llms(), *load_catalog()]:
        twin = dataclasses.replace(thing)
        assert twin == thing and hash(twin) == hash(thing)
        other = dataclasses.replace(thing, name=thing.name + " (copy)")
        assert other != thing
        assert len({thing, twin, other}) == 2
