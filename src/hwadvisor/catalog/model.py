"""The time-to-train model's fitted parameters (``catalog/model.toml``).

A handful of general rules, never a table of rows: the efficiency a kind of work reaches on a
class of device, how it falls with the model's width, how compute and memory time overlap, what a
consumer card's tensor cores deliver, how the host's kernel launches and the gradient exchange
cost. ``scripts/fit_model.py`` fits them to the calibration table (published, measured
throughputs) and writes the file with how they were fitted; ``benchmarks/advice_accuracy.py``
reports how well they predict, in-sample and leaving each publisher out.

While fitting, :func:`using` swaps the parameters in for the duration of a ``with`` block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Annotated

from pydantic import Field

from hwadvisor.catalog.schema import DataModel, Fraction, Positive, Text, load_toml, number
from hwadvisor.catalog.toml import packaged_data
from hwadvisor.errors import InputError

MODEL_RESOURCE = "model.toml"


@dataclass(frozen=True)
class ModelParams:
    """The fitted rules of the time-to-train model (see each field's comment)."""

    tensor_transformer: float = 0.50
    """Share of the tensor peak a wide transformer (hidden → ∞) reaches: the asymptote."""
    width_half: float = 256.0
    """Hidden size at which a transformer's GEMMs reach half of that asymptote: eff(h) =
    tensor_transformer · h / (h + width_half)."""
    tensor_conv: float = 0.20
    """Share of the tensor peak mixed-precision conv nets reach (before memory traffic)."""
    vector_transformer: float = 0.65
    """Share of the FP32 (CUDA-core) peak an FP32 transformer reaches."""
    vector_conv: float = 0.55
    """Share of the FP32 peak FP32 convolutions reach."""
    consumer_tensor: float = 1.7
    """What a consumer card's (GeForce) catalog tensor peak — FP32-accumulate, half the pro
    card's — is worth in training, as a factor: between 1 (the half rate binds) and 2 (it does
    not, the step is bound elsewhere); fitted within 1.6-2, where same-die GeForce/pro pairs
    come out as measured (0.86-1.3x apart)."""
    traffic_per_activation_byte: float = 20.0
    """Bytes moved through device memory per byte of stored activations, at the card's full
    bandwidth (written, read back, through the element-wise layers both ways)."""
    overlap: float = 0.0
    """How much of the shorter of compute and memory time adds to the longer: 0 = max(), 1 =
    their sum."""
    host_seconds_per_kernel: float = 8e-6
    """Host time to issue one GPU kernel in eager PyTorch (45 kernels per transformer layer)."""
    cpu_conv: float = 0.30
    """Share of the CPU's FP32 peak (base clock) conv training reaches."""
    cpu_transformer: float = 0.20
    """Share of the CPU's FP32 peak transformer training reaches."""
    socket_scaling: float = 0.8
    """What each extra CPU socket adds of the first one's throughput."""
    fsdp_exposed: float = 0.3
    """Sharded training (FSDP/ZeRO-3) gathers each layer's weights while the one before computes:
    a micro-step takes the longer of its compute and its communication plus this share of the
    shorter (prefetching hides the rest). Short micro-steps (sharded fine-tuning at small
    micro-batches) are bound by the communication. DDP hides its all-reduce behind the backward
    pass (2/3 of the step)."""

    def with_values(self, values: dict[str, float]) -> ModelParams:
        return replace(self, **values)


FIT_NAMES = tuple(f.name for f in fields(ModelParams))


class _Params(DataModel):
    tensor_transformer: Fraction
    width_half: Annotated[float, number("a positive number", gt=0)]
    tensor_conv: Fraction
    vector_transformer: Fraction
    vector_conv: Fraction
    consumer_tensor: Annotated[float, number("a factor from 1 to 2", ge=1, le=2)]
    traffic_per_activation_byte: Positive
    overlap: Annotated[float, number("a fraction in [0, 1]", ge=0, le=1)]
    host_seconds_per_kernel: Positive
    cpu_conv: Fraction
    cpu_transformer: Fraction
    socket_scaling: Fraction
    fsdp_exposed: Annotated[float, number("a fraction in [0, 1]", ge=0, le=1)]


class _Band(DataModel):
    """The range shown around an estimate, from the calibration errors of one group."""

    group: Text
    low: Positive
    high: Positive
    rows: int = 0


class _ModelFile(DataModel):
    fitted: Text = ""
    params: _Params
    band: list[_Band] = Field(default_factory=list)


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    rows: int


class ModelError(InputError):
    """The model file is malformed: one line naming the key."""


@lru_cache(maxsize=1)
def _packaged() -> tuple[ModelParams, dict[str, Band], str]:
    data = load_toml(
        _ModelFile, packaged_data(MODEL_RESOURCE, ModelError), MODEL_RESOURCE, ModelError
    )
    params = ModelParams(**data.params.model_dump())
    bands = {b.group: Band(b.low, b.high, b.rows) for b in data.band}
    return params, bands, data.fitted


_OVERRIDE: ContextVar[ModelParams | None] = ContextVar("model_params", default=None)


def model_params() -> ModelParams:
    """The parameters in force: the packaged fit, or those of an enclosing :func:`using`."""
    override = _OVERRIDE.get()
    return override if override is not None else _packaged()[0]


def bands() -> dict[str, Band]:
    """The estimate's range by group (``transformer/datacenter-gpu`` …), from the fit."""
    return dict(_packaged()[1])


#: Where the fit has no range for a group: the earlier fixed one.
DEFAULT_BAND = (0.6, 1.6)


#: Transformers under this many parameters have a range of their own: implementations of
#: small models differ most (a fused, compiled GPT-2 runs at twice an eager one's speed).
SMALL_TRANSFORMER = 1e9


def band_group(kind: str, device_class: str, parameters: float | None = None) -> str:
    """The group an estimate's range comes from: ``transformer-small/consumer-gpu`` …"""
    small = kind == "transformer" and parameters is not None and parameters < SMALL_TRANSFORMER
    return f"{kind}{'-small' if small else ''}/{device_class}"


def band_for(kind: str, device_class: str, parameters: float | None = None) -> tuple[float, float]:
    """The (low, high) multipliers of an estimate's time for this kind of work (small
    transformers apart) on this class of device, from the fit's out-of-sample errors; never
    narrower than the kind's own (a small model's range holds its kind's too)."""
    found = _packaged()[1]
    band = found.get(band_group(kind, device_class, parameters))
    kind_band = found.get(f"{kind}/{device_class}") or found.get("all")
    if band is None:
        band = kind_band
    if band is None:
        return DEFAULT_BAND
    if kind_band is not None:
        return (min(band.low, kind_band.low), max(band.high, kind_band.high))
    return (band.low, band.high)


def fitted_on() -> str:
    """How the packaged parameters were fitted, in a line."""
    return _packaged()[2]


@contextlib.contextmanager
def using(params: ModelParams) -> Iterator[None]:
    """Estimate with ``params`` inside the block (fitting, leave-one-out evaluation)."""
    token = _OVERRIDE.set(params)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)
