"""Training memory per GPU, the way practitioners size a job: does it fit, at which batch, with
gradient checkpointing or not, on how many GPUs and with which sharding.

Pure functions, no torch. All sizes are bytes. The model, in one paragraph:

    per GPU = weights + gradients + optimizer states      (each sharded or not, by strategy)
            + activations of one micro-batch               (never sharded: data parallelism)
            + a fixed overhead (CUDA context and kernels, framework workspaces)
    it fits when that is at most ``usable_fraction`` × the device's memory.

*Trained* parameters carry weights, gradients and optimizer states at the training precision;
*frozen* ones (LoRA, QLoRA) carry only their weights, at ``base_weight_bits``. Activations come
from a transformer's shape (Korthikanti et al. 2022), or from a per-sample figure the caller gives
(a conv net's, for instance). Every constant below says where it comes from; where a figure is an
assumption, it says so.

Entry points: :class:`MemorySpec` (the input, checked on construction), :func:`memory_per_gpu`,
:func:`largest_batch_that_fits`, :func:`fit_verdict`, :func:`spec_from_workload` and
:func:`load_memory_cases` (the documented cases the tests and ``benchmarks/memory_fit.py`` check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Final

from hwadvisor.catalog.toml import packaged_data
from hwadvisor.workloads import Workload, WorkloadError, activation_scale

__all__ = [
    "BASE_WEIGHT_BITS",
    "DEFAULT_OVERHEAD_BYTES",
    "DEFAULT_USABLE_FRACTION",
    "EXPECTATIONS",
    "GIB",
    "MAX_DEVICE_BYTES",
    "OPTIMIZERS",
    "PRECISIONS",
    "RESNET50_ACTIVATION_BYTES_PER_IMAGE",
    "STRATEGIES",
    "VERDICTS",
    "FitVerdict",
    "MemoryBreakdown",
    "MemoryCase",
    "MemoryModelError",
    "MemorySpec",
    "TransformerShape",
    "activation_bytes",
    "agrees",
    "fit_verdict",
    "largest_batch_that_fits",
    "llama_parameters",
    "load_memory_cases",
    "lora_trainable_parameters",
    "memory_per_gpu",
    "spec_from_mapping",
    "spec_from_workload",
]

GIB: Final = 2**30
MIB: Final = 2**20

PRECISIONS: Final = ("fp32", "tf32", "bf16", "fp16")
"""fp32/tf32 keep everything in 32 bits; bf16/fp16 mean mixed precision (AMP): 16-bit compute and
activations, fp32 master weights unless ``master_weights=False``."""
_MIXED: Final = frozenset({"bf16", "fp16"})

OPTIMIZERS: Final = ("adam", "adam8bit", "sgd_momentum", "sgd")
STRATEGIES: Final = ("ddp", "zero1", "zero2", "zero3", "fsdp")
"""ddp: everything replicated. zero1: optimizer states sharded. zero2: + gradients sharded.
zero3 / fsdp: + weights sharded (FSDP FULL_SHARD is ZeRO-3). Activations are never sharded."""
BASE_WEIGHT_BITS: Final = (32, 16, 8, 4)

# --------------------------------------------------------------------------------------------
# Constants, each with its source

#: Bytes per *trained* parameter for its weights, by precision. Mixed precision keeps a 16-bit
#: working copy here and the fp32 master copy with the optimizer states, as DeepSpeed counts it
#: ("optimizer states (e.g., for Adam optimizer, 32-bit weights, and the first, and second moment
#: estimates)": deepspeedai/DeepSpeed docs/_tutorials/zero.md). Hugging Face counts the same
#: 4 + 2 = "6 bytes * number of parameters for mixed precision training (maintains a model in fp32
#: and one in fp16 in memory)" (huggingface/transformers docs/source/en/model_memory_anatomy.md).
_WEIGHT_BYTES: Final = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0}
#: The fp32 master copy of each trained parameter in mixed precision (same two sources).
_MASTER_BYTES: Final = 4.0
#: Gradient bytes per trained parameter. Replicated (ddp, zero1): "4 bytes * number of parameters
#: for either fp32 or mixed precision training (gradients are always kept in fp32)"
#: (model_memory_anatomy.md). Sharded in mixed precision (zero2, zero3, fsdp): "The reduced 16-bit
#: gradients" (DeepSpeed zero.md), 2 bytes: 2 + 2 + 12 = 16 bytes per parameter, the 12 being
#: the same tutorial's "Adam optimizer states for the model consume 18GB" for 1.5B parameters.
_GRAD_BYTES_REPLICATED: Final = 4.0
_GRAD_BYTES_SHARDED_MIXED: Final = 2.0
#: Optimizer states per trained parameter, beyond the master weights (model_memory_anatomy.md):
#: "8 bytes * number of parameters for normal AdamW (maintains 2 states)", "2 bytes * number of
#: parameters for 8-bit AdamW optimizers like bitsandbytes", "4 bytes * number of parameters for
#: optimizers like SGD with momentum (maintains only 1 state)"; plain SGD keeps none.
_OPTIMIZER_STATE_BYTES: Final = {"adam": 8.0, "adam8bit": 2.0, "sgd_momentum": 4.0, "sgd": 0.0}

#: Effective bits per *frozen* weight. 32/16/8: the storage type (8-bit scales taken as
#: negligible, an assumption). 4: QLoRA's NF4 with one 32-bit constant per 64-weight block,
#: "quantization constants add 32/64 = 0.5 bits per parameter on average"; double quantization
#: cuts that "to 8/64 + 32/(64·256) = 0.127 bits" (Dettmers et al. 2023, arXiv:2305.14314 §3; the
#: Hugging Face 4-bit blog, huggingface/blog 4bit-transformers-bitsandbytes.md: "save an additional
#: 0.4 bits per parameter").
_EFFECTIVE_BITS: Final = {32: 32.0, 16: 16.0, 8: 8.0, 4: 4.5}
_DOUBLE_QUANT_4BIT: Final = 4.0 + 8 / 64 + 32 / (64 * 256)

#: Fixed per-GPU overhead: "When a model is loaded to the GPU the kernels are also loaded, which
#: can take up 1-2GB of memory ... We see that the kernels alone take up 1.3GB" (1343 MB measured
#: on a V100 with nvidia-smi: huggingface/transformers docs/source/en/model_memory_anatomy.md).
DEFAULT_OVERHEAD_BYTES: Final = 1343 * MIB
#: Share of device memory the tensors may fill. The other 5 % is allocator fragmentation and the
#: transient buffers no formula here counts (activation gradients, cuDNN/cuBLAS workspaces,
#: collective-communication buckets). An assumption: the project's rules.toml uses 0.9 for
#: "CUDA context, framework, fragmentation" together, and the context is counted explicitly here
#: (DEFAULT_OVERHEAD_BYTES), so passing 0.9 with that overhead counts the context twice.
DEFAULT_USABLE_FRACTION: Final = 0.95

#: Transformer activations per layer, per sequence, in bytes with 16-bit activations:
#: s·h·(34 + 5·a·s/h) (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
#: Transformer Models", arXiv:2205.05198, eq. 2, no tensor parallelism). The 5·a·s² part is the
#: attention scores, softmax and dropout; FlashAttention/memory-efficient attention never stores
#: them, leaving 34·s·h (the paper's eq. 6 figure). Both as coded in
#: huggingface.co/spaces/hesamation/primer-llm-embedding python/memory/formulas/utils.py.
_ACT_LINEAR_COEFF: Final = 34.0
_ACT_ATTENTION_COEFF: Final = 5.0
#: With full recomputation (gradient checkpointing at every layer boundary) each layer keeps only
#: its 16-bit input, 2·s·h bytes (the same utils.py: recomputation="full" keeps s·b·h·2 per
#: layer); while one layer is recomputed in the backward pass its full activations exist once.
#: The rule picked here is this per-layer one, checkpointing at every transformer block, not
#: Chen et al.'s √n segments (below), because layer-boundary checkpointing is what the
#: frameworks' one-flag switches do.
_CKPT_INPUT_COEFF: Final = 2.0
#: fp32/tf32 activations take twice the 16-bit bytes (the formulas count 2-byte values; the few
#: 1-byte dropout masks make this a slight over-estimate).
_FP32_ACTIVATION_FACTOR: Final = 2.0
#: Output logits: cross-entropy "builds up a logit matrix with entries for each pair of input
#: tokens and vocabulary items" (Wijmans et al. 2024, "Cut Your Losses in Large-Vocabulary
#: Language Models", ICLR 2025; erikwijmans/erikwijmans.github.io content/publication/cce.md).
#: Assumed: that matrix in fp32 and its gradient, 4 + 4 bytes per token × vocabulary entry.
_LOGIT_BYTES: Final = 8.0
#: Gradient checkpointing for a per-sample activation figure (no layer structure known): split
#: n layers into √n segments, keep each segment's input and recompute one segment at a time
#: (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174: "O(√n)
#: memory to train a n layer network"). With equal layers that keeps √n inputs plus one segment
#: of √n layers, about 2/√n of the activations (this module's arithmetic). Without a layer
#: count, n = 16 (an assumption: ResNet-50 has 16 bottleneck blocks).
_DEFAULT_CHECKPOINT_LAYERS: Final = 16
#: FSDP/ZeRO-3 all-gather one wrapped unit (a transformer block) at a time and prefetch the next:
#: FSDP2 "allows two all-gather output tensors to be alive at once" (pytorch/pytorch commit
#: f2805a0408cfeb01c4d77a960dd4ca8e9a49db49; docs.pytorch.org/docs/stable/notes/fsdp.html).
_GATHERED_UNITS: Final = 2

#: ResNet-50 v1.5 activations kept for the backward pass per 224² image: 86 MB in fp32, 44 MB
#: with 16-bit autocast (plus one 16-bit copy of the weights per model, not per image: 51 MB, the
#: "2 bytes" of _WEIGHT_BYTES). Counted for this project on a CPU with torch 2.13: a
#: re-implementation of torchvision's ResNet-50 v1.5 layout (stride on the 3×3 convolution) in
#: training mode, torch.autograd.graph.saved_tensors_hooks summing the distinct storages saved
#: for the backward pass, batch 6 minus batch 2 over 4. The catalog's ≈ 50 MB per image
#: (workloads.toml, resnet50-imagenet) also covers transient activation gradients, which
#: DEFAULT_USABLE_FRACTION leaves room for here.
RESNET50_ACTIVATION_BYTES_PER_IMAGE: Final = {"fp32": 86e6, "mixed": 44e6}

# Bounds beyond which an input is a typo, not a model (one-line errors, never a "fits").
#: Same ceiling as hwadvisor.workloads (1e15 parameters is ~1,000× the largest published model).
_MAX_PARAMETERS: Final = 1e15
#: 1 PiB per device: ~3,000× today's largest accelerator memory.
MAX_DEVICE_BYTES: Final = float(2**50)
_MAX_GPUS: Final = 10**6
_MAX_BATCH: Final = 2**24
_MAX_SEQUENCE: Final = 10**8
_MAX_HIDDEN: Final = 10**6
_MAX_LAYERS: Final = 10**5
_MAX_VOCAB: Final = 10**8
_MAX_SAMPLE_BYTES: Final = 1e13
_MAX_OVERHEAD_BYTES: Final = float(2**40)


class MemoryModelError(WorkloadError):
    """A memory spec or device size that cannot be right; the message is one line.

    A :class:`~hwadvisor.workloads.WorkloadError`, hence a ``ValueError``."""


# --------------------------------------------------------------------------------------------
# Inputs


def _check_number(
    name: str,
    value: object,
    *,
    low: float,
    high: float,
    integer: bool = False,
    allow_low: bool = False,
) -> float:
    """``value`` as a float in (low, high] (or [low, high] with ``allow_low``), else a one-line
    :class:`MemoryModelError`. Rejects bools, NaN, infinities and non-numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MemoryModelError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise MemoryModelError(f"{name} must be finite, got {value!r}")
    if number < low or (number == low and not allow_low):
        bound = f">= {low:g}" if allow_low else f"> {low:g}"
        raise MemoryModelError(f"{name} must be {bound}, got {value!r}")
    if number > high:
        raise MemoryModelError(f"{name} {number:.3g} is over {high:.3g}: surely a typo")
    if integer and number != int(number):
        raise MemoryModelError(f"{name} must be a whole number, got {value!r}")
    return number


def _check_choice(name: str, value: object, choices: tuple[Any, ...]) -> None:
    if isinstance(value, bool) or value not in choices:
        options = ", ".join(str(c) for c in choices)
        raise MemoryModelError(f"{name} must be one of {options}, got {value!r}")


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise MemoryModelError(f"{name} must be true or false, got {value!r}")


@dataclass(frozen=True)
class TransformerShape:
    """What transformer activations depend on (Korthikanti et al. 2022): layers L, hidden size h,
    attention heads a, sequence length s. ``vocab_size`` adds the output logits; leave it out for
    classification heads. ``flash_attention``: the attention scores are never stored
    (FlashAttention, PyTorch's memory-efficient SDPA)."""

    layers: int
    hidden: int
    heads: int
    sequence_length: int
    vocab_size: int | None = None
    flash_attention: bool = False

    def __post_init__(self) -> None:
        _check_number("layers", self.layers, low=0, high=_MAX_LAYERS, integer=True)
        _check_number("hidden", self.hidden, low=0, high=_MAX_HIDDEN, integer=True)
        _check_number("heads", self.heads, low=0, high=_MAX_HIDDEN, integer=True)
        if self.heads > self.hidden:
            raise MemoryModelError(f"heads ({self.heads}) cannot exceed hidden ({self.hidden})")
        _check_number(
            "sequence_length", self.sequence_length, low=0, high=_MAX_SEQUENCE, integer=True
        )
        if self.vocab_size is not None:
            _check_number("vocab_size", self.vocab_size, low=0, high=_MAX_VOCAB, integer=True)
        _check_flag("flash_attention", self.flash_attention)
        for name in ("layers", "hidden", "heads", "sequence_length", "vocab_size"):
            value = getattr(self, name)
            if value is not None:  # 4.0 from a TOML or JSON file is the whole number 4
                object.__setattr__(self, name, int(value))


@dataclass(frozen=True)
class MemorySpec:
    """One training job's memory inputs, checked on construction (:class:`MemoryModelError`).

    Parameters: ``parameters`` in all; ``trainable_parameters`` trained (LoRA adapters), the rest
    frozen (``None``: all trained, and then the adapters are not counted on top).
    Precision: ``precision`` of training (fp32/tf32, or bf16/fp16 mixed); ``master_weights``:
    mixed precision keeps fp32 master weights (``False``: trained weights held in 16 bits only,
    e.g. Lightning's "bf16-true", or QLoRA's bf16 adapters). ``base_weight_bits``: storage of the
    frozen weights, 32/16/8/4 (``None``: the training precision's, 32 or 16); 4 is NF4 with its
    quantization constants, ``double_quant`` compresses those. ``unquantized_parameters``: frozen
    parameters kept in 16 bits when the base is 8- or 4-bit (bitsandbytes leaves the embeddings
    and the output head alone).
    Optimizer: ``optimizer`` (adam, adam8bit, sgd_momentum, sgd); ``paged_optimizer``: the states
    live in CUDA unified memory and spill to host RAM (bitsandbytes paged optimizers, QLoRA's
    ``paged_adamw_32bit``), so they do not count against the GPU.
    Activations: ``transformer`` (a shape) or ``activation_bytes_per_sample`` (bytes per sample at
    this precision, e.g. a conv net's), not both; neither counts no activations, which can only
    under-estimate. ``activation_layers``: layer count for checkpointing a per-sample figure.
    ``gradient_checkpointing``: as configured; ``allow_checkpointing``: whether
    :func:`fit_verdict` may propose it.
    Distribution: ``batch_size`` is the micro-batch of ONE GPU; ``gpus`` and ``strategy``.
    Device: ``overhead_bytes`` per GPU, and the ``usable_fraction`` of device memory.
    """

    parameters: float
    trainable_parameters: float | None = None
    precision: str = "bf16"
    master_weights: bool = True
    base_weight_bits: int | None = None
    double_quant: bool = False
    unquantized_parameters: float = 0
    optimizer: str = "adam"
    paged_optimizer: bool = False
    transformer: TransformerShape | None = None
    activation_bytes_per_sample: float | None = None
    activation_layers: int | None = None
    gradient_checkpointing: bool = False
    allow_checkpointing: bool = True
    batch_size: int = 1
    accumulation: int = 1
    """Micro-steps per optimizer step as given (a workload's ``micro_batch`` below its batch):
    the effective batch is batch_size × accumulation × gpus."""
    gpus: int = 1
    strategy: str = "ddp"
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES
    usable_fraction: float = DEFAULT_USABLE_FRACTION

    def __post_init__(self) -> None:
        _check_number("parameters", self.parameters, low=0, high=_MAX_PARAMETERS)
        if self.trainable_parameters is not None:
            _check_number(
                "trainable_parameters", self.trainable_parameters, low=0, high=_MAX_PARAMETERS
            )
            if self.trainable_parameters > self.parameters:
                raise MemoryModelError(
                    f"trainable_parameters ({self.trainable_parameters:.3g}) exceed parameters "
                    f"({self.parameters:.3g})"
                )
        _check_choice("precision", self.precision, PRECISIONS)
        _check_flag("master_weights", self.master_weights)
        if self.base_weight_bits is not None:
            _check_choice("base_weight_bits", self.base_weight_bits, BASE_WEIGHT_BITS)
        _check_flag("double_quant", self.double_quant)
        _check_number(
            "unquantized_parameters",
            self.unquantized_parameters,
            low=0,
            high=_MAX_PARAMETERS,
            allow_low=True,
        )
        if self.unquantized_parameters > self.frozen_parameters:
            raise MemoryModelError(
                f"unquantized_parameters ({self.unquantized_parameters:.3g}) exceed the frozen "
                f"parameters ({self.frozen_parameters:.3g})"
            )
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        _check_flag("paged_optimizer", self.paged_optimizer)
        if self.transformer is not None and not isinstance(self.transformer, TransformerShape):
            raise MemoryModelError(
                f"transformer must be a TransformerShape, got {self.transformer!r}"
            )
        if self.activation_bytes_per_sample is not None:
            if self.transformer is not None:
                raise MemoryModelError(
                    "give a transformer shape or activation_bytes_per_sample, not both"
                )
            _check_number(
                "activation_bytes_per_sample",
                self.activation_bytes_per_sample,
                low=0,
                high=_MAX_SAMPLE_BYTES,
                allow_low=True,
            )
        if self.activation_layers is not None:
            _check_number(
                "activation_layers", self.activation_layers, low=0, high=_MAX_LAYERS, integer=True
            )
        _check_flag("gradient_checkpointing", self.gradient_checkpointing)
        _check_flag("allow_checkpointing", self.allow_checkpointing)
        _check_number("batch_size", self.batch_size, low=0, high=_MAX_BATCH, integer=True)
        _check_number("accumulation", self.accumulation, low=0, high=_MAX_BATCH, integer=True)
        _check_number("gpus", self.gpus, low=0, high=_MAX_GPUS, integer=True)
        _check_choice("strategy", self.strategy, STRATEGIES)
        _check_number(
            "overhead_bytes", self.overhead_bytes, low=0, high=_MAX_OVERHEAD_BYTES, allow_low=True
        )
        _check_number("usable_fraction", self.usable_fraction, low=0, high=1)
        for name in ("batch_size", "accumulation", "gpus", "activation_layers", "base_weight_bits"):
            value = getattr(self, name)
            if value is not None:  # 4.0 from a TOML or JSON file is the whole number 4
                object.__setattr__(self, name, int(value))

    @property
    def trained_parameters(self) -> float:
        """Parameters that get gradients and optimizer states."""
        return self.parameters if self.trainable_parameters is None else self.trainable_parameters

    @property
    def frozen_parameters(self) -> float:
        """Parameters held for the forward and backward passes only (LoRA's base model)."""
        return self.parameters - self.trained_parameters


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak device memory of ONE GPU, in bytes.

    ``optimizer`` includes the fp32 master weights of mixed precision. ``optimizer_paged`` is the
    part of ``optimizer`` in paged memory (bitsandbytes paged optimizers "take advantage of CUDAs
    unified memory to transfer memory from the GPU to the CPU when GPU memory is exhausted":
    bitsandbytes-foundation/bitsandbytes docs/source/reference/optim/adam.mdx). The step updates
    one tensor at a time, so those states need host RAM, not the GPU: ``total`` leaves them out
    (at a speed cost the time estimate does not model). Otherwise ``total`` is the sum of the
    other fields."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    overhead: int
    total: int
    optimizer_paged: int = 0


# --------------------------------------------------------------------------------------------
# The model


def _activation_factor(spec: MemorySpec) -> float:
    return 1.0 if spec.precision in _MIXED else _FP32_ACTIVATION_FACTOR


def _transformer_activations(shape: TransformerShape, factor: float, checkpointing: bool) -> float:
    """Bytes for ONE sequence (batch 1)."""
    s, h, layers = float(shape.sequence_length), float(shape.hidden), float(shape.layers)
    coeff = _ACT_LINEAR_COEFF
    if not shape.flash_attention:
        coeff += _ACT_ATTENTION_COEFF * shape.heads * s / h
    one_layer = s * h * coeff * factor
    logits = s * shape.vocab_size * _LOGIT_BYTES if shape.vocab_size else 0.0
    full = layers * one_layer
    if checkpointing:
        # Never more than without checkpointing: nobody checkpoints a one-layer model.
        full = min(full, layers * _CKPT_INPUT_COEFF * s * h * factor + one_layer)
    return full + logits


def activation_bytes(spec: MemorySpec, *, checkpointing: bool | None = None) -> float:
    """Activation bytes of one GPU's micro-batch (``spec.batch_size`` samples), with
    ``checkpointing`` (default: ``spec.gradient_checkpointing``)."""
    ckpt = spec.gradient_checkpointing if checkpointing is None else checkpointing
    if spec.transformer is not None:
        per_sample = _transformer_activations(spec.transformer, _activation_factor(spec), ckpt)
    elif spec.activation_bytes_per_sample is not None:
        per_sample = spec.activation_bytes_per_sample
        if ckpt:
            layers = spec.activation_layers or _DEFAULT_CHECKPOINT_LAYERS
            per_sample *= min(1.0, 2.0 / math.sqrt(layers))
    else:
        per_sample = 0.0
    return per_sample * spec.batch_size


def _frozen_bytes_per_parameter(spec: MemorySpec) -> float:
    bits = spec.base_weight_bits
    if bits is None:
        bits = 16 if spec.precision in _MIXED else 32
    effective = _DOUBLE_QUANT_4BIT if bits == 4 and spec.double_quant else _EFFECTIVE_BITS[bits]
    return effective / 8


def _shard(spec: MemorySpec, component: str) -> int:
    """How many ways ``component`` (weights, gradients, optimizer) is split across the GPUs."""
    level = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}[spec.strategy]
    needed = {"optimizer": 1, "gradients": 2, "weights": 3}[component]
    return spec.gpus if level >= needed else 1


def memory_per_gpu(spec: MemorySpec) -> MemoryBreakdown:
    """Peak memory of one GPU for ``spec`` as given (its batch, its checkpointing setting)."""
    trained, frozen = spec.trained_parameters, spec.frozen_parameters
    mixed = spec.precision in _MIXED
    # Weights: trained at the training precision, frozen at the base's storage.
    quantized = (spec.base_weight_bits or 16) < 16
    unquantized = spec.unquantized_parameters if quantized else 0.0
    frozen_bytes = (frozen - unquantized) * _frozen_bytes_per_parameter(spec) + unquantized * 2.0
    weight_bytes = trained * _WEIGHT_BYTES[spec.precision] + frozen_bytes
    # Gradients: trained parameters only; 16-bit when sharded in mixed precision (ZeRO's
    # accounting) or when there are no fp32 master weights.
    if not mixed:
        grad_per = _WEIGHT_BYTES[spec.precision]
    elif not spec.master_weights or spec.strategy in ("zero2", "zero3", "fsdp"):
        grad_per = _GRAD_BYTES_SHARDED_MIXED
    else:
        grad_per = _GRAD_BYTES_REPLICATED
    grad_bytes = trained * grad_per
    # Optimizer: states, plus fp32 master weights in mixed precision.
    states = trained * _OPTIMIZER_STATE_BYTES[spec.optimizer]
    master = trained * _MASTER_BYTES if mixed and spec.master_weights else 0.0

    weights = weight_bytes / _shard(spec, "weights")
    gradients = grad_bytes / _shard(spec, "gradients")
    paged = states / _shard(spec, "optimizer") if spec.paged_optimizer else 0.0
    optimizer = (states + master) / _shard(spec, "optimizer")
    if spec.strategy in ("zero3", "fsdp"):
        # The gathered (unsharded) copies of the current and the prefetched unit: the rest of
        # each unit's weights beyond this GPU's shard; never more than the whole model.
        units = spec.transformer.layers if spec.transformer else spec.activation_layers
        if units:
            gathered = _GATHERED_UNITS / units * weight_bytes * (1 - 1 / spec.gpus)
            weights = min(weight_bytes, weights + gathered)
    activations = activation_bytes(spec)

    parts = [
        math.ceil(x) for x in (weights, gradients, optimizer, activations, spec.overhead_bytes)
    ]
    w, g, o, a, ov = parts
    # Round what stays on the GPU, not the paged part: two separate ceilings made the total
    # rise by a byte as GPUs were added.
    resident = min(o, math.ceil(max(0.0, optimizer - paged)))
    paged_int = o - resident
    total = w + g + resident + a + ov
    return MemoryBreakdown(
        weights=w,
        gradients=g,
        optimizer=o,
        activations=a,
        overhead=ov,
        total=total,
        optimizer_paged=paged_int,
    )


def _usable_bytes(spec: MemorySpec, device_bytes: float) -> float:
    _check_number("device_bytes", device_bytes, low=0, high=MAX_DEVICE_BYTES)
    return float(device_bytes) * spec.usable_fraction


def _fits(spec: MemorySpec, usable: float, batch: int, checkpointing: bool) -> bool:
    trial = replace(spec, batch_size=batch, gradient_checkpointing=checkpointing)
    return memory_per_gpu(trial).total <= usable


def _largest(spec: MemorySpec, usable: float, checkpointing: bool, cap: int) -> int | None:
    """Largest batch in [1, cap] that fits (memory never falls as the batch grows)."""
    if not _fits(spec, usable, 1, checkpointing):
        return None
    low, high = 1, cap
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(spec, usable, mid, checkpointing):
            low = mid
        else:
            high = mid - 1
    return low


def largest_batch_that_fits(
    spec: MemorySpec, device_bytes: float, *, checkpointing: bool | None = None
) -> int | None:
    """The largest micro-batch per GPU that fits ``device_bytes`` (up to 2**24), with
    ``checkpointing`` (default: as in ``spec``); ``None`` when not even batch 1 fits.

    Ask with ``checkpointing=True`` for the last resort: ``None`` then means the job does not fit
    these GPUs at all. Without any activation figure every batch costs the same: the cap."""
    ckpt = spec.gradient_checkpointing if checkpointing is None else checkpointing
    _check_flag("checkpointing", ckpt)
    return _largest(spec, _usable_bytes(spec, device_bytes), ckpt, _MAX_BATCH)


# --------------------------------------------------------------------------------------------
# Verdicts

VERDICTS: Final = ("fits", "smaller_batch", "checkpointing", "does_not_fit")
"""fits: as given. smaller_batch: at a smaller micro-batch with gradient accumulation, no new
technique. checkpointing: only with gradient checkpointing turned on (at the same or a smaller
batch). does_not_fit: not even batch 1 with checkpointing (or checkpointing is not allowed)."""


@dataclass(frozen=True)
class FitVerdict:
    """What to do on this hardware, with a one-line message for people.

    ``batch_size``/``accumulation``/``checkpointing`` describe the plan that fits (micro-batch
    × accumulation = the batch as given, so the effective batch is kept); ``breakdown`` is that
    plan's memory, or batch 1's (with checkpointing where allowed) when nothing fits."""

    kind: str
    message: str
    batch_size: int | None
    accumulation: int
    checkpointing: bool
    usable_bytes: int
    breakdown: MemoryBreakdown

    @property
    def fits(self) -> bool:
        """Whether some plan fits these GPUs."""
        return self.kind != "does_not_fit"


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def _largest_divisor_fitting(spec: MemorySpec, usable: float, checkpointing: bool) -> int | None:
    """The largest divisor of the batch that fits, so that accumulation keeps it exactly."""
    top = _largest(spec, usable, checkpointing, spec.batch_size)
    if top is None:
        return None
    batch = spec.batch_size
    divisors: set[int] = set()
    for d in range(1, math.isqrt(batch) + 1):
        if batch % d == 0:
            divisors.update((d, batch // d))
    return max(d for d in divisors if d <= top)


def fit_verdict(spec: MemorySpec, device_bytes: float, gpus: int | None = None) -> FitVerdict:
    """Whether ``spec`` fits GPUs of ``device_bytes`` each (``gpus`` overrides ``spec.gpus``):
    as given; else at a smaller micro-batch with gradient accumulation; else with gradient
    checkpointing (when allowed); else not at all."""
    if gpus is not None:
        _check_number("gpus", gpus, low=0, high=_MAX_GPUS, integer=True)
        spec = replace(spec, gpus=int(gpus))
    usable = _usable_bytes(spec, device_bytes)
    batch = spec.batch_size
    effective = batch * spec.accumulation * spec.gpus
    room = f"{_gib(usable)} usable per GPU"

    def verdict(kind: str, micro: int, ckpt: bool, message: str) -> FitVerdict:
        plan = replace(spec, batch_size=micro, gradient_checkpointing=ckpt)
        return FitVerdict(
            kind=kind,
            message=message,
            batch_size=micro,
            accumulation=batch // micro * spec.accumulation,
            checkpointing=ckpt,
            usable_bytes=int(usable),
            breakdown=memory_per_gpu(plan),
        )

    def accumulate(micro: int) -> str:
        return (
            f"at batch {micro} (gradient accumulation ×{batch // micro * spec.accumulation} "
            "keeps the effective "
            f"batch of {effective})"
        )

    given = memory_per_gpu(spec)
    if given.total <= usable:
        return verdict(
            "fits",
            batch,
            spec.gradient_checkpointing,
            f"fits as given: {_gib(given.total)} of {room}",
        )
    micro = _largest_divisor_fitting(spec, usable, spec.gradient_checkpointing)
    if micro is not None:
        return verdict(
            "smaller_batch", micro, spec.gradient_checkpointing, f"fits {accumulate(micro)}"
        )
    if not spec.gradient_checkpointing and spec.allow_checkpointing:
        micro = _largest_divisor_fitting(spec, usable, True)
        if micro == batch:
            return verdict(
                "checkpointing",
                batch,
                True,
                f"fits only with gradient checkpointing at batch {batch}",
            )
        if micro is not None:
            return verdict(
                "checkpointing",
                micro,
                True,
                f"fits only with gradient checkpointing, {accumulate(micro)}",
            )
    ckpt = spec.gradient_checkpointing or spec.allow_checkpointing
    smallest = memory_per_gpu(replace(spec, batch_size=1, gradient_checkpointing=ckpt))
    how = "with gradient checkpointing" if ckpt else "(gradient checkpointing not allowed)"
    return FitVerdict(
        kind="does_not_fit",
        message=(
            f"does not fit even at batch 1 {how}: needs {_gib(smallest.total)} per GPU, {room}"
        ),
        batch_size=None,
        accumulation=spec.accumulation,
        checkpointing=ckpt,
        usable_bytes=int(usable),
        breakdown=smallest,
    )


# --------------------------------------------------------------------------------------------
# From a Workload

#: The optimizers people name (Workload.optimizer) as this module counts them: "sgd" is SGD with
#: momentum (what conv nets train with), paged AdamW 8-bit keeps its states in host memory.
_OPTIMIZER_OF: Final = {
    "adamw": ("adam", False),
    "adamw-8bit": ("adam8bit", False),
    "sgd": ("sgd_momentum", False),
    "paged-adamw-8bit": ("adam8bit", True),
}


def spec_from_workload(
    w: Workload,
    *,
    gpus: int = 1,
    strategy: str | None = None,
    transformer: TransformerShape | None = None,
    optimizer: str = "adam",
    gradient_checkpointing: bool = False,
    allow_checkpointing: bool | None = None,
    base_weight_bits: int | None = None,
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES,
    usable_fraction: float = DEFAULT_USABLE_FRACTION,
) -> MemorySpec:
    """A :class:`MemorySpec` for a preset or custom :class:`~hwadvisor.workloads.Workload`.

    From the workload: parameters, trainable parameters, precision, batch size (per GPU), the
    frozen weights' bytes (``frozen_bytes_per_parameter`` × 8 bits), and activations: the
    ``transformer`` shape if given, else the preset's known shape, else the workload's
    per-token figure × sequence length, else its per-sample figure. Defaults for the rest: Adam;
    ``strategy`` ddp on one GPU and fsdp on several (a model that needs several GPUs needs its
    states sharded). From the workload too: its optimizer (``optimizer`` here overrides it when
    not "adam"), its micro-batch, the frozen base's bits (QLoRA: NF4 with double quantization,
    embeddings and head in 16 bits), checkpointing on where it says so, allowed where it allows
    it, else for transformers (one flag in Hugging Face and Lightning; LoRA presets included)
    and not for conv nets (torchvision has no switch for it); Workload.bytes_per_parameter is
    not used: this module counts the bytes itself.
    Raises :class:`MemoryModelError` for classical (CPU) work, which has no device memory model.
    """
    if w.kind == "classical":
        raise MemoryModelError(f"{w.name} is CPU work: no GPU memory to estimate")
    shape = transformer
    given = w.activation_bytes_per_token is not None or w.activation_bytes_per_sample is not None
    if shape is None and w.has_shape and not (w.shape_assumed and given):
        # An assumed shape never overrides the user's own activation figure.
        assert w.layers and w.hidden and w.heads and w.sequence_length
        shape = TransformerShape(
            w.layers, w.hidden, w.heads, w.sequence_length, w.vocab_size, w.flash_attention
        )
    per_sample: float | None = None
    if shape is None:
        if w.activation_bytes_per_token is not None:
            per_sample = w.activation_bytes_per_token * (w.sequence_length or 1)
        elif w.activation_bytes_per_sample is not None:
            per_sample = w.activation_bytes_per_sample
        if per_sample is not None:
            per_sample *= activation_scale(w)
    bits = base_weight_bits if base_weight_bits is not None else w.base_bits
    if bits is None and w.frozen_bytes_per_parameter is not None and w.trainable_parameters:
        bits = round(w.frozen_bytes_per_parameter * 8)
        if bits not in BASE_WEIGHT_BITS:
            raise MemoryModelError(
                f"{w.name}: frozen_bytes_per_parameter {w.frozen_bytes_per_parameter:g} is not "
                "one of 4, 2, 1 or 0.5 bytes"
            )
    # bitsandbytes quantizes the linear layers: the embeddings and the output head stay 16-bit.
    unquantized = 0.0
    if bits is not None and bits < 16 and shape is not None and shape.vocab_size:
        frozen = w.parameters - (w.trainable_parameters or w.parameters)
        unquantized = min(float(frozen), 2.0 * shape.vocab_size * shape.hidden)
    allow = allow_checkpointing
    if allow is None:
        allow = w.checkpointing_allowed
    if allow is None:
        allow = w.kind == "transformer" or w.gradient_checkpointing
    name, paged = _OPTIMIZER_OF[w.optimizer] if optimizer == "adam" else (optimizer, False)
    return MemorySpec(
        parameters=w.parameters,
        trainable_parameters=w.trainable_parameters,
        precision=w.precision,
        base_weight_bits=bits,
        double_quant=w.method == "qlora",
        unquantized_parameters=unquantized,
        optimizer=name,
        paged_optimizer=paged,
        transformer=shape,
        activation_bytes_per_sample=per_sample,
        gradient_checkpointing=gradient_checkpointing or w.gradient_checkpointing,
        allow_checkpointing=allow,
        batch_size=w.micro_batch or w.batch_size,
        accumulation=-(-w.batch_size // w.micro_batch) if w.micro_batch else 1,
        gpus=gpus,
        strategy=strategy or ("ddp" if gpus == 1 else "fsdp"),
        overhead_bytes=overhead_bytes,
        usable_fraction=usable_fraction,
    )


# --------------------------------------------------------------------------------------------
# Model-size helpers


def llama_parameters(layers: int, hidden: int, intermediate: int, vocab_size: int) -> int:
    """Parameters of a LLaMA-style decoder: per layer four h×h attention projections and three
    h×intermediate SwiGLU projections, plus untied input embeddings and output head (norms are
    negligible)."""
    return layers * (4 * hidden * hidden + 3 * hidden * intermediate) + 2 * vocab_size * hidden


_LORA_MODULES: Final = ("qv", "qkvo", "all")


def lora_trainable_parameters(
    layers: int, hidden: int, rank: int, modules: str = "qv", intermediate: int | None = None
) -> int:
    """LoRA adapter parameters: rank × (d_in + d_out) per adapted matrix (Hu et al. 2021).

    ``modules``: "qv" (the LoRA paper's default), "qkvo" (all attention projections) or "all"
    (every linear layer of a LLaMA-style block, as QLoRA does; needs ``intermediate``)."""
    _check_choice("modules", modules, _LORA_MODULES)
    for name, value in (("layers", layers), ("hidden", hidden), ("rank", rank)):
        _check_number(name, value, low=0, high=_MAX_HIDDEN, integer=True)
    attention = {"qv": 2, "qkvo": 4, "all": 4}[modules] * rank * 2 * hidden
    mlp = 0
    if modules == "all":
        if intermediate is None:
            raise MemoryModelError('modules "all" needs the intermediate (MLP) size')
        _check_number("intermediate", intermediate, low=0, high=_MAX_HIDDEN * 8, integer=True)
        mlp = 3 * rank * (hidden + intermediate)
    return layers * (attention + mlp)


# --------------------------------------------------------------------------------------------
# Specs from data, and the documented cases


def spec_from_mapping(data: object, where: str = "spec") -> MemorySpec:
    """A :class:`MemorySpec` from a TOML/JSON-style table. A ``transformer`` sub-table gives the
    shape; ``lora_rank`` with ``lora_modules`` (and ``intermediate_size`` for "all") computes
    ``trainable_parameters`` from that shape and adds them to ``parameters`` (then the base
    model's count). Unknown keys and bad values raise :class:`MemoryModelError` naming
    ``where`` and the key."""
    from hwadvisor.catalog.memory_cases import read_spec  # models built only when needed

    return read_spec(data, where)


EXPECTATIONS: Final = ("fits", "needs_changes", "not_as_given", "trainable", "does_not_fit")
"""What a documented case says. fits: the configuration as documented fits. needs_changes: it
does not fit as documented but a smaller batch or checkpointing makes it fit. not_as_given: it
does not fit as documented (the source says no more). trainable: the model trains on this
hardware (at some batch, possibly with checkpointing). does_not_fit: not at all."""

_AGREES: Final = {
    "fits": {"fits"},
    "needs_changes": {"smaller_batch", "checkpointing"},
    "not_as_given": {"smaller_batch", "checkpointing", "does_not_fit"},
    "trainable": {"fits", "smaller_batch", "checkpointing"},
    "does_not_fit": {"does_not_fit"},
}


def agrees(expect: str, verdict: FitVerdict) -> bool:
    """Whether ``verdict`` agrees with a documented expectation (see :data:`EXPECTATIONS`)."""
    _check_choice("expect", expect, EXPECTATIONS)
    return verdict.kind in _AGREES[expect]


@dataclass(frozen=True)
class MemoryCase:
    """A memory-fit case from documented practice, with its source and what it says."""

    id: str
    claim: str
    source: str
    expect: str
    device_bytes: float
    spec: MemorySpec
    known_disagreement: str = ""
    notes: str = field(default="", compare=False)

    def verdict(self) -> FitVerdict:
        """hwadvisor's verdict for this case."""
        return fit_verdict(self.spec, self.device_bytes)


MEMORY_CASES_RESOURCE: Final = "memory_cases.toml"


def load_memory_cases(
    text: str | None = None, origin: str = MEMORY_CASES_RESOURCE
) -> list[MemoryCase]:
    """The documented cases (``catalog/memory_cases.toml`` unless ``text`` is given), in order."""
    if text is None:
        return list(_packaged_cases())
    from hwadvisor.catalog.memory_cases import parse_cases  # models built only when needed

    return parse_cases(text, origin)


@lru_cache(maxsize=1)
def _packaged_cases() -> tuple[MemoryCase, ...]:
    from hwadvisor.catalog.memory_cases import parse_cases

    return tuple(
        parse_cases(packaged_data(MEMORY_CASES_RESOURCE, MemoryModelError), MEMORY_CASES_RESOURCE)
    )
