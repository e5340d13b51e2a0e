"""Jobs as practitioners know them, asked the way people ask them, through the advice's own path
(:func:`hwadvisor.advise.advise`): the answers people who run these jobs would give.

Each case names where the practice is documented. The models are described as users type them
(parameters, tokens, a method), so the shape is assumed as it is for them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hwadvisor.advise import advise, resolve_gpu
from hwadvisor.memory import fit_verdict, memory_per_gpu, spec_from_workload
from hwadvisor.model.advice import Advice
from hwadvisor.workloads import Workload, custom_workload, get_workload, with_epochs
from tests.helpers import practice

REPORTS = Path(__file__).parent / "fixtures" / "reports"
_cpu_only, _desktop_6_core, _typed = practice.cpu_only, practice.desktop_6_core, practice.typed


def _on(w: Workload, card: str, count: int = 1, deadline: float | None = None) -> Advice:
    return advise(_cpu_only(), w, assume=[(resolve_gpu(card), count)], deadline_hours=deadline)


def _fits(advice: Advice) -> bool | None:
    (verdict,) = advice.assumed
    return verdict.fits_memory


def test_llama2_7b_qlora_fits_a_16_gb_t4() -> None:
    """QLoRA of a 7B model on a free Colab T4 (16 GB): the QLoRA paper's Guanaco-7B and the
    Hugging Face 4-bit blog's notebook (huggingface/blog 4bit-transformers-bitsandbytes.md)."""
    w = _typed(6.74e9, 2e7, method="qlora", optimizer="paged-adamw-8bit")
    assert w.method == "qlora" and w.base_bits == 4 and w.shape_assumed
    advice = _on(w, "T4")
    assert _fits(advice) is True


def test_llama2_70b_qlora_fits_48_gb() -> None:
    """QLoRA "finetune a 65B parameter model on a single 48GB GPU" (artidoro/qlora README);
    a 70B likewise (answer.ai's FSDP+QLoRA post needed two 24 GB cards, 48 GB in all)."""
    w = _typed(69e9, 2e7, method="qlora", optimizer="paged-adamw-8bit")
    assert _fits(_on(w, "RTX A6000")) is True


def test_7b_full_fine_tune_needs_more_than_one_80_gb_gpu_but_fits_eight() -> None:
    """Full fine-tuning of a 7B model with AdamW: 16-18 bytes per parameter (112-126 GB) before
    activations, more than one 80 GB GPU; FSDP over 8 GPUs holds it (Hugging Face's
    model_memory_anatomy.md; PyTorch FSDP fine-tuning recipes for Llama-2-7B on 8 A100s)."""
    w = _typed(6.74e9, 1e8)
    assert _fits(_on(w, "H100 SXM")) is False
    assert _fits(_on(w, "H100 SXM", 8)) is True


def test_13b_full_fine_tune_is_one_8_gpu_machine_not_a_cluster() -> None:
    """A 13B full fine-tune on a few hundred million tokens: one 8-GPU server (class 3), not a
    cluster."""
    w = _typed(13e9, 3e8)
    advice = advise(_cpu_only(), w)
    assert advice.scenario.id == 3, advice.scenario.rule


def test_stable_diffusion_fine_tune_fits_24_gb_with_checkpointing() -> None:
    """diffusers' text-to-image example: "With gradient_checkpointing and mixed_precision it
    should be possible to fine tune the model on a single 24GB GPU" (examples/text_to_image/
    README.md)."""
    w = get_workload("sd15-finetune")
    advice = _on(w, "RTX 4090")
    assert _fits(advice) is True
    row = next(e for e in advice.estimates if e.origin == "assumed")
    assert row.plan_checkpointing


def test_a_conv_net_with_the_switch_gets_checkpointing_where_it_needs_it() -> None:
    """Conv workloads too: a UNet left without checkpointing, on a card that holds its states
    but not its activations, fits only once checkpointing is turned on (diffusers' UNet has
    the switch: ``checkpointing_allowed``)."""
    w = replace(get_workload("sd15-finetune"), gradient_checkpointing=False)
    spec = spec_from_workload(w)
    states = memory_per_gpu(replace(spec, batch_size=1, activation_bytes_per_sample=0)).total
    device = (states + 0.5 * 1.5e9) / spec.usable_fraction
    verdict = fit_verdict(spec, device)
    assert verdict.kind == "checkpointing" and verdict.checkpointing
    # torchvision-style conv nets have no switch: "does not fit", never a checkpointing plan.
    plain = replace(w, checkpointing_allowed=None)
    assert fit_verdict(spec_from_workload(plain), device).kind == "does_not_fit"


@pytest.mark.parametrize("card", ["RTX 3070"])
def test_the_small_cnn_gpu_speedup_over_a_desktop_cpu(card: str) -> None:
    """The cats-vs-dogs convnet (Chollet, Deep Learning with Python 5.2): an RTX 3070 measured
    13.8-28× a 6-core desktop CPU; the advice must land between 10× and 40×."""
    profile = _desktop_6_core()
    # The source compares epochs; the whole run's fixed start-up is made negligible so that
    # the advice's times compare the training steps too.
    small = with_epochs(get_workload("small-cnn"), 2000)
    advice = advise(profile, small, assume=[(resolve_gpu(card), 1)])
    cpu = next(e for e in advice.estimates if e.origin == "this-machine" and not e.gpus)
    gpu = next(e for e in advice.estimates if e.origin == "assumed")
    assert cpu.seconds is not None and gpu.seconds is not None
    speedup = cpu.seconds / gpu.seconds
    assert 10 <= speedup <= 40, speedup


# --------------------------------------------------------------------------------------------
# The same jobs on the command line


CPU_ONLY = str(REPORTS / "cpu-only.json")


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    import json

    from hwadvisor.cli import main

    assert main(["advise", "-p", CPU_ONLY, *args, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_qlora_job_typed_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(
        capsys,
        "--params", "6.74e9", "--tokens", "2e7", "--method", "qlora",
        "--optimizer", "paged-adamw-8bit", "--assume-gpu", "T4",
    )  # fmt: skip
    workload = out["workload"]
    assert workload["training"].startswith("QLoRA, rank 16 on a 4-bit base")
    assert "paged AdamW 8-bit" in workload["training"]
    assert workload["shape_assumed"].startswith("shape assumed (32 layers, hidden 4096")
    assert any(c.startswith("Shape assumed") for c in out["caveats"])
    assert out["assumed"][0]["fits_memory"] is True
    assert "evaluation" in workload["times"] and "start-up" in workload["times"]


def test_a_preset_changed_by_the_training_options(capsys: pytest.CaptureFixture[str]) -> None:
    full = _json(capsys, "-w", "llm-7b-pretrain")
    lora = _json(capsys, "-w", "llm-7b-pretrain", "--method", "lora", "--lora-rank", "8")
    assert full["workload"]["training"] is None
    assert lora["workload"]["training"].startswith("LoRA, rank 8 on a 16-bit base")
    # Adapters: 4·N per token instead of 6·N, and a far smaller memory need.
    assert lora["workload"]["total_flops"] < 0.75 * full["workload"]["total_flops"]
    assert lora["workload"]["memory_bytes"] < 0.3 * full["workload"]["memory_bytes"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "dora"], "method must be one of full, lora, qlora"),
        (["--lora-rank", "8"], "--lora-rank and --base-bits go with --method lora or qlora"),
        (["--method", "qlora", "--base-bits", "8"], "QLoRA's base is 4-bit"),
        (["--optimizer", "adam"], "optimizer must be one of adamw"),
        (["--micro-batch", "64"], "micro-batch 64 is over the batch size 32"),
        (["--eval-fraction", "0.95"], "eval fraction must be from 0 to 0.9"),
        (["--eval-fraction", "nan"], "--eval-fraction must be a finite number"),
    ],
)
def test_training_options_that_cannot_be_say_so_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hwadvisor.cli import main

    code = main(["advise", "-p", CPU_ONLY, "--params", "1e9", "--tokens", "1e9", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2


def test_vocab_size_is_for_language_models(capsys: pytest.CaptureFixture[str]) -> None:
    from hwadvisor.cli import main

    code = main(["advise", "-p", CPU_ONLY, "-w", "small-cnn", "--vocab-size", "32000"])
    assert code == 2 and "--vocab-size describes a language model" in capsys.readouterr().err
    # On a transformer it replaces the assumed vocabulary, and the shape is assumed again.
    out = _json(capsys, "--params", "3e8", "--tokens", "1e9", "--vocab-size", "250000")
    assert "vocabulary 250,000" in out["workload"]["shape_assumed"]


@pytest.mark.parametrize(
    ("geforce", "pro"),
    [("RTX 4090", "RTX 6000 Ada"), ("RTX 3090", "RTX A6000"), ("RTX 3080", "RTX A5000")],
)
def test_same_die_geforce_and_pro_cards_train_alike(geforce: str, pro: str) -> None:
    """A GeForce card and its pro twin measure 0.86-1.3× apart in training (Lambda's ResNet-50
    and BERT runs: RTX 3090 905 vs RTX A6000 916 img/s, RTX 4090 1,301 vs RTX 6000 Ada 1,146),
    although the GeForce tensor peak in the catalog (FP32 accumulate) is half the pro card's:
    the advice must not put them twice apart on compute-bound work (a 1.3B transformer,
    memory left aside: both hold it)."""
    from hwadvisor import advise as advise_module
    from hwadvisor.advise import load_rules, parse_candidate

    rules = replace(load_rules(), startup_seconds=0.0, eval_fraction=0.0)
    w = custom_workload(parameters=1_300_000_000, tokens=10**9, precision="bf16", batch_size=8)
    seconds = []
    for card in (geforce, pro):
        rung = parse_candidate({"role": "single_gpu", "title": card, "gpu": card}, 1, "test")
        rate = advise_module.candidate_rate(w, rung, rules, planned=False)
        assert rate.estimate is not None
        seconds.append(rate.estimate.seconds)
    assert 0.8 <= seconds[0] / seconds[1] <= 1.4


def test_a_micro_batch_keeps_the_batch_it_accumulates_to() -> None:
    """llama3-8b-qlora runs micro-batches of 2, four to a batch of 8 (Unsloth's 2 × 4): a card
    that holds only 1 at a time accumulates 8 of them, and says the batch of 8 is kept."""
    w = get_workload("llama3-8b-qlora")
    spec = spec_from_workload(w)
    assert (spec.batch_size, spec.accumulation) == (2, 4)
    roomy = fit_verdict(spec, 24 * 2**30)
    assert roomy.kind == "fits" and roomy.accumulation == 4
    states = memory_per_gpu(replace(spec, batch_size=1)).total
    tight = fit_verdict(spec, (states + 1) / spec.usable_fraction)
    assert (tight.batch_size, tight.accumulation) == (1, 8)
    assert "gradient accumulation ×8 keeps the effective batch of 8" in tight.message
