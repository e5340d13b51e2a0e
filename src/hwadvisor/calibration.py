"""The calibration table (``catalog/calibration.toml``): published, measured training throughputs,
each with its source, and how close hwadvisor's own estimates come to them.

Every row names catalog hardware (or a CPU by cores, clock and core design), a workload the
estimate can express (a preset, or a conv net by FLOPs per sample, or a transformer by its
parameters: 6·N FLOPs per token) and one measured figure. :func:`compare` turns the row into a
:class:`~hwadvisor.workloads.Workload` and a ladder :class:`~hwadvisor.advise.Candidate`, asks
:func:`hwadvisor.advise.candidate_rate` (the path the advice takes for catalog hardware) how long
that work takes, and states the prediction in the row's unit.

The ratio is always predicted *speed* over measured speed: for throughput rows predicted /
measured, for time rows (hours, GPU-hours) measured / predicted. Above 1, hwadvisor promises more
than was measured. Pure Python: no torch, no hardware.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator
from pydantic_core import core_schema

from hwadvisor import advise
from hwadvisor.advise import Candidate, Rules
from hwadvisor.catalog.peaks import find_gpu_peak, flops_per_cycle
from hwadvisor.catalog.schema import (
    FLAG,
    Check,
    DataModel,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    Text,
    Whole,
    choice,
    distinct_entries,
    load_toml,
    read_text,
)
from hwadvisor.catalog.toml import TomlSource, packaged_data
from hwadvisor.errors import InputError
from hwadvisor.workloads import (
    TRAINING_PRECISIONS,
    Workload,
    WorkloadError,
    assume_shape,
    check_workload,
    custom_workload,
    get_workload,
    without_shape,
)

__all__ = [
    "CALIBRATION_RESOURCE",
    "TARGET_GEOMEAN",
    "TARGET_MAX_FACTOR",
    "TARGET_SHARE_WITHIN_1_5",
    "TIME_UNITS",
    "UNITS",
    "CalibrationError",
    "CalibrationRow",
    "Comparison",
    "Summary",
    "calibration_candidate",
    "calibration_workload",
    "compare",
    "compare_all",
    "load_calibration",
    "predicted_speed",
    "report_lines",
    "summarize",
]

CALIBRATION_RESOURCE = "calibration.toml"

#: What a measured figure can be. Throughputs count the whole system (all its GPUs) except
#: ``tokens_per_s_per_gpu``; ``hours`` is the wall time of the whole run on ``gpus`` GPUs.
UNITS = ("samples_per_s", "tokens_per_s", "tokens_per_s_per_gpu", "hours", "gpu_hours")
TIME_UNITS = ("hours", "gpu_hours")

#: Targets the advice model is fitted towards (printed as PASS/MISS, never asserted by tests).
TARGET_SHARE_WITHIN_1_5 = 0.90
TARGET_MAX_FACTOR = 2.0
TARGET_GEOMEAN = (0.85, 1.15)

_MODEL_KINDS = ("conv", "transformer")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_CPU_KEYS = ("cpu_cores", "cpu_sockets", "cpu_ghz", "cpu_architecture", "cpu_microarchitecture")

#: The estimate is rounded to 2 significant figures; the work is sized so that the estimate
#: lands near this many seconds, where that rounding costs under 0.6 %.
_TARGET_SECONDS = 9.4e5
_FIRST_AMOUNT = 10**9


class CalibrationError(InputError):
    """The calibration table is malformed, or a row cannot be estimated; one-line message."""


@dataclass(frozen=True)
class CalibrationRow:
    """One published, measured figure and what is needed to estimate it."""

    id: str
    origin: str
    hardware: str
    gpus: int
    workload: str
    precision: str
    measured: float
    unit: str
    source: str
    note: str = ""
    preset: str | None = None
    kind: str | None = None
    parameters: int | None = None
    flops_per_sample: float | None = None
    flops_per_token: float | None = None
    sequence_length: int | None = None
    run_samples: int | None = None
    run_tokens: int | None = None
    cpu_cores: int | None = None
    cpu_sockets: int | None = None
    cpu_ghz: float | None = None
    cpu_architecture: str | None = None
    cpu_microarchitecture: str | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    vocab_size: int | None = None
    flash_attention: bool | None = None
    micro_batch: int | None = None
    """Samples (sequences) per GPU per pass, where the source gives it."""
    activation_bytes_per_sample: float | None = None
    """A conv net's stored activations per sample in 16-bit (mixed precision), where counted
    (scripts/measure_activations.py)."""
    gradient_checkpointing: bool | None = None
    """Whether the measured run recomputed activations, where the source says."""

    @property
    def shape(self) -> dict[str, Any]:
        """The transformer shape the row gives (empty where it gives none)."""
        keys = ("layers", "hidden", "heads", "vocab_size", "flash_attention")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}

    @property
    def is_cpu(self) -> bool:
        return self.gpus == 0


@dataclass(frozen=True)
class Comparison:
    """hwadvisor's figure for one row, in the row's unit, and the speed ratio."""

    row: CalibrationRow
    predicted: float
    ratio: float
    """Predicted speed / measured speed: above 1, hwadvisor is optimistic."""
    kind: str
    device_class: str
    parameters: int = 0
    """The model's parameters as estimated (its band group depends on them)."""

    @property
    def factor(self) -> float:
        """How far off, either way: max(ratio, 1 / ratio) ≥ 1."""
        return max(self.ratio, 1.0 / self.ratio)


@dataclass(frozen=True)
class Summary:
    """The table as a whole against the targets."""

    rows: int
    within_1_5: int
    within_2: int
    geomean: float
    worst: tuple[Comparison, ...]
    groups: tuple[tuple[str, int, float], ...]
    """(kind/device class, rows, geometric-mean ratio), sorted by name."""

    @property
    def share_within_1_5(self) -> float:
        return self.within_1_5 / self.rows if self.rows else 0.0

    @property
    def targets(self) -> tuple[tuple[str, bool], ...]:
        low, high = TARGET_GEOMEAN
        return (
            (
                f">= {TARGET_SHARE_WITHIN_1_5:.0%} of rows within 1.5x",
                self.share_within_1_5 >= TARGET_SHARE_WITHIN_1_5,
            ),
            (f"all rows within {TARGET_MAX_FACTOR:g}x", self.within_2 == self.rows),
            (f"geometric-mean ratio in {low:g}-{high:g}", low <= self.geomean <= high),
        )


# --------------------------------------------------------------------------------------------
# Loading

_SLUG = Check("a lower-case slug", core_schema.str_schema(strict=True, pattern=_ID.pattern))


class _Row(DataModel):
    """One ``[[row]]``; a row hwadvisor could not estimate is refused by its validator."""

    id: Annotated[str, _SLUG]
    origin: Annotated[str, _SLUG]
    hardware: Text
    gpus: Whole
    workload: Text
    precision: Annotated[str, choice(*TRAINING_PRECISIONS)]
    measured: Positive
    unit: Annotated[str, choice(*UNITS)]
    source: Text
    note: OptText = None
    preset: OptText = None
    kind: Annotated[str | None, choice(*_MODEL_KINDS)] = None
    parameters: OptPositiveWhole = None
    flops_per_sample: OptPositive = None
    flops_per_token: OptPositive = None
    sequence_length: OptPositiveWhole = None
    run_samples: OptPositiveWhole = None
    run_tokens: OptPositiveWhole = None
    cpu_cores: OptPositiveWhole = None
    cpu_sockets: OptPositiveWhole = None
    cpu_ghz: OptPositive = None
    cpu_architecture: OptText = None
    cpu_microarchitecture: OptText = None
    layers: OptPositiveWhole = None
    hidden: OptPositiveWhole = None
    heads: OptPositiveWhole = None
    vocab_size: OptPositiveWhole = None
    flash_attention: Annotated[bool | None, FLAG] = None
    micro_batch: OptPositiveWhole = None
    gradient_checkpointing: Annotated[bool | None, FLAG] = None
    activation_bytes_per_sample: OptPositive = None

    def row(self) -> CalibrationRow:
        return CalibrationRow(**self.model_dump(exclude_none=True))

    @model_validator(mode="after")
    def _estimable(self) -> _Row:
        _check(self.row())
        return self


class _Table(DataModel):
    row: list[_Row] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows(self) -> _Table:
        distinct_entries(self.row, "row", lambda r: r.id, "id")
        return self


def load_calibration(path: Path | None = None) -> list[CalibrationRow]:
    """The rows of the packaged table (cached), or of the file at ``path``, checked; file
    order."""
    if path is None:
        return list(_packaged_rows())
    return _parse(read_text(path, CalibrationError), str(path))


@lru_cache(maxsize=1)
def _packaged_rows() -> tuple[CalibrationRow, ...]:
    return tuple(
        _parse(packaged_data(CALIBRATION_RESOURCE, CalibrationError), CALIBRATION_RESOURCE)
    )


def _parse(text: TomlSource, origin: str) -> list[CalibrationRow]:
    return [r.row() for r in load_toml(_Table, text, origin, CalibrationError).row]


def _check(row: CalibrationRow) -> None:
    """``ValueError`` (one line) for a row hwadvisor could not estimate."""
    kind = _model_kind(row)
    _check_hardware(row)
    if row.unit in ("tokens_per_s", "tokens_per_s_per_gpu") and kind != "transformer":
        raise ValueError(f"unit {row.unit!r} needs a transformer workload")
    if row.unit == "samples_per_s" and kind == "transformer" and row.sequence_length is None:
        raise ValueError("sequences per second need 'sequence_length'")
    if row.unit in ("tokens_per_s_per_gpu", "gpu_hours") and row.gpus < 1:
        raise ValueError(f"unit {row.unit!r} needs gpus >= 1")
    if row.unit in TIME_UNITS:
        needed = "run_tokens" if kind == "transformer" else "run_samples"
        if getattr(row, needed) is None:
            raise ValueError(f"unit {row.unit!r} needs {needed!r} (the whole run)")


def _model_kind(row: CalibrationRow) -> str:
    """The row's workload kind, once the model fields are known to be enough."""
    if row.preset is not None:
        preset = get_workload(row.preset)  # UnknownWorkload names the close matches
        if preset.kind not in _MODEL_KINDS:
            raise ValueError(f"preset {row.preset!r} is not a conv or transformer")
        if row.kind is not None and row.kind != preset.kind:
            raise ValueError(f"kind {row.kind!r} contradicts preset {row.preset!r} ({preset.kind})")
        return preset.kind
    if row.kind is None:
        raise ValueError(f"give 'preset', or 'kind' = {' or '.join(map(repr, _MODEL_KINDS))}")
    if row.parameters is None:
        raise ValueError(f"a {row.kind} row needs 'parameters'")
    if row.kind == "conv" and row.flops_per_sample is None:
        raise ValueError("a conv row needs 'flops_per_sample'")
    return row.kind


def _check_hardware(row: CalibrationRow) -> None:
    if row.is_cpu:
        for key in ("cpu_cores", "cpu_ghz", "cpu_microarchitecture"):
            if getattr(row, key) is None:
                raise ValueError(f"a CPU row (gpus = 0) needs {key!r}")
        if _cpu_flops_per_cycle(row) is None:
            raise ValueError(f"no FLOP/cycle figure for the CPU core {row.cpu_microarchitecture!r}")
        return
    for key in _CPU_KEYS:
        if getattr(row, key) is not None:
            raise ValueError(f"{key!r} is for CPU rows (gpus = 0) only")
    peak = find_gpu_peak(row.hardware)
    if peak is None:
        raise ValueError(f"GPU {row.hardware!r} is not in the GPU catalog")
    if row.precision == "tf32" and peak.tf32_tflops is None:
        # Lambda's "fp32" columns are TF32 on Ampere and later, FP32 before: a TF32 figure
        # from a GPU without TF32 tensor cores is an FP32 run.
        raise ValueError(
            f"precision 'tf32' needs a GPU with TF32 (the catalog has none for {peak.name!r})"
        )


def _cpu_flops_per_cycle(row: CalibrationRow) -> int | None:
    fpc, _why = flops_per_cycle((), row.cpu_architecture, row.cpu_microarchitecture)
    return fpc


# --------------------------------------------------------------------------------------------
# The row as hwadvisor sees it


def calibration_workload(row: CalibrationRow, *, as_typed: bool = False) -> Workload:
    """The row's workload: the preset with the row's precision (and any model figure the row
    overrides), or a custom workload. Its size is arbitrary: only the rate is compared. A row
    that gives another model size for a preset with a shape must give its shape too: the
    preset's would be wrong for it, so it is dropped. ``as_typed``: a transformer as people
    type it, parameters and tokens only — no shape, no sequence length, no vocabulary — so
    that the advice assumes them as it does for them."""
    if as_typed:
        w = calibration_workload(row)
        if w.kind != "transformer":
            return w
        bare = replace(
            without_shape(w, keep_length=False),
            gradient_checkpointing=False,
            flops_per_token=w.flops_per_token or None,
        )
        return assume_shape(bare)
    try:
        if row.preset is not None:
            base = get_workload(row.preset)
            changes: dict[str, Any] = {
                "name": row.id,
                "precision": row.precision,
                "activation_precision": base.activation_precision or base.precision,
            }
            if row.sequence_length is not None:
                changes["sequence_length"] = row.sequence_length
            if row.parameters is not None:
                changes["parameters"] = row.parameters
                if base.kind == "transformer":
                    changes["flops_per_token"] = 6.0 * row.parameters
                    changes.update(layers=None, hidden=None, heads=None, vocab_size=None)
            changes.update(row.shape)
            changes.update(_run_settings(row))
            if row.flops_per_sample is not None:
                changes["flops_per_sample"] = row.flops_per_sample
            if row.flops_per_token is not None:
                changes["flops_per_token"] = row.flops_per_token
            workload = replace(base, **changes)
            check_workload(workload, f"calibration row {row.id!r}")
            return assume_shape(workload)
        assert row.parameters is not None  # checked on loading
        if row.kind == "conv":
            conv = custom_workload(
                name=row.id,
                parameters=row.parameters,
                flops_per_sample=row.flops_per_sample,
                samples=1,
                precision=row.precision,
                activation_bytes_per_sample=row.activation_bytes_per_sample,
            )
            # The counted activations are 16-bit ones (mixed precision).
            return replace(conv, activation_precision="fp16", **_run_settings(row))
        custom = custom_workload(
            name=row.id,
            parameters=row.parameters,
            flops_per_token=row.flops_per_token,
            tokens=1,
            precision=row.precision,
            sequence_length=row.sequence_length,
            **row.shape,
        )
        return replace(custom, **_run_settings(row))
    except WorkloadError as exc:
        raise CalibrationError(f"calibration row {row.id!r}: {exc}") from exc


def _run_settings(row: CalibrationRow) -> dict[str, Any]:
    """The measured run's micro-batch (as the batch per GPU) and checkpointing, where given."""
    out: dict[str, Any] = {}
    if row.micro_batch is not None:
        out["batch_size"] = row.micro_batch
    if row.gradient_checkpointing is not None:
        out["gradient_checkpointing"] = row.gradient_checkpointing
    return out


def calibration_candidate(row: CalibrationRow) -> Candidate:
    """The row's hardware as a ladder rung, built by the rules-file reader itself, so that the
    device class (and so the efficiency) is the one the advice would give it."""
    table: dict[str, Any]
    if row.is_cpu:
        assert row.cpu_cores is not None and row.cpu_ghz is not None  # checked on loading
        table = {
            "role": "cpu",
            "title": row.hardware,
            "cores": row.cpu_cores,
            "clock_mhz": row.cpu_ghz * 1000.0,
            "flops_per_cycle": _cpu_flops_per_cycle(row),
            "sockets": row.cpu_sockets or 1,
        }
    else:
        role = "single_gpu" if row.gpus == 1 else "node"
        table = {"role": role, "title": row.hardware, "gpu": row.hardware, "gpus": row.gpus}
    try:
        return advise.parse_candidate(table, 1, f"calibration row {row.id!r}")
    except advise.RulesError as exc:
        raise CalibrationError(str(exc)) from exc


def _per_token(w: Workload) -> bool:
    return w.kind == "transformer" and w.flops_per_token is not None


def _sized(w: Workload, amount: int) -> Workload:
    if _per_token(w):
        return replace(w, tokens=amount, samples=None, epochs=1.0)
    return replace(w, samples=amount, tokens=None, epochs=1.0)


def _seconds(w: Workload, candidate: Candidate, rules: Rules) -> float:
    # The rows measure training throughput (no start-up, no evaluation) of runs that ran: at
    # the micro-batch and checkpointing they state, whatever the memory model would plan.
    steady = replace(rules, startup_seconds=0.0, eval_fraction=0.0)
    rate = advise.candidate_rate(w, candidate, steady, origin="calibration", planned=False)
    if rate.estimate is None:
        raise CalibrationError(
            f"{w.name}: hwadvisor gives no estimate on {candidate.title} ({w.precision})"
        )
    return rate.estimate.seconds


def predicted_speed(w: Workload, candidate: Candidate, rules: Rules) -> float:
    """Samples (or tokens, for a per-token workload) per second that the advice predicts for
    ``w`` on ``candidate``: through :func:`hwadvisor.advise.candidate_rate`, the path of every
    catalog ladder rung. The work is sized twice so that the 2-significant-figure rounding of
    the estimate costs under 0.6 %."""
    amount = _FIRST_AMOUNT
    seconds = _seconds(_sized(w, amount), candidate, rules)
    amount = max(1, round(amount * _TARGET_SECONDS / seconds))
    seconds = _seconds(_sized(w, amount), candidate, rules)
    return amount / seconds


def compare(
    row: CalibrationRow, rules: Rules | None = None, *, as_typed: bool = False
) -> Comparison:
    """hwadvisor's figure for ``row``, in the row's unit, and the speed ratio (``as_typed``:
    for the workload as people type it, see :func:`calibration_workload`)."""
    rules = rules if rules is not None else advise.load_rules()
    w = calibration_workload(row, as_typed=as_typed)
    candidate = calibration_candidate(row)
    speed = predicted_speed(w, candidate, rules)
    if row.unit == "samples_per_s":
        per_token = _per_token(w) and row.sequence_length
        predicted = speed / row.sequence_length if per_token and row.sequence_length else speed
    elif row.unit == "tokens_per_s":
        predicted = speed
    elif row.unit == "tokens_per_s_per_gpu":
        predicted = speed / row.gpus
    else:
        run = row.run_tokens if _per_token(w) else row.run_samples
        assert run is not None  # checked on loading
        predicted = run / speed / 3600.0
        if row.unit == "gpu_hours":
            predicted *= row.gpus
    ratio = row.measured / predicted if row.unit in TIME_UNITS else predicted / row.measured
    return Comparison(
        row=row,
        predicted=predicted,
        ratio=ratio,
        kind=w.kind,
        device_class=candidate.device_class,
        parameters=w.parameters,
    )


def compare_all(
    rows: Sequence[CalibrationRow] | None = None,
    rules: Rules | None = None,
    *,
    as_typed: bool = False,
) -> list[Comparison]:
    """:func:`compare` for every row (the packaged table by default), in order."""
    rules = rules if rules is not None else advise.load_rules()
    chosen = rows if rows is not None else load_calibration()
    return [compare(row, rules, as_typed=as_typed) for row in chosen]


# --------------------------------------------------------------------------------------------
# Summary and report


def _geomean(ratios: Iterable[float]) -> float:
    logs = [math.log(r) for r in ratios]
    return math.exp(sum(logs) / len(logs)) if logs else float("nan")


def summarize(comparisons: Sequence[Comparison], worst: int = 5) -> Summary:
    """Counts within 1.5× and 2×, the geometric-mean ratio, the ``worst`` rows and the
    geometric mean of each kind/device-class group."""
    groups: dict[str, list[float]] = {}
    for c in comparisons:
        groups.setdefault(f"{c.kind}/{c.device_class}", []).append(c.ratio)
    ranked = sorted(comparisons, key=lambda c: c.factor, reverse=True)
    return Summary(
        rows=len(comparisons),
        within_1_5=sum(1 for c in comparisons if c.factor <= 1.5 + 1e-9),
        within_2=sum(1 for c in comparisons if c.factor <= 2.0 + 1e-9),
        geomean=_geomean(c.ratio for c in comparisons),
        worst=tuple(ranked[:worst]),
        groups=tuple(
            (name, len(ratios), _geomean(ratios)) for name, ratios in sorted(groups.items())
        ),
    )


def _figure(value: float) -> str:
    if value >= 1e6:
        return f"{value:.3g}"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _line(c: Comparison) -> str:
    r = c.row
    where = f"{r.gpus}x {r.hardware}" if r.gpus else r.hardware
    return (
        f"{r.id:<34.34} {where:<28.28} {r.precision:<4} {r.unit:<20} "
        f"{_figure(r.measured):>10} {_figure(c.predicted):>10} {c.ratio:>6.2f}"
    )


def report_lines(comparisons: Sequence[Comparison], worst: int = 5) -> list[str]:
    """The per-row table, the summary and the targets with PASS/MISS, as lines of text."""
    s = summarize(comparisons, worst=worst)
    lines = [
        "ratio = predicted speed / measured speed (time rows: measured / predicted); "
        "above 1 hwadvisor is optimistic",
        f"{'id':<34} {'hardware':<28} {'prec':<4} {'unit':<20} "
        f"{'measured':>10} {'predicted':>10} {'ratio':>6}",
    ]
    lines += [_line(c) for c in comparisons]
    lines += [
        "",
        f"rows: {s.rows}; within 1.5x: {s.within_1_5} ({s.share_within_1_5:.0%}); "
        f"within 2x: {s.within_2}; geometric-mean ratio: {s.geomean:.3f}",
        "by kind/device class (rows, geometric-mean ratio):",
    ]
    lines += [f"  {name:<28} {count:>3}  {gm:.3f}" for name, count, gm in s.groups]
    lines.append(f"worst {len(s.worst)}:")
    lines += [f"  {_line(c)}" for c in s.worst]
    lines.append("targets:")
    lines += [f"  {'PASS' if ok else 'MISS'}  {label}" for label, ok in s.targets]
    return lines
