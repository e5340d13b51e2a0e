"""The report's charts, drawn as SVG (:mod:`hwadvisor.render.svg`) and embedded as ``data:``
URIs.

Each function returns a :class:`Chart`: the SVG as a base64 ``data:image/svg+xml`` URI, or
``None`` with a one-line reason. Embedding as an image (never inline SVG markup) means no string
from the profile is ever inserted into the HTML unescaped. The output is deterministic: the same
profile gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import Benchmarks, BenchStatus, Measurement
from hwadvisor.render import svg
from hwadvisor.units import human_duration

#: At most this many labelled ticks on a numeric axis.
MAX_TICKS = 6

_CPU_COLOUR = "#6b7b8c"
_GPU_COLOUR = "#2b6cb0"
_TRANSFER_COLOUR = "#d08c2b"
_OK_COLOUR = "#2f855a"
_NO_COLOUR = "#c53030"
_UNKNOWN_COLOUR = "#a0aec0"


#: The charts by name, as :func:`all_charts` returns them.
TITLES = {
    "throughput": "CPU vs GPU throughput",
    "crossover": "CPU ↔ GPU crossover (FP32 matmul)",
    "efficiency": "Measured vs peak",
    "time_to_train": "Time to train",
}

#: What the reader needs to read each chart, printed under it (not squeezed into an axis title).
NOTES = {
    "throughput": "Higher is better. Each panel has its own unit; the GPU bar is the best GPU.",
    "crossover": "Square FP32 matrix multiply, both axes logarithmic.",
    "efficiency": "Measured best as a share of the device's theoretical peak.",
    "time_to_train": (
        "Log scale. Bar: the estimate; whisker: the low–high band; dotted line: the scenario's"
        " limit."
    ),
}

#: From this many GPUs on, a case is drawn once for all GPUs (their median), as in the tables.
GROUP_GPUS_FROM = 3


@dataclass(frozen=True)
class Chart:
    title: str
    svg_data_uri: str | None
    why_not: str | None = None
    note: str = ""


def _ok(measurements: Iterable[Measurement]) -> list[Measurement]:
    return [m for m in measurements if m.status == BenchStatus.OK and m.best is not None]


def _label(m: Measurement) -> str:
    return " ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x)


def _wide(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > 30


def _gpu_devices(bench: Benchmarks) -> list[str]:
    return sorted({m.device for m in bench.measurements if m.device.startswith("cuda")})


def _folded(
    rows: list[Measurement], bench: Benchmarks, value: Callable[[Measurement], float]
) -> list[tuple[str, Measurement]]:
    """``(device label, row)`` per device and case; with many GPUs one row per case for all of
    them, the GPU with the median ``value`` standing for the others."""
    gpus = _gpu_devices(bench)
    if len(gpus) < GROUP_GPUS_FROM:
        return [(m.device, m) for m in rows]
    out: list[tuple[str, Measurement]] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for m in rows:
        if not m.device.startswith("cuda"):
            out.append((m.device, m))
            continue
        key = (m.case, m.precision, m.variant)
        if key in seen:
            continue
        seen.add(key)
        same = sorted(
            (
                x
                for x in rows
                if x.device.startswith("cuda") and (x.case, x.precision, x.variant) == key
            ),
            key=value,
        )
        out.append((f"{len(gpus)} GPUs (median)", same[len(same) // 2]))
    return out


def _rate_axis(values: list[float], title: str) -> svg.Axis:
    """Linear from 0, or logarithmic where the values span more than 30×."""
    if _wide(values):
        positive = [v for v in values if v > 0]
        return svg.log_axis(min(positive), max(positive), most=MAX_TICKS, title=title)
    return svg.linear_axis(max(values, default=1.0), title=title)


def throughput_chart(bench: Benchmarks | None) -> Chart:
    """CPU against the best GPU for each case both ran: one panel per unit, stacked, each with
    a row of two bars per case."""
    title = TITLES["throughput"]
    if bench is None:
        return Chart(title, None, "no benchmarks in this profile")
    ok = [m for m in _ok(bench.measurements) if m.higher_is_better]
    gpu = [m for m in ok if m.device != "cpu"]
    if not gpu:
        return Chart(title, None, "no GPU: nothing to compare")
    # case label -> unit, cpu value, best GPU value
    rows: dict[str, tuple[str, float | None, float | None]] = {}
    for m in ok:
        key = _label(m)
        unit, cpu_v, gpu_v = rows.get(key, (m.unit, None, None))
        assert m.best is not None
        if m.device == "cpu":
            cpu_v = m.best
        else:
            gpu_v = max(gpu_v or 0.0, m.best)
        rows[key] = (unit, cpu_v, gpu_v)
    units = list(dict.fromkeys(unit for unit, _, gpu_v in rows.values() if gpu_v is not None))
    panels = []
    for unit in units:
        group = [(k, v) for k, v in rows.items() if v[0] == unit and v[2] is not None]
        values = [x for _, v in group for x in (v[1], v[2]) if x is not None]
        axis = _rate_axis(values, unit)
        panels.append(
            svg.Panel(
                tuple(
                    svg.Row(
                        key,
                        tuple(
                            svg.Bar(value, colour, text=svg.plain_number(value))
                            for value, colour in ((cpu_v, _CPU_COLOUR), (gpu_v, _GPU_COLOUR))
                            if value is not None
                        ),
                    )
                    for key, (_, cpu_v, gpu_v) in group
                ),
                axis,
            )
        )
    legend = svg.Legend(((_CPU_COLOUR, "CPU"), (_GPU_COLOUR, "GPU (best)")))
    return Chart(title, svg.data_uri(svg.bar_chart(panels, legend)), note=NOTES["throughput"])


def crossover_chart(bench: Benchmarks | None) -> Chart:
    """Square FP32 matmul: GFLOP/s against n for the CPU and one GPU, log-log."""
    title = TITLES["crossover"]
    if bench is None:
        return Chart(title, None, "no benchmarks in this profile")
    runs = [c for c in bench.crossover if c.points]
    if not runs:
        why = "no GPU: nothing to compare" if not _gpu_measured(bench) else "no crossover measured"
        return Chart(title, None, why)
    c = runs[0]
    points = sorted(c.points, key=lambda p: p.n)
    candidates = [
        ("CPU", [p.cpu_gflops for p in points], _CPU_COLOUR, False),
        (f"GPU ({c.device})", [p.gpu_gflops for p in points], _GPU_COLOUR, False),
        (
            "GPU with transfers",
            [p.gpu_with_transfer_gflops for p in points],
            _TRANSFER_COLOUR,
            True,
        ),
    ]
    series = []
    for name, values, colour, dashed in candidates:
        xy = tuple(
            (float(p.n), float(v))
            for p, v in zip(points, values, strict=True)
            if v is not None and v > 0
        )
        if xy:
            series.append(svg.Series(name, xy, colour, dashed))
    if not series:
        return Chart(title, None, "no crossover measured")
    sizes = [float(p.n) for p in points]
    step = max(1, -(-len(sizes) // MAX_TICKS))
    lo, hi = min(sizes), max(sizes)
    x_axis = svg.Axis(
        lo / 1.25,
        hi * 1.25,
        tuple(sizes[::step]),
        lambda v: f"{v:,.0f}",
        "matrix size n (n × n)",
        log=True,
    )
    gflops = [v for s in series for _, v in s.points]
    y_axis = svg.log_axis(min(gflops), max(gflops), most=5, title="GFLOP/s")
    marker = None
    if c.cpu_faster_below_n is not None:
        marker = (float(c.cpu_faster_below_n), f"CPU faster below n≈{c.cpu_faster_below_n}")
    chart = svg.line_chart(series, x_axis, y_axis, marker=marker)
    return Chart(title, svg.data_uri(chart), note=NOTES["crossover"])


def _gpu_measured(bench: Benchmarks) -> bool:
    return any(m.device != "cpu" for m in _ok(bench.measurements))


def efficiency_chart(bench: Benchmarks | None) -> Chart:
    """Measured best as a share of the device's theoretical peak, per device and case."""
    title = TITLES["efficiency"]
    if bench is None:
        return Chart(title, None, "no benchmarks in this profile")
    rows = _folded(
        [m for m in _ok(bench.measurements) if m.efficiency is not None],
        bench,
        lambda m: m.efficiency or 0.0,
    )
    if not rows:
        return Chart(title, None, "no measurement has a known peak to compare with")
    axis = svg.Axis(
        0.0, 112.0, (0.0, 25.0, 50.0, 75.0, 100.0), svg.plain_number,
        "share of theoretical peak (%)",
    )  # fmt: skip
    bars = []
    for device, m in rows:
        share = min(max((m.efficiency or 0.0) * 100, 0.0), 100.0)
        colour = _CPU_COLOUR if m.device == "cpu" else _GPU_COLOUR
        bars.append(
            svg.Row(f"{device}: {_label(m)}", (svg.Bar(share, colour, text=f"{share:.0f} %"),))
        )
    chart = svg.bar_chart([svg.Panel(tuple(bars), axis)])
    return Chart(title, svg.data_uri(chart), note=NOTES["efficiency"])


#: Round durations for a log time axis: 1 s, 1 min, 10 min, 1 h, 1 day, 1 week, 30 days, 1 year,
#: 10 and 100 years.
_DURATIONS = (
    1.0,
    60.0,
    600.0,
    3600.0,
    86400.0,
    7 * 86400.0,
    30 * 86400.0,
    365 * 86400.0,
    3650 * 86400.0,
    36500 * 86400.0,
)


def duration_ticks(
    low: float, high: float, most: int = 5, axis_in: float | None = None
) -> list[float]:
    """At most ``most`` round durations between ``low`` and ``high``, far enough apart on a log
    axis ``axis_in`` inches long that their labels (human_duration's, about 9 characters) never
    touch."""
    import math

    inside = [d for d in _DURATIONS if low <= d <= high]
    if len(inside) <= 1:
        return inside or [low, high]
    decades = math.log10(high / low)
    gap = decades / (most + 1)
    if axis_in:
        label_in = 10 * 0.62 * svg.FONT / 72 + 0.1  # ten characters and a space
        gap = max(gap, label_in * decades / axis_in)
    ticks = [inside[0]]
    for d in inside[1:]:
        if math.log10(d / ticks[-1]) >= gap:
            ticks.append(d)
    while len(ticks) > most:
        ticks = ticks[::2]
    return ticks


def time_to_train_chart(advice: Advice | None) -> Chart:
    """Time to train on each piece of hardware: bars with the low–high band as whiskers, and
    the scenario's limit as a dotted line."""
    title = TITLES["time_to_train"]
    if advice is None:
        return Chart(title, None, "no workload given")
    rows = [e for e in advice.estimates if e.seconds is not None and e.seconds > 0]
    if not rows:
        return Chart(title, None, "no time estimate for this workload")
    outcome = {True: _OK_COLOUR, False: _NO_COLOUR, None: _UNKNOWN_COLOUR}
    bars = []
    smallest, largest = math.inf, 0.0
    for e in rows:
        seconds = float(e.seconds or 0.0)
        low = float(e.low_seconds) if e.low_seconds is not None else seconds
        high = float(e.high_seconds) if e.high_seconds is not None else seconds
        smallest, largest = min(smallest, low, seconds), max(largest, high, seconds)
        bar = svg.Bar(seconds, outcome[e.meets_scenario], low=low, high=high)
        bars.append(svg.Row(e.hardware, (bar,)))
    limit_s = advice.this_machine.limit_hours * 3600
    smallest, largest = min(smallest, limit_s) / 2, max(largest, limit_s) * 2
    plot_in = (svg.WIDTH - 40) / 72
    axis = svg.Axis(
        smallest,
        largest,
        tuple(duration_ticks(smallest, largest, axis_in=plot_in)),
        human_duration,
        "time to train (log scale)",
        log=True,
    )
    panel = svg.Panel(tuple(bars), axis, marker=(limit_s, f"limit {human_duration(limit_s)}"))
    present = {e.meets_scenario for e in rows}
    names = {True: "meets the scenario", False: "does not meet it", None: "unknown"}
    legend = svg.Legend(tuple((outcome[k], names[k]) for k in (True, False, None) if k in present))
    chart = svg.bar_chart([panel], legend)
    return Chart(title, svg.data_uri(chart), note=NOTES["time_to_train"])


def all_charts(bench: Benchmarks | None, advice: Advice | None) -> dict[str, Chart]:
    """Every chart the report shows, by name."""
    draw: dict[str, Callable[[], Chart]] = {
        "throughput": lambda: throughput_chart(bench),
        "crossover": lambda: crossover_chart(bench),
        "efficiency": lambda: efficiency_chart(bench),
        "time_to_train": lambda: time_to_train_chart(advice),
    }
    return {name: chart() for name, chart in draw.items()}


__all__ = [
    "TITLES",
    "Chart",
    "all_charts",
    "crossover_chart",
    "duration_ticks",
    "efficiency_chart",
    "throughput_chart",
    "time_to_train_chart",
]
