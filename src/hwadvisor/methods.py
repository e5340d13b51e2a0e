"""How a model is trained — full fine-tuning or pre-training, LoRA, QLoRA — with which optimizer,
micro-batch and checkpointing: what people say when they describe a job, turned into what the
memory and time models count.

:func:`with_training` applies the options a user gives (``--method``, ``--lora-rank``,
``--base-bits``, ``--optimizer``, ``--checkpointing``, ``--micro-batch``, ``--eval-fraction``,
``--vocab-size``) to a preset or custom :class:`~hwadvisor.workloads.Workload`, checked, with a
one-line :class:`~hwadvisor.workloads.WorkloadError` for what cannot be. Pure arithmetic.

The rules, each with its source:

- **LoRA** trains rank-r adapters, r·(d_in + d_out) parameters per adapted matrix (Hu et al. 2021,
  arXiv:2106.09685). LoRA adapts the attention's query and value projections by default (PEFT's
  default for LLaMA-style models); QLoRA every linear layer of the block ("all", Dettmers et al.
  2023, arXiv:2305.14314 §4), the MLP taken as LLaMA's SwiGLU of intermediate size ≈ 8/3·h.
- **Training FLOPs** per token: 6·N for full training (Kaplan et al. 2020); 4·N for LoRA and
  QLoRA — the frozen base runs forward (2·N) and passes gradients back to its inputs (2·N) but
  computes no weight gradients; the adapters add under 1 %.
- **Frozen base** at 16 bits for LoRA, 4 bits (NF4 with double quantization) for QLoRA; the
  embeddings and output head stay in 16 bits (bitsandbytes quantizes the linear layers only).
- **Checkpointing** recomputes the forward pass in the backward: one more forward, +2·N per
  token on 6·N (+33 %), +2·N on 4·N (+50 %) for adapters; conv nets, forward ≈ a third of a step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hwadvisor.units import size_text
from hwadvisor.workloads import (
    METHODS,
    OPTIMIZER_NAMES,
    Workload,
    WorkloadError,
    assume_shape,
    check_workload,
)

__all__ = [
    "DEFAULT_LORA_RANK",
    "QLORA_SLOWDOWN",
    "TrainingOptions",
    "describe",
    "lora_adapter_parameters",
    "recompute_factor",
    "with_training",
]

#: The rank when none is given: 16 (Hugging Face PEFT examples and the QLoRA paper's 7B-13B
#: recipes use 8-64; 16 is the common middle).
DEFAULT_LORA_RANK = 16
#: QLoRA dequantizes every 4-bit weight to 16 bits in each forward and backward pass: a step
#: takes longer than 16-bit LoRA's. An assumption (bitsandbytes publishes no single figure;
#: reports of 4-bit LoRA range from 1.1× to 1.6× the 16-bit time): 1.3×.
QLORA_SLOWDOWN = 1.3
#: The LLaMA MLP's intermediate size over the hidden size (SwiGLU: 8/3·h, Llama-2-7B 11008/4096).
INTERMEDIATE_RATIO = 8 / 3
#: The share of a training step that is the forward pass where every weight is trained
#: (forward ≈ backward / 2: 2·N of 6·N for transformers, a third of a conv net's step).
CONV_FORWARD_SHARE = 1 / 3


@dataclass(frozen=True)
class TrainingOptions:
    """What the user said about how the job is trained; None = as the preset (or default)."""

    method: str | None = None
    lora_rank: int | None = None
    base_bits: int | None = None
    optimizer: str | None = None
    checkpointing: bool | None = None
    micro_batch: int | None = None
    eval_fraction: float | None = None
    vocab_size: int | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, f) is not None for f in self.__dataclass_fields__)


def lora_adapter_parameters(w: Workload, rank: int, modules: str) -> int:
    """Adapter parameters of rank ``rank`` on ``w``'s shape (given or assumed): "qv" (query and
    value), or "all" (q, k, v, o and the three SwiGLU matrices)."""
    assert w.layers is not None and w.hidden is not None
    h = w.hidden
    attention = (2 if modules == "qv" else 4) * rank * 2 * h
    mlp = 0
    if modules == "all":
        intermediate = round(INTERMEDIATE_RATIO * h / 256) * 256
        mlp = 3 * rank * (h + intermediate)
    return w.layers * (attention + mlp)


def _check(options: TrainingOptions) -> None:
    o = options
    if o.method is not None and o.method not in METHODS:
        raise WorkloadError(f"method must be one of {', '.join(METHODS)}, got {o.method!r}")
    if o.optimizer is not None and o.optimizer not in OPTIMIZER_NAMES:
        raise WorkloadError(
            f"optimizer must be one of {', '.join(OPTIMIZER_NAMES)}, got {o.optimizer!r}"
        )
    if o.base_bits is not None and o.base_bits not in (16, 8, 4):
        raise WorkloadError(f"base bits must be 16, 8 or 4, got {o.base_bits!r}")
    for label, value, top in (
        ("lora rank", o.lora_rank, 4096),
        ("micro-batch", o.micro_batch, 2**20),
        ("vocab size", o.vocab_size, 10_000_000),
    ):
        if value is not None and not (isinstance(value, int) and 0 < value <= top):
            raise WorkloadError(f"{label} must be a whole number from 1 to {top:,}, got {value!r}")
    if o.eval_fraction is not None and not 0 <= o.eval_fraction <= 0.9:
        raise WorkloadError(f"eval fraction must be from 0 to 0.9, got {o.eval_fraction!r}")


def with_training(w: Workload, options: TrainingOptions) -> Workload:
    """``w`` trained as ``options`` say (the preset's own where an option is None), checked."""
    _check(options)
    o = options
    method = o.method or w.method
    if method == "full" and (o.lora_rank is not None or o.base_bits is not None):
        raise WorkloadError("--lora-rank and --base-bits go with --method lora or qlora")
    if method == "qlora" and o.base_bits not in (None, 4):
        raise WorkloadError("QLoRA's base is 4-bit: for an 8- or 16-bit base use --method lora")
    if method != "full" and w.kind != "transformer" and w.trainable_parameters is None:
        raise WorkloadError(
            "LoRA sizing needs a transformer (or a preset giving its adapters' parameters)"
        )
    changes: dict[str, object] = {}
    if o.vocab_size is not None:
        if w.kind != "transformer":
            raise WorkloadError("--vocab-size describes a language model (a transformer)")
        changes["vocab_size"] = o.vocab_size
    if o.optimizer is not None:
        changes["optimizer"] = o.optimizer
    if o.checkpointing is not None:
        changes["gradient_checkpointing"] = o.checkpointing
        if o.checkpointing:
            changes["checkpointing_allowed"] = True
    if o.micro_batch is not None:
        if o.micro_batch > w.batch_size:
            raise WorkloadError(
                f"micro-batch {o.micro_batch} is over the batch size {w.batch_size}: the batch "
                "is micro-batch × gradient-accumulation steps"
            )
        changes["micro_batch"] = o.micro_batch
    if o.eval_fraction is not None:
        changes["eval_fraction"] = o.eval_fraction
    out = replace(w, **changes)  # type: ignore[arg-type]
    if out.shape_assumed and o.vocab_size is not None:
        # The assumed shape took the default vocabulary: assume it again with the user's.
        out = assume_shape(replace(out, layers=None, hidden=None, heads=None, shape_assumed=False))
    if method != w.method or o.lora_rank is not None or o.base_bits is not None:
        out = _with_method(out, method, o.lora_rank, o.base_bits)
    check_workload(out, out.name)
    return out


def _with_method(w: Workload, method: str, rank: int | None, bits: int | None) -> Workload:
    """``w`` trained by ``method``: the adapters' parameters, the base's bytes, the FLOPs."""
    if method == "full":
        dense = 6.0 * w.parameters
        return replace(
            w,
            method="full",
            lora_rank=None,
            base_bits=None,
            trainable_parameters=None,
            frozen_bytes_per_parameter=None,
            flops_per_token=dense if w.flops_per_token is not None else None,
        )
    if w.kind == "transformer" and not w.has_shape:
        w = assume_shape(w)
    rank = rank or w.lora_rank or DEFAULT_LORA_RANK
    bits = bits or (4 if method == "qlora" else 16)
    if w.kind == "transformer":
        modules = "all" if method == "qlora" else "qv"
        adapters = lora_adapter_parameters(w, rank, modules)
    else:
        assert w.trainable_parameters is not None
        adapters = w.trainable_parameters
    adapters = min(adapters, w.parameters // 2)
    return replace(
        w,
        method=method,
        lora_rank=rank,
        base_bits=bits,
        trainable_parameters=adapters,
        frozen_bytes_per_parameter=bits / 8,
        flops_per_token=4.0 * w.parameters if w.flops_per_token is not None else None,
    )


def recompute_factor(w: Workload) -> float:
    """How much more compute a step takes with gradient checkpointing: one more forward pass
    over what a step costs — a third more where every weight is trained (8·N over 6·N; a conv
    net's forward is a third of its step), half more with adapters (6·N over 4·N)."""
    if w.kind == "classical":
        return 1.0
    adapters = w.trainable_parameters is not None and w.trainable_parameters < w.parameters / 2
    return 1.5 if adapters else 1.0 + CONV_FORWARD_SHARE


def describe(w: Workload) -> str | None:
    """One line on how the job is trained where it is not plain full training with AdamW:
    "QLoRA, rank 16 on a 4-bit base (40M trained parameters); paged AdamW 8-bit; checkpointing"."""
    parts: list[str] = []
    if w.method != "full":
        name = {"lora": "LoRA", "qlora": "QLoRA"}[w.method]
        trained = w.trainable_parameters or 0
        rank = f", rank {w.lora_rank}" if w.lora_rank else ""
        bits = f" on a {w.base_bits}-bit base" if w.base_bits else ""
        parts.append(f"{name}{rank}{bits} ({size_text(trained)} trained parameters)")
    if w.optimizer != "adamw":
        parts.append(
            {"adamw-8bit": "AdamW 8-bit", "sgd": "SGD", "paged-adamw-8bit": "paged AdamW 8-bit"}[
                w.optimizer
            ]
        )
    if w.gradient_checkpointing:
        parts.append("gradient checkpointing")
    if w.micro_batch is not None and w.micro_batch < w.batch_size:
        steps = -(-w.batch_size // w.micro_batch)
        parts.append(f"micro-batch {w.micro_batch} × {steps} accumulation steps")
    return "; ".join(parts) or None
