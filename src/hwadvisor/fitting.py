"""Fitting the time-to-train model's rules to the calibration table, and judging them honestly.

:func:`fit` finds the :class:`~hwadvisor.catalog.model.ModelParams` that bring the advice's own
estimates (through :mod:`hwadvisor.calibration`, the advice's code path) closest to the
published, measured figures: a robust (Huber) loss on the log of each row's ratio, with a weak
pull towards each rule's documented starting value so that a rule few rows speak to stays near
it. A dozen general rules for a hundred and more rows from many publishers: the model never
learns a row.

:func:`leave_one_origin_out` refits without each publisher in turn and scores that publisher's
rows with the rules the others gave: the figure that says how the model does on data it has not
seen. :func:`bands` turns those out-of-sample errors into the range an estimate is shown with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields

from hwadvisor import advise
from hwadvisor.advise import Rules
from hwadvisor.calibration import CalibrationRow, Comparison, compare
from hwadvisor.catalog.model import ModelParams, band_group, using

#: What each rule may be, and how it moves: ("log", low, high) multiplies, ("lin", low, high)
#: adds. The starting values are ModelParams' own (documented there).
SPACE: dict[str, tuple[str, float, float]] = {
    "tensor_transformer": ("log", 0.05, 0.95),
    "width_half": ("log", 8.0, 8192.0),
    "tensor_conv": ("log", 0.03, 0.9),
    "vector_transformer": ("log", 0.1, 1.0),
    "vector_conv": ("log", 0.1, 1.0),
    # Bounded below by same-die pairs: a GeForce card and its pro twin (RTX 4090 / RTX 6000
    # Ada, RTX 3090 / RTX A6000) measure 0.86-1.3x apart in training, where the half-rate
    # peak taken at face value (1.0) would put them twice apart on compute-bound work.
    "consumer_tensor": ("lin", 1.6, 2.0),
    "traffic_per_activation_byte": ("log", 2.0, 200.0),
    "overlap": ("lin", 0.0, 1.0),
    "host_seconds_per_kernel": ("log", 1e-6, 1e-4),
    "cpu_conv": ("log", 0.03, 1.0),
    "cpu_transformer": ("log", 0.03, 1.0),
    "socket_scaling": ("lin", 0.3, 1.0),
    "fsdp_exposed": ("lin", 0.0, 1.0),
}
#: Huber's threshold on |log ratio|: errors beyond 1.5× count linearly, not squared.
HUBER = math.log(1.5)
#: Weight of the pull towards the starting values (per rule, on the log or linear scale).
PRIOR = 0.02


@dataclass(frozen=True)
class Fit:
    params: ModelParams
    loss: float
    evaluations: int


def _huber(x: float) -> float:
    a = abs(x)
    return 0.5 * a * a if a <= HUBER else HUBER * (a - 0.5 * HUBER)


def _distance(name: str, value: float, start: float) -> float:
    kind, low, high = SPACE[name]
    if kind == "log":
        return math.log(value / start)
    return (value - start) / (high - low)


def loss(
    params: ModelParams,
    rows: Sequence[CalibrationRow],
    rules: Rules,
    start: ModelParams | None = None,
) -> float:
    """Mean Huber loss of the rows' log ratios, plus the pull towards ``start``. Every row
    weighs the same (weighting rows by 1/√ or 1/n of their origin's count was tried: it
    predicted held-out origins worse)."""
    with using(params):
        logs = [math.log(compare(r, rules).ratio) for r in rows]
    data = sum(_huber(x) for x in logs) / max(1, len(logs))
    if start is None:
        return data
    pull = sum(_distance(name, getattr(params, name), getattr(start, name)) ** 2 for name in SPACE)
    return data + PRIOR * pull / len(SPACE)


def _moved(name: str, value: float, step: float, sign: int) -> float:
    kind, low, high = SPACE[name]
    moved = value * math.exp(sign * step) if kind == "log" else value + sign * step * (high - low)
    return min(high, max(low, moved))


def fit(
    rows: Sequence[CalibrationRow],
    rules: Rules | None = None,
    *,
    start: ModelParams | None = None,
    names: Iterable[str] | None = None,
    rounds: int = 6,
    on_round: Callable[[int, float], None] | None = None,
) -> Fit:
    """Coordinate search over ``names`` (every rule by default): each rule in turn is moved up
    and down by a step that halves when no move helps, from ``start`` (the documented values).
    Deterministic: the same rows give the same rules."""
    rules = rules if rules is not None else advise.load_rules()
    start = start if start is not None else ModelParams()
    chosen = list(names) if names is not None else list(SPACE)
    current = start
    best = loss(current, rows, rules, start)
    evaluations = 1
    steps = {name: 0.5 for name in chosen}
    for round_ in range(rounds):
        for name in chosen:
            improved = True
            while improved and steps[name] > 0.01:
                improved = False
                for sign in (1, -1):
                    value = _moved(name, getattr(current, name), steps[name], sign)
                    if value == getattr(current, name):
                        continue
                    trial = current.with_values({name: value})
                    trial_loss = loss(trial, rows, rules, start)
                    evaluations += 1
                    if trial_loss < best - 1e-9:
                        current, best, improved = trial, trial_loss, True
                        break
                if not improved:
                    steps[name] /= 2
        if on_round is not None:
            on_round(round_, best)
    return Fit(current, best, evaluations)


@dataclass(frozen=True)
class Held:
    """One origin's rows scored with the rules fitted on every other origin."""

    origin: str
    comparisons: tuple[Comparison, ...]
    params: ModelParams


def origins(rows: Iterable[CalibrationRow]) -> list[str]:
    return sorted({r.origin for r in rows})


def leave_one_origin_out(
    rows: Sequence[CalibrationRow],
    rules: Rules | None = None,
    *,
    start: ModelParams | None = None,
    rounds: int = 4,
    as_typed: bool = False,
) -> list[Held]:
    """For each origin: fit on the others, score it (``as_typed``: its transformers as people
    type them, parameters and tokens only)."""
    rules = rules if rules is not None else advise.load_rules()
    out = []
    for origin in origins(rows):
        train = [r for r in rows if r.origin != origin]
        held = [r for r in rows if r.origin == origin]
        fitted = fit(train, rules, start=start, rounds=rounds).params
        with using(fitted):
            scored = tuple(compare(r, rules, as_typed=as_typed) for r in held)
        out.append(Held(origin, scored, fitted))
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 1.0
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


#: The narrowest range ever shown; CPUs get at least the wider one (their calibration rows are
#: few and implementations differ most).
MIN_BAND = (0.7, 1.4)
WIDE_BAND = (0.5, 2.0)


def bands(
    comparisons: Sequence[Comparison], *, min_rows: int = 6
) -> dict[str, tuple[float, float, int]]:
    """The range around an estimate by group (``kind/device class``, small transformers apart
    as ``transformer-small/device class``, and ``all``): the 10th to 90th percentile of the
    out-of-sample ratios (an estimate's time × ratio is what was measured), never narrower
    than MIN_BAND; a group of fewer than ``min_rows`` rows takes the whole table's; CPU groups
    at least WIDE_BAND."""
    groups: dict[str, list[float]] = {"all": [c.ratio for c in comparisons]}
    for c in comparisons:
        groups.setdefault(f"{c.kind}/{c.device_class}", []).append(c.ratio)
        small = band_group(c.kind, c.device_class, c.parameters)
        if small != f"{c.kind}/{c.device_class}":
            groups.setdefault(small, []).append(c.ratio)
    overall = groups["all"]
    out: dict[str, tuple[float, float, int]] = {}
    for name, ratios in sorted(groups.items()):
        use = ratios if len(ratios) >= min_rows else overall
        low = min(MIN_BAND[0], _quantile(use, 0.1))
        high = max(MIN_BAND[1], _quantile(use, 0.9))
        if name.endswith("/cpu"):
            low, high = min(low, WIDE_BAND[0]), max(high, WIDE_BAND[1])
        out[name] = (round(low, 2), round(high, 2), len(ratios))
    return out


def as_dict(params: ModelParams) -> dict[str, float]:
    return {f.name: getattr(params, f.name) for f in fields(params)}
