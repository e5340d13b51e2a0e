"""The training-memory model: its byte counts against the published rules, its verdicts against
documented practice (src/hwadvisor/catalog/memory_cases.toml: every case there carries the public
source it comes from, quoted in the comment above it), the properties a memory model must have,
and bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hwadvisor.memory import (
    DEFAULT_OVERHEAD_BYTES,
    DEFAULT_USABLE_FRACTION,
    EXPECTATIONS,
    RESNET50_ACTIVATION_BYTES_PER_IMAGE,
    MemoryCase,
    MemoryModelError,
    MemorySpec,
    TransformerShape,
    activation_bytes,
    agrees,
    fit_verdict,
    largest_batch_that_fits,
    llama_parameters,
    load_memory_cases,
    lora_trainable_parameters,
    memory_per_gpu,
    spec_from_mapping,
    spec_from_workload,
)
from hwadvisor.workloads import WorkloadError, custom_workload, get_workload

GIB = 2**30
GB = 1e9
CASES = load_memory_cases()


def _states(spec: MemorySpec) -> int:
    """Weights + gradients + optimizer states of one GPU, without activations or overhead."""
    b = memory_per_gpu(replace(spec, overhead_bytes=0))
    return b.weights + b.gradients + b.optimizer


# --------------------------------------------------------------------------------------------
# Bytes per parameter: the published rules


def test_fp32_adam_is_16_bytes_per_parameter() -> None:
    # 4 weights + 4 gradients + 8 Adam moments (model_memory_anatomy.md; the ZeRO accounting).
    spec = MemorySpec(parameters=1e9, precision="fp32")
    b = memory_per_gpu(spec)
    assert (b.weights, b.gradients, b.optimizer) == (4 * 10**9, 4 * 10**9, 8 * 10**9)
    assert _states(replace(spec, precision="tf32")) == 16 * 10**9


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_adam_is_18_bytes_replicated_and_16_sharded(precision: str) -> None:
    # "A typical model trained in mixed precision with AdamW requires 18 bytes per model
    # parameter" (model_memory_anatomy.md): ddp. ZeRO/FSDP count 2 + 2 + 12 = 16 before sharding.
    spec = MemorySpec(parameters=1e9, precision=precision)
    assert _states(spec) == 18 * 10**9
    assert _states(replace(spec, strategy="fsdp")) == 16 * 10**9
    assert _states(replace(spec, strategy="zero3", gpus=8)) == 2 * 10**9


def test_deepspeed_tutorial_figures_for_gpt2_1_5b() -> None:
    # "the Adam optimizer states for the model consume 18GB ... By using ZeRO stage 1 ... the
    # per-device memory consumption can be reduced to 2.25GB" (DeepSpeed docs/_tutorials/zero.md).
    ddp = MemorySpec(parameters=1.5e9, precision="fp16", gpus=8)
    assert memory_per_gpu(ddp).optimizer == pytest.approx(18 * GB)
    assert memory_per_gpu(replace(ddp, strategy="zero1")).optimizer == pytest.approx(2.25 * GB)


@pytest.mark.parametrize(
    ("optimizer", "state_bytes"), [("adam", 8), ("adam8bit", 2), ("sgd_momentum", 4), ("sgd", 0)]
)
def test_optimizer_states_per_parameter(optimizer: str, state_bytes: int) -> None:
    spec = MemorySpec(parameters=1e9, precision="fp32", optimizer=optimizer)
    assert memory_per_gpu(spec).optimizer == state_bytes * 10**9


@pytest.mark.parametrize(
    ("bits", "double_quant", "bytes_per_parameter"),
    [(32, False, 4), (16, False, 2), (8, False, 1), (4, False, 4.5 / 8), (4, True, 4.127 / 8)],
)
def test_frozen_weights_at_the_base_bits(
    bits: int, double_quant: bool, bytes_per_parameter: float
) -> None:
    # NF4: 4 bits + a 32-bit constant per 64 weights = 4.5; double quantization: 4.127 (QLoRA §3).
    spec = MemorySpec(
        parameters=1e9, trainable_parameters=1, base_weight_bits=bits, double_quant=double_quant
    )
    frozen = memory_per_gpu(spec).weights - 2  # the one trained bf16 weight
    assert frozen == pytest.approx(bytes_per_parameter * 1e9, rel=1e-3)


def test_quantized_bases_keep_embeddings_in_16_bit() -> None:
    quantized = MemorySpec(parameters=1e9, trainable_parameters=1, base_weight_bits=4)
    with_head = replace(quantized, unquantized_parameters=1e8)
    assert memory_per_gpu(with_head).weights - memory_per_gpu(quantized).weights == pytest.approx(
        1e8 * (2 - 4.5 / 8), rel=1e-6
    )
    # In a 16-bit base nothing changes: every frozen weight is 16-bit already.
    plain = replace(quantized, base_weight_bits=16)
    assert memory_per_gpu(replace(plain, unquantized_parameters=1e8)) == memory_per_gpu(plain)


def test_lora_trains_only_the_adapters() -> None:
    full = MemorySpec(parameters=7e9)
    lora = replace(full, trainable_parameters=2e7)
    b = memory_per_gpu(lora)
    assert b.gradients == 4 * 2 * 10**7  # fp32 gradients of the adapters only
    assert b.weights == pytest.approx(2 * 7e9, rel=1e-3)  # the base in bf16, adapters too
    assert _states(lora) < _states(full) / 8


def test_paged_optimizer_states_are_counted_but_not_held_on_the_gpu() -> None:
    spec = MemorySpec(parameters=1e9, trainable_parameters=1e8, master_weights=False)
    paged = replace(spec, paged_optimizer=True)
    b, p = memory_per_gpu(spec), memory_per_gpu(paged)
    assert p.optimizer == b.optimizer == 8 * 10**8
    assert p.optimizer_paged == 8 * 10**8
    assert p.total == b.total - 8 * 10**8


def test_llama_shapes_give_the_published_sizes() -> None:
    # LLaMA-7B is "6.7B" and LLaMA-65B "65.2B" parameters; QLoRA's r=64 on every linear layer.
    assert llama_parameters(32, 4096, 11008, 32000) == 6_738_149_376
    assert llama_parameters(80, 8192, 22016, 32000) == pytest.approx(65.2e9, rel=0.01)
    assert lora_trainable_parameters(80, 8192, 64, "all", 22016) == 799_539_200
    assert lora_trainable_parameters(32, 4096, 8, "qv") == 4_194_304
    with pytest.raises(MemoryModelError, match="intermediate"):
        lora_trainable_parameters(32, 4096, 8, "all")


# --------------------------------------------------------------------------------------------
# Activations


def test_transformer_activations_follow_korthikanti() -> None:
    # s·h·(34 + 5·a·s/h) bytes per layer and sequence with 16-bit activations (eq. 2).
    shape = TransformerShape(layers=24, hidden=1024, heads=16, sequence_length=512)
    spec = MemorySpec(parameters=3.4e8, transformer=shape, batch_size=4)
    per_layer = 512 * 1024 * (34 + 5 * 16 * 512 / 1024)
    assert activation_bytes(spec) == pytest.approx(4 * 24 * per_layer)
    assert activation_bytes(replace(spec, precision="fp32")) == pytest.approx(
        2 * 4 * 24 * per_layer
    )
    flash = replace(spec, transformer=replace(shape, flash_attention=True))
    assert activation_bytes(flash) == pytest.approx(4 * 24 * 512 * 1024 * 34)


def test_checkpointing_keeps_each_layers_input_and_one_layer() -> None:
    shape = TransformerShape(layers=32, hidden=4096, heads=32, sequence_length=2048)
    spec = MemorySpec(parameters=7e9, transformer=shape, gradient_checkpointing=True)
    one_layer = 2048 * 4096 * (34 + 5 * 32 * 2048 / 4096)
    assert activation_bytes(spec) == pytest.approx(32 * 2 * 2048 * 4096 + one_layer)
    assert activation_bytes(spec) < activation_bytes(spec, checkpointing=False) / 10


def test_logits_count_when_the_vocabulary_is_given() -> None:
    shape = TransformerShape(layers=1, hidden=64, heads=1, sequence_length=100, vocab_size=1000)
    spec = MemorySpec(parameters=1e6, transformer=shape)
    without = replace(spec, transformer=replace(shape, vocab_size=None))
    assert activation_bytes(spec) - activation_bytes(without) == pytest.approx(100 * 1000 * 8)


def test_per_sample_activations_and_their_checkpointing() -> None:
    spec = MemorySpec(parameters=2.6e7, activation_bytes_per_sample=44e6, batch_size=10)
    assert activation_bytes(spec) == pytest.approx(440e6)
    # Chen et al. 2016: √n segments keep about 2/√n of the activations.
    assert activation_bytes(replace(spec, activation_layers=64), checkpointing=True) == (
        pytest.approx(440e6 * 2 / 8)
    )
    no_activations = MemorySpec(parameters=2.6e7, batch_size=10)
    assert activation_bytes(no_activations) == 0
    assert largest_batch_that_fits(no_activations, 8 * GIB) == 2**24  # the cap


def test_resnet50_counted_activations_match_the_usual_figure() -> None:
    # The usual "≈ 50 MB per image in mixed precision", before transient buffers; fp32 twice that.
    assert 40e6 <= RESNET50_ACTIVATION_BYTES_PER_IMAGE["mixed"] <= 50e6
    assert RESNET50_ACTIVATION_BYTES_PER_IMAGE["fp32"] == pytest.approx(
        2 * RESNET50_ACTIVATION_BYTES_PER_IMAGE["mixed"], rel=0.05
    )


def test_overhead_and_usable_fraction_defaults() -> None:
    # 1.3 GB of kernels (model_memory_anatomy.md) and 5 % for fragmentation and transients.
    assert DEFAULT_OVERHEAD_BYTES == 1343 * 2**20
    assert DEFAULT_USABLE_FRACTION == 0.95
    assert memory_per_gpu(MemorySpec(parameters=1)).overhead == DEFAULT_OVERHEAD_BYTES


# --------------------------------------------------------------------------------------------
# Sharding


def test_strategies_shard_what_they_say() -> None:
    base = MemorySpec(parameters=8e9, precision="fp32", gpus=8)
    ddp = memory_per_gpu(base)
    z1 = memory_per_gpu(replace(base, strategy="zero1"))
    z2 = memory_per_gpu(replace(base, strategy="zero2"))
    z3 = memory_per_gpu(replace(base, strategy="zero3"))
    assert (z1.weights, z1.gradients, z1.optimizer) == (
        ddp.weights,
        ddp.gradients,
        ddp.optimizer // 8,
    )
    assert (z2.weights, z2.gradients) == (ddp.weights, ddp.gradients // 8)
    assert z3.weights == ddp.weights // 8
    assert memory_per_gpu(replace(base, strategy="fsdp")) == z3


def test_fsdp_holds_two_gathered_units() -> None:
    shape = TransformerShape(layers=32, hidden=4096, heads=32, sequence_length=512)
    spec = MemorySpec(parameters=6.4e9, transformer=shape, strategy="fsdp", gpus=8)
    weights = 6.4e9 * 2  # bf16 working copy
    gathered = 2 * weights / 32 * (1 - 1 / 8)
    assert memory_per_gpu(spec).weights == pytest.approx(weights / 8 + gathered, rel=1e-6)


# --------------------------------------------------------------------------------------------
# Verdicts


def test_a_batch_too_big_becomes_accumulation() -> None:
    spec = MemorySpec(parameters=2.6e7, activation_bytes_per_sample=100e6, batch_size=256)
    device = 10 * GIB  # room for ~90 samples
    verdict = fit_verdict(spec, device)
    assert verdict.kind == "smaller_batch"
    assert (verdict.batch_size, verdict.accumulation) == (64, 4)
    assert (
        verdict.message
        == "fits at batch 64 (gradient accumulation ×4 keeps the effective batch of 256)"
    )
    assert verdict.breakdown.total <= verdict.usable_bytes
    assert verdict.fits


def test_the_effective_batch_counts_every_gpu() -> None:
    spec = MemorySpec(parameters=2.6e7, activation_bytes_per_sample=100e6, batch_size=256)
    verdict = fit_verdict(spec, 10 * GIB, gpus=4)
    assert verdict.message.endswith("keeps the effective batch of 1024)")


def test_checkpointing_when_no_batch_fits_without_it() -> None:
    shape = TransformerShape(layers=32, hidden=4096, heads=32, sequence_length=4096)
    spec = MemorySpec(parameters=6.7e9, trainable_parameters=1.7e7, transformer=shape, batch_size=2)
    verdict = fit_verdict(spec, 24 * GIB)
    assert verdict.kind == "checkpointing"
    assert verdict.checkpointing
    assert verdict.message.startswith("fits only with gradient checkpointing")
    refused = fit_verdict(replace(spec, allow_checkpointing=False), 24 * GIB)
    assert refused.kind == "does_not_fit"
    assert "gradient checkpointing not allowed" in refused.message


def test_does_not_fit_says_what_batch_1_needs() -> None:
    verdict = fit_verdict(MemorySpec(parameters=7e9, precision="fp32"), 80 * GIB)
    assert verdict.kind == "does_not_fit"
    assert not verdict.fits
    assert verdict.batch_size is None
    assert verdict.message.startswith("does not fit even at batch 1 with gradient checkpointing")
    assert "\n" not in verdict.message


def test_largest_batch_with_and_without_checkpointing() -> None:
    shape = TransformerShape(
        layers=32, hidden=4096, heads=32, sequence_length=1024, flash_attention=True
    )
    spec = MemorySpec(parameters=6.7e9, trainable_parameters=1.7e7, transformer=shape)
    plain = largest_batch_that_fits(spec, 24 * GIB)
    ckpt = largest_batch_that_fits(spec, 24 * GIB, checkpointing=True)
    assert plain is not None and ckpt is not None
    assert ckpt > plain
    assert memory_per_gpu(replace(spec, batch_size=plain)).total <= 24 * GIB * 0.95
    assert memory_per_gpu(replace(spec, batch_size=plain + 1)).total > 24 * GIB * 0.95
    assert largest_batch_that_fits(spec, 8 * GIB, checkpointing=True) is None


# --------------------------------------------------------------------------------------------
# From a Workload


def test_presets_become_specs() -> None:
    lora = spec_from_workload(get_workload("llm-7b-lora"))
    assert lora.allow_checkpointing and not lora.gradient_checkpointing
    assert lora.base_weight_bits == 16
    assert lora.transformer is not None and lora.transformer.layers == 32
    assert lora.trainable_parameters == 17_000_000
    resnet = spec_from_workload(get_workload("resnet50-imagenet"))
    assert not resnet.allow_checkpointing
    assert resnet.activation_bytes_per_sample == 50_000_000
    assert resnet.batch_size == 256 and resnet.precision == "fp16"
    sharded = spec_from_workload(get_workload("llm-7b-pretrain"), gpus=8)
    assert (sharded.strategy, sharded.gpus) == ("fsdp", 8)
    with pytest.raises(MemoryModelError, match="CPU work"):
        spec_from_workload(get_workload("tabular"))


def test_the_presets_the_old_rule_got_wrong() -> None:
    # ResNet-50's preset batch on 8 and 12 GB cards, 7B LoRA on 24 GB: fits, with changes.
    resnet = spec_from_workload(get_workload("resnet50-imagenet"))
    for gib in (8, 12):
        assert fit_verdict(resnet, gib * GIB).kind == "smaller_batch"
    lora = spec_from_workload(get_workload("llm-7b-lora"))
    assert fit_verdict(lora, 24 * GIB).fits
    assert fit_verdict(replace(lora, base_weight_bits=4), 16 * GIB).fits
    pretrain = spec_from_workload(get_workload("llm-7b-pretrain"), gpus=8)
    assert fit_verdict(pretrain, 80 * GIB).fits
    assert not fit_verdict(replace(pretrain, gpus=1, strategy="ddp"), 80 * GIB).fits


def test_custom_workloads_use_their_activation_figures() -> None:
    w = custom_workload(
        parameters=1_000_000_000,
        tokens=10**9,
        sequence_length=2048,
        activation_bytes_per_token=1e6,
        batch_size=8,
    )
    spec = spec_from_workload(w)
    assert activation_bytes(spec) == pytest.approx(8 * 2048 * 1e6)


# --------------------------------------------------------------------------------------------
# The documented cases (catalog/memory_cases.toml; each cites its retrieved public source)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_documented_case(case: MemoryCase) -> None:
    verdict = case.verdict()
    if case.known_disagreement:
        assert not agrees(case.expect, verdict), f"{case.id} now agrees: drop known_disagreement"
    else:
        assert agrees(case.expect, verdict), f"{case.id}: {case.claim} → {verdict.message}"


def test_at_least_15_documented_cases_agree() -> None:
    agreeing = [c for c in CASES if not c.known_disagreement and agrees(c.expect, c.verdict())]
    assert len(agreeing) >= 15
    assert {c.expect for c in agreeing} >= {"fits", "trainable", "does_not_fit", "needs_changes"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_case_names_its_source(case: MemoryCase) -> None:
    assert "/" in case.source  # a repository path or a URL
    assert case.claim.strip() and case.expect in EXPECTATIONS


def test_the_brief_examples_are_among_the_cases() -> None:
    by_id = {c.id: c for c in CASES}
    assert by_id["qlora-65b-one-48gb-gpu"].verdict().fits
    assert by_id["lit-llama-7b-lora-rtx3090"].verdict().kind == "fits"
    assert by_id["peft-bloomz-7b1-full-one-a100-80gb"].verdict().kind == "does_not_fit"
    assert by_id["alpaca-7b-full-fsdp-4x-a100-80gb"].verdict().kind == "fits"
    assert by_id["resnet50-amp-8gb-nvidia-batch"].verdict().kind == "smaller_batch"
    assert by_id["llama2-70b-full-fsdp-8x-24gb"].verdict().kind == "does_not_fit"


def test_case_files_are_checked() -> None:
    good = """
[[case]]
id = "a"
claim = "c"
source = "x/y README.md"
expect = "fits"
device_gib = 8
[case.spec]
parameters = 1e6
"""
    assert load_memory_cases(good, "t.toml")[0].device_bytes == 8 * GIB
    for bad, match in [
        (good.replace('expect = "fits"', 'expect = "maybe"'), "key 'expect' must be one of"),
        (good.replace('source = "x/y README.md"', 'source = ""'), "'source' must be non-empty"),
        (good.replace("device_gib = 8", "device_gib = 8\ndevice_mib = 8"), "device_gib or"),
        (good + good, "appears more than once"),
        (good.replace("= 1e6", "= 1e6\nwheels = 4"), "unknown key 'spec.wheels'"),
        ("[[case]\n", "not valid TOML"),
        ("", "no \\[\\[case\\]\\] tables"),
    ]:
        with pytest.raises(MemoryModelError, match=match):
            load_memory_cases(bad, "t.toml")


def test_specs_from_tables() -> None:
    spec = spec_from_mapping(
        {
            "parameters": 1e9,
            "lora_rank": 8,
            "transformer": {"layers": 2, "hidden": 64, "heads": 2, "sequence_length": 8},
        }
    )
    assert spec.trainable_parameters == lora_trainable_parameters(2, 64, 8)
    assert spec.parameters == 1e9 + spec.trainable_parameters
    for data, match in [
        ({"parameters": 1e9, "lora_rank": 8}, "needs a transformer"),
        ({"parameters": 1e9, "transformer": {"layers": 2}}, "spec: "),
        ({"parameters": 1e9, "transformer": {"depth": 2}}, "unknown key 'transformer.depth'"),
        ("nope", "spec: must be a table, got 'nope'"),
    ]:
        with pytest.raises(MemoryModelError, match=match):
            spec_from_mapping(data)


# --------------------------------------------------------------------------------------------
# Bad input: a one-line ValueError, never "fits" and never a crash


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"parameters": math.nan}, "finite"),
        ({"parameters": math.inf}, "finite"),
        ({"parameters": -1}, "> 0"),
        ({"parameters": 0}, "> 0"),
        ({"parameters": 1e27}, "surely a typo"),
        ({"parameters": True}, "a number"),
        ({"parameters": "7e9"}, "a number"),
        ({"parameters": 1e9, "trainable_parameters": 2e9}, "exceed parameters"),
        ({"parameters": 1e9, "precision": "int4"}, "precision must be one of"),
        ({"parameters": 1e9, "base_weight_bits": 2}, "base_weight_bits"),
        ({"parameters": 1e9, "optimizer": "lion"}, "optimizer must be one of"),
        ({"parameters": 1e9, "strategy": "tp"}, "strategy must be one of"),
        ({"parameters": 1e9, "batch_size": 0}, "batch_size"),
        ({"parameters": 1e9, "batch_size": 2.5}, "whole number"),
        ({"parameters": 1e9, "batch_size": 10**12}, "surely a typo"),
        ({"parameters": 1e9, "gpus": 0}, "gpus"),
        ({"parameters": 1e9, "usable_fraction": 1.5}, "surely a typo"),
        ({"parameters": 1e9, "usable_fraction": 0}, "usable_fraction"),
        ({"parameters": 1e9, "overhead_bytes": -1}, "overhead_bytes"),
        ({"parameters": 1e9, "activation_bytes_per_sample": math.nan}, "finite"),
        ({"parameters": 1e9, "activation_bytes_per_sample": 1e30}, "surely a typo"),
        ({"parameters": 1e9, "gradient_checkpointing": "yes"}, "true or false"),
        ({"parameters": 1e9, "unquantized_parameters": 1e9}, "exceed the frozen"),
        ({"parameters": 1e9, "transformer": "llama"}, "TransformerShape"),
    ],
)
def test_bad_specs_are_refused_in_one_line(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(MemoryModelError, match=match) as info:
        MemorySpec(**kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError) and isinstance(info.value, WorkloadError)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"layers": 0},
        {"hidden": math.inf},
        {"heads": 8192},
        {"sequence_length": -5},
        {"vocab_size": 1e12},
        {"flash_attention": 1},
    ],
)
def test_bad_shapes_are_refused(kwargs: dict[str, object]) -> None:
    fields: dict[str, object] = {"layers": 2, "hidden": 64, "heads": 2, "sequence_length": 8}
    with pytest.raises(MemoryModelError):
        TransformerShape(**{**fields, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize("device", [math.nan, math.inf, -1.0, 0, 1e32, True, "80GB"])
def test_bad_device_sizes_are_refused(device: object) -> None:
    spec = MemorySpec(parameters=1e9)
    with pytest.raises(MemoryModelError):
        fit_verdict(spec, device)  # type: ignore[arg-type]
    with pytest.raises(MemoryModelError):
        largest_batch_that_fits(spec, device)  # type: ignore[arg-type]


def test_whole_numbers_given_as_floats_are_whole_numbers() -> None:
    shape = TransformerShape(layers=2.0, hidden=64.0, heads=2.0, sequence_length=8.0)  # type: ignore[arg-type]
    spec = MemorySpec(parameters=1e9, batch_size=6.0, gpus=2.0, transformer=shape)  # type: ignore[arg-type]
    assert isinstance(spec.batch_size, int) and isinstance(shape.layers, int)
    assert fit_verdict(spec, 1 * GIB).kind in ("smaller_batch", "checkpointing", "does_not_fit")


def test_bad_gpu_counts_in_the_verdict_are_refused() -> None:
    with pytest.raises(MemoryModelError, match="gpus"):
        fit_verdict(MemorySpec(parameters=1e9), 80 * GIB, gpus=0)


# --------------------------------------------------------------------------------------------
# Properties

_fast = settings(max_examples=80, deadline=None)

_shapes = st.builds(
    TransformerShape,
    layers=st.integers(1, 128),
    hidden=st.sampled_from([256, 768, 1024, 4096, 8192]),
    heads=st.sampled_from([1, 8, 16, 32]),
    sequence_length=st.integers(1, 8192),
    vocab_size=st.none() | st.integers(1, 256_000),
    flash_attention=st.booleans(),
)


@st.composite
def _specs(draw: st.DrawFn) -> MemorySpec:
    parameters = draw(st.floats(1e5, 1e12))
    lora = draw(st.booleans())
    trainable = parameters * draw(st.floats(1e-4, 1.0)) if lora else None
    activations = draw(st.sampled_from(["shape", "sample", "none"]))
    return MemorySpec(
        parameters=parameters,
        trainable_parameters=trainable,
        precision=draw(st.sampled_from(["fp32", "tf32", "bf16", "fp16"])),
        master_weights=draw(st.booleans()),
        base_weight_bits=draw(st.none() | st.sampled_from([32, 16, 8, 4])),
        double_quant=draw(st.booleans()),
        optimizer=draw(st.sampled_from(["adam", "adam8bit", "sgd_momentum", "sgd"])),
        paged_optimizer=draw(st.booleans()),
        transformer=draw(_shapes) if activations == "shape" else None,
        activation_bytes_per_sample=(draw(st.floats(0, 1e9)) if activations == "sample" else None),
        activation_layers=draw(st.none() | st.integers(1, 200)),
        gradient_checkpointing=draw(st.booleans()),
        batch_size=draw(st.integers(1, 512)),
        gpus=draw(st.integers(1, 64)),
        strategy=draw(st.sampled_from(["ddp", "zero1", "zero2", "zero3", "fsdp"])),
    )


@_fast
@given(_specs(), st.integers(1, 512), st.integers(1, 512))
def test_a_larger_batch_never_needs_less(spec: MemorySpec, a: int, b: int) -> None:
    small, large = sorted((a, b))
    assert (
        memory_per_gpu(replace(spec, batch_size=small)).total
        <= memory_per_gpu(replace(spec, batch_size=large)).total
    )


@_fast
@given(_specs())
def test_checkpointing_never_needs_more(spec: MemorySpec) -> None:
    assert (
        memory_per_gpu(replace(spec, gradient_checkpointing=True)).total
        <= memory_per_gpu(replace(spec, gradient_checkpointing=False)).total
    )


@_fast
@given(_specs(), st.integers(1, 256), st.integers(1, 256))
@example(  # a paged optimizer's two separate roundings once added a byte at 122 GPUs
    MemorySpec(
        parameters=756250.0,
        trainable_parameters=75.625,
        precision="bf16",
        optimizer="adam",
        paged_optimizer=True,
        transformer=TransformerShape(layers=1, hidden=256, heads=1, sequence_length=1),
        overhead_bytes=1_408_237_568,
    ),
    115,
    122,
)
def test_more_gpus_never_need_more_per_gpu(spec: MemorySpec, a: int, b: int) -> None:
    few, many = sorted((a, b))
    for strategy in ("fsdp", "zero3", "zero2", "zero1", "ddp"):
        sharded = replace(spec, strategy=strategy)
        assert (
            memory_per_gpu(replace(sharded, gpus=many)).total
            <= memory_per_gpu(replace(sharded, gpus=few)).total
        )


@_fast
@given(_specs(), st.sampled_from([32, 16, 8, 4]), st.sampled_from([32, 16, 8, 4]))
def test_lower_base_bits_never_need_more(spec: MemorySpec, a: int, b: int) -> None:
    low, high = sorted((a, b))
    lora = replace(spec, trainable_parameters=spec.parameters / 100)
    assert (
        memory_per_gpu(replace(lora, base_weight_bits=low)).total
        <= memory_per_gpu(replace(lora, base_weight_bits=high)).total
    )


@_fast
@given(_specs(), st.floats(2**30, 2**38))
def test_a_verdict_is_a_plan_that_fits(spec: MemorySpec, device: float) -> None:
    verdict = fit_verdict(spec, device)
    assert verdict.kind in ("fits", "smaller_batch", "checkpointing", "does_not_fit")
    assert "\n" not in verdict.message
    if verdict.fits:
        assert verdict.batch_size is not None
        assert verdict.batch_size * verdict.accumulation == spec.batch_size
        assert verdict.breakdown.total <= device * spec.usable_fraction
        if verdict.kind == "fits":
            assert verdict.breakdown == memory_per_gpu(spec)
    else:
        assert verdict.breakdown.total > device * spec.usable_fraction


@_fast
@given(_specs(), st.floats(2**30, 2**38))
def test_the_largest_batch_fits_and_one_more_does_not(spec: MemorySpec, device: float) -> None:
    usable = device * spec.usable_fraction
    best = largest_batch_that_fits(spec, device)
    if best is None:
        assert memory_per_gpu(replace(spec, batch_size=1)).total > usable
    else:
        assert memory_per_gpu(replace(spec, batch_size=best)).total <= usable
        if best < 2**24:
            assert memory_per_gpu(replace(spec, batch_size=best + 1)).total > usable


@_fast
@given(
    st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_any_number_is_refused_or_judged_never_crashes(parameters: float, device: float) -> None:
    try:
        spec = MemorySpec(parameters=parameters)
        verdict = fit_verdict(spec, device)
    except MemoryModelError as exc:
        assert "\n" not in str(exc)
    else:
        assert 0 < parameters <= 1e15 and 0 < device <= 2**50
        assert verdict.kind in ("fits", "smaller_batch", "checkpointing", "does_not_fit")
