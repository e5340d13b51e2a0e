"""A few model shapes for the serving tests, written out from the models' configs apart from
the catalog (``catalog/llms.toml``): ``tests/test_llms.py`` checks that the two agree."""

from __future__ import annotations

from hwadvisor.catalog.llm_geometry import LlmGeometry

LLAMA_8B = LlmGeometry(
    name="llama-3.1-8b",
    params_total=8.03e9,
    params_active=8.03e9,
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    vocab=128256,
    intermediate=14336,
)
LLAMA_70B = LlmGeometry(
    name="llama-3.1-70b",
    params_total=70.6e9,
    params_active=70.6e9,
    layers=80,
    hidden=8192,
    heads=64,
    kv_heads=8,
    head_dim=128,
    vocab=128256,
    intermediate=28672,
)
MIXTRAL_8X7B = LlmGeometry(
    name="mixtral-8x7b",
    params_total=46.7e9,
    params_active=12.9e9,
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    vocab=32000,
    intermediate=14336,
    experts=8,
    experts_active=2,
)
QWEN3_30B_A3B = LlmGeometry(
    name="qwen3-30b-a3b",
    params_total=30.5e9,
    params_active=3.3e9,
    layers=48,
    hidden=2048,
    heads=32,
    kv_heads=4,
    head_dim=128,
    vocab=151936,
    intermediate=768,
    experts=128,
    experts_active=8,
)
GPT_OSS_20B = LlmGeometry(
    name="gpt-oss-20b",
    params_total=21e9,
    params_active=4.19e9,  # input embedding included, as the catalog counts it
    layers=24,
    hidden=2880,
    heads=64,
    kv_heads=8,
    head_dim=64,
    vocab=201088,
    intermediate=2880,
    experts=32,
    experts_active=4,
    sliding_window=128,
    sliding_layers=12,
)
ALL = (LLAMA_8B, LLAMA_70B, MIXTRAL_8X7B, QWEN3_30B_A3B, GPT_OSS_20B)
