"""The model catalog: every row's numbers agree with its own shape, names find one model."""

from __future__ import annotations

import pytest

from hwadvisor.catalog.llms import (
    LLMS_RESOURCE,
    all_llms,
    count_params,
    find_llm,
    llm_names,
    llm_shape,
    lookup_key,
    parse_llms,
)
from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.toml import packaged_text
from hwadvisor.errors import UsageError

REQUIRED = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b",
    "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b",
    "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
    "qwen2.5-72b", "qwen2.5-coder-7b", "qwen2.5-coder-32b", "qwen3-0.6b", "qwen3-4b", "qwen3-8b",
    "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "mistral-7b-v0.3",
    "mistral-nemo-12b", "mistral-small-24b", "mixtral-8x7b", "mixtral-8x22b", "gemma-2-2b",
    "gemma-2-9b", "gemma-2-27b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "phi-3-mini",
    "phi-3-medium", "phi-4", "deepseek-v3", "deepseek-r1", "deepseek-r1-distill-qwen-7b",
    "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-32b",
    "deepseek-r1-distill-llama-8b", "deepseek-r1-distill-llama-70b", "gpt-oss-20b",
    "gpt-oss-120b",
]  # fmt: skip


def test_the_catalog_covers_the_models_people_run() -> None:
    assert len(all_llms()) >= 40
    assert set(REQUIRED) <= set(llm_names())
    assert all(m.source.startswith("https://huggingface.co/") and m.hf_id for m in all_llms())


@pytest.mark.parametrize("name", REQUIRED)
def test_each_rows_published_count_agrees_with_its_shape(name: str) -> None:
    model = find_llm(name)
    total, active = count_params(model, llm_shape(name))
    assert total == pytest.approx(model.params_total, rel=0.05)
    # every row counts the input embedding in params_active (gpt-oss's published count leaves
    # it out; the catalog adds it back): the speed model takes it out once, for every model
    assert model.params_active == pytest.approx(active, rel=0.05)


def test_published_figures_the_issue_names() -> None:
    assert find_llm("mixtral-8x7b").params_active == 12.9e9
    assert find_llm("qwen3-30b-a3b").params_active == 3.3e9
    assert find_llm("deepseek-v3").params_total == 671e9
    v3 = find_llm("deepseek-r1")
    assert (v3.layers, v3.kv_lora_rank, v3.rope_head_dim, v3.experts, v3.experts_active) == (
        61,
        512,
        64,
        256,
        8,
    )
    assert llm_shape("deepseek-r1").shared_experts == 1
    oss = find_llm("gpt-oss-120b")
    assert (oss.experts, oss.experts_active, oss.sliding_window, oss.head_dim, oss.kv_heads) == (
        128,
        4,
        128,
        64,
        8,
    )
    g3 = find_llm("gemma-3-27b")
    assert g3.sliding_window == 1024 and g3.sliding_layers == 62 - 62 // 6
    g2 = find_llm("gemma-2-9b")
    assert g2.sliding_window == 4096 and g2.sliding_layers == g2.layers // 2


def test_aliases_are_unique_and_every_loose_name_finds_its_model() -> None:
    seen: dict[str, str] = {}
    for model in all_llms():
        for name in (model.name, *model.aliases, model.hf_id or ""):
            assert seen.setdefault(name.casefold(), model.name) == model.name, name
            assert find_llm(name).name == model.name
            assert find_llm(name.upper()).name == model.name


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("meta-llama/Meta-Llama-3-8B", "llama-3-8b"),
        ("Meta-Llama-3-8B", "llama-3-8b"),
        ("llama3-8b", "llama-3-8b"),
        ("llama3:8b", "llama-3-8b"),
        ("LLAMA_3_8B", "llama-3-8b"),
        ("llama3.1:70b", "llama-3.1-70b"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("qwen3:30b-a3b", "qwen3-30b-a3b"),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-coder-32b"),
        ("google/gemma-3-12b-it", "gemma-3-12b"),
        ("gpt-oss:20b", "gpt-oss-20b"),
        ("  deepseek-r1:70b ", "deepseek-r1-distill-llama-70b"),
        # llama-bench's descriptions, release tags, older versions of one shape
        ("llama 7B", "llama-2-7b"),
        ("LLaMA-7B", "llama-2-7b"),
        ("qwen3moe 30B.A3B", "qwen3-30b-a3b"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
        ("Mistral-7B-Instruct-v0.2", "mistral-7b-v0.3"),
    ],
)
def test_names_people_type(typed: str, expected: str) -> None:
    assert find_llm(typed).name == expected


def test_an_unknown_model_names_the_three_nearest() -> None:
    with pytest.raises(UsageError) as caught:
        find_llm("llama-3.1-9b")
    message = str(caught.value)
    assert "\n" not in message and "'llama-3.1-9b'" in message
    assert "llama-3.1-8b" in message and message.count(",") >= 2


def test_a_name_two_models_share_loosely_is_refused_not_guessed() -> None:
    text = _catalog_with(("llama-3.1-8b", "x-1.2-3b", ""), ("llama-3.1-70b", "x-12-3b", ""))
    catalog = parse_llms(text)
    assert catalog.loose[lookup_key("x-1.2-3b")] is None


def _catalog_with(*renames: tuple[str, str, str]) -> str:
    text = packaged_text(LLMS_RESOURCE)
    for old, new, _ in renames:
        text = text.replace(f'name = "{old}"', f'name = "{new}"', 1)
    return text


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("layers = 32", "layers = -32", "entry 1 ('llama-2-7b'): key 'layers'"),
        ("heads = 32", "heads = 30", "entry 1 ('llama-2-7b'): heads (30) is not a multiple"),
        ("layers = 32", "layers = 32\nlayerz = 3", "entry 1 ('llama-2-7b'): unknown key 'layerz'"),
        ('source = "https://', 'source = "http://', "entry 1 ('llama-2-7b'): source must be"),
        ('aliases = ["llama2:7b"', 'aliases = ["llama2:13b"', "'llama2:13b' is already"),
        ("params_active = 6.74e9", "params_active = 6e9", "a dense model's params_active"),
    ],
)
def test_a_bad_row_is_one_line_naming_it(old: str, new: str, message: str) -> None:
    text = packaged_text(LLMS_RESOURCE)
    assert old in text
    with pytest.raises(CatalogError) as caught:
        parse_llms(text.replace(old, new, 1))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_catalog_agrees_with_the_shapes_written_out_for_the_serving_tests() -> None:
    """Two independent writings of the same configs (the serving tests' and the catalog's)."""
    from hwadvisor.catalog.llms import find_llm
    from tests.helpers import llms as written

    shapes = [v for v in vars(written).values() if type(v).__name__ == "LlmGeometry"]
    assert len(shapes) >= 4
    for shape in shapes:
        row = find_llm(shape.name)
        for key in ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "experts"):
            assert getattr(row, key) == getattr(shape, key), (shape.name, key)
        assert row.params_total == pytest.approx(shape.params_total, rel=0.03), shape.name
        assert row.params_active == pytest.approx(shape.params_active, rel=0.06), shape.name


def test_a_repository_under_another_owner_finds_the_model_it_packs() -> None:
    """Quantizers publish a model under their own name ("unsloth/Qwen3-8B-GGUF",
    "mlx-community/Qwen3-8B-4bit"): every row with a Hugging Face id is found so, where before
    a bare name under another owner was found only with a tuned suffix ("-Instruct")."""
    from hwadvisor.advise.serving import model_geometry

    for m in all_llms():
        if not m.hf_id:
            continue
        base = m.hf_id.rsplit("/", 1)[-1]
        for typed, engine in (
            (f"unsloth/{base}-GGUF", "llama.cpp"),
            (f"someone/{base}", "llama.cpp"),
            (f"mlx-community/{base}-4bit", "mlx"),
        ):
            assert model_geometry(typed, engine)[0].name == m.name, typed
    assert find_llm("microsoft/Phi-3.5-mini-instruct").max_context == 131072
