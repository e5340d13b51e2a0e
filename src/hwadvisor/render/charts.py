"""The report's charts: matplotlib figures written as SVG and embedded as ``data:`` URIs.

Each function returns a :class:`Chart`: the SVG as a base64 ``data:image/svg+xml`` URI, or
``None`` with a one-line reason. Embedding as an image (never inline SVG markup) means no string
from the profile is ever inserted into the HTML unescaped. The output is deterministic: a fixed
``svg.hashsalt``, no date in the metadata, and no pyplot global state.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import Benchmarks, BenchStatus, Measurement
from hwadvisor.units import human_duration

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: Width of the printed chart: the A4/Letter text width with 2 cm margins is about 17 cm.
WIDTH_IN = 17 / 2.54
FONT_PT = 9.5

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

#: Why a chart with data is not drawn where matplotlib is not installed (``pip install
#: hwadvisor`` without the ``report`` extra): the report says so where the chart would be.
NEEDS_REPORT_EXTRA = "charts need the report extra: pip install 'hwadvisor[report]'"


@dataclass(frozen=True)
class Chart:
    title: str
    svg_data_uri: str | None
    why_not: str | None = None


def _figure(height_in: float) -> Figure:
    """A figure outside pyplot (no global state), with the report's fonts."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "hwadvisor"
    # Text as <text>, not glyph outlines: a tenth of the SVG, and the PDF stays searchable.
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["font.family"] = "DejaVu Sans"
    matplotlib.rcParams["font.size"] = FONT_PT
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height_in), layout="constrained")


def _to_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _ok(measurements: Iterable[Measurement]) -> list[Measurement]:
    return [m for m in measurements if m.status == BenchStatus.OK and m.best is not None]


def _label(m: Measurement) -> str:
    return " ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x)


def _wide(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > 30


def throughput_chart(bench: Benchmarks | None) -> Chart:
    """CPU against the best GPU for each case both ran, one panel per unit."""
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
    groups = [[(k, v) for k, v in rows.items() if v[0] == u and v[2] is not None] for u in units]
    fig = _figure(3.4)
    axes = fig.subplots(1, len(units), width_ratios=[max(len(g), 1) for g in groups], squeeze=False)
    for ax, unit, group in zip(axes[0], units, groups, strict=True):
        labels = [k for k, _ in group]
        xs = list(range(len(labels)))
        cpu_vals = [v[1] or 0.0 for _, v in group]
        gpu_vals = [v[2] or 0.0 for _, v in group]
        ax.bar([x - 0.2 for x in xs], cpu_vals, 0.4, label="CPU", color=_CPU_COLOUR)
        ax.bar([x + 0.2 for x in xs], gpu_vals, 0.4, label="GPU (best)", color=_GPU_COLOUR)
        if _wide(cpu_vals + gpu_vals):
            ax.set_yscale("log")
        ax.set_xticks(xs, labels, rotation=30, ha="right")
        ax.set_ylabel(f"throughput ({unit}, higher is better)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(loc="upper left", frameon=False)
    return Chart(title, _to_uri(fig))


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
    fig = _figure(3.2)
    ax = fig.subplots()
    series = [
        ("CPU", [p.cpu_gflops for p in points], _CPU_COLOUR, "-"),
        (f"GPU kernel ({c.device})", [p.gpu_gflops for p in points], _GPU_COLOUR, "-"),
        (
            "GPU with transfers",
            [p.gpu_with_transfer_gflops for p in points],
            _TRANSFER_COLOUR,
            "--",
        ),
    ]
    for name, values, colour, style in series:
        xy = [(p.n, v) for p, v in zip(points, values, strict=True) if v is not None and v > 0]
        if xy:
            ax.plot(*zip(*xy, strict=True), style, marker="o", ms=3, label=name, color=colour)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size n (n × n, FP32)")
    ax.set_ylabel("throughput (GFLOP/s)")
    ax.grid(alpha=0.3, which="both")
    if c.cpu_faster_below_n is not None:
        ax.axvline(c.cpu_faster_below_n, color="#444444", lw=1, ls=":")
        ax.annotate(
            f"CPU faster below n≈{c.cpu_faster_below_n}",
            xy=(c.cpu_faster_below_n, 0.95),
            xycoords=("data", "axes fraction"),
            ha="right",
            va="top",
            fontsize=FONT_PT,
            xytext=(-4, 0),
            textcoords="offset points",
        )
    ax.legend(loc="lower right", frameon=False)
    return Chart(title, _to_uri(fig))


def _gpu_measured(bench: Benchmarks) -> bool:
    return any(m.device != "cpu" for m in _ok(bench.measurements))


def efficiency_chart(bench: Benchmarks | None) -> Chart:
    """Measured best as a share of the device's theoretical peak, per device and case."""
    title = TITLES["efficiency"]
    if bench is None:
        return Chart(title, None, "no benchmarks in this profile")
    rows = [m for m in _ok(bench.measurements) if m.efficiency is not None]
    if not rows:
        return Chart(title, None, "no measurement has a known peak to compare with")
    labels = [f"{m.device}: {_label(m)}" for m in rows]
    values = [min(max((m.efficiency or 0.0) * 100, 0.0), 100.0) for m in rows]
    fig = _figure(max(1.6, 0.28 * len(rows) + 0.9))
    ax = fig.subplots()
    ys = list(range(len(rows)))
    colours = [_CPU_COLOUR if m.device == "cpu" else _GPU_COLOUR for m in rows]
    ax.barh(ys, values, color=colours)
    for y, v in zip(ys, values, strict=True):
        ax.text(v + 1, y, f"{v:.0f} %", va="center", fontsize=FONT_PT)
    ax.set_yticks(ys, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("share of theoretical peak (%)")
    ax.grid(axis="x", alpha=0.3)
    return Chart(title, _to_uri(fig))


def _duration_ticks(low: float, high: float) -> list[float]:
    steps = [1, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400, 3650 * 86400]
    ticks = [float(s) for s in steps if low <= s <= high]
    return ticks or [low, high]


def time_to_train_chart(advice: Advice | None) -> Chart:
    """Time to train on each piece of hardware: bars with the low–high band as error bars."""
    title = TITLES["time_to_train"]
    if advice is None:
        return Chart(title, None, "no workload given")
    rows = [e for e in advice.estimates if e.seconds is not None and e.seconds > 0]
    if not rows:
        return Chart(title, None, "no time estimate for this workload")
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = _figure(max(1.8, 0.32 * len(rows) + 1.0))
    ax = fig.subplots()
    ys = list(range(len(rows)))
    secs = [float(e.seconds or 0.0) for e in rows]
    pairs = list(zip(rows, secs, strict=True))
    lows = [s - (e.low_seconds if e.low_seconds is not None else s) for e, s in pairs]
    highs = [(e.high_seconds if e.high_seconds is not None else s) - s for e, s in pairs]
    colours = [
        {True: _OK_COLOUR, False: _NO_COLOUR, None: _UNKNOWN_COLOUR}[e.meets_scenario] for e in rows
    ]
    ax.barh(ys, secs, xerr=[lows, highs], color=colours, ecolor="#333333", capsize=2)
    ax.set_yticks(ys, [_short(e.hardware) for e in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    smallest = min(s - lo for s, lo in zip(secs, lows, strict=True))
    largest = max(s + hi for s, hi in zip(secs, highs, strict=True))
    limit_s = advice.this_machine.limit_hours * 3600
    smallest, largest = min(smallest, limit_s) / 2, max(largest, limit_s) * 2
    ax.set_xlim(smallest, largest)
    ax.xaxis.set_major_locator(FixedLocator(_duration_ticks(smallest, largest)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: human_duration(v)))
    ax.axvline(limit_s, color="#444444", lw=1, ls=":")
    ax.annotate(
        f"limit {advice.this_machine.limit_hours:g} h",
        xy=(limit_s, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(3, -2),
        textcoords="offset points",
        va="top",
        fontsize=FONT_PT,
    )
    ax.set_xlabel("time to train (log scale; bar = estimate, whisker = low–high band)")
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.patches import Patch

    handles: list[Any] = [
        Patch(color=_OK_COLOUR, label="meets the scenario"),
        Patch(color=_NO_COLOUR, label="does not"),
    ]
    ax.legend(handles=handles, loc="lower right", frameon=False)
    return Chart(title, _to_uri(fig))


def _short(text: str, limit: int = 42) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def all_charts(bench: Benchmarks | None, advice: Advice | None) -> dict[str, Chart]:
    """Every chart the report shows, by name. Without matplotlib a chart that has data to show
    is replaced by :data:`NEEDS_REPORT_EXTRA` (one without data keeps its own reason)."""
    draw: dict[str, Callable[[], Chart]] = {
        "throughput": lambda: throughput_chart(bench),
        "crossover": lambda: crossover_chart(bench),
        "efficiency": lambda: efficiency_chart(bench),
        "time_to_train": lambda: time_to_train_chart(advice),
    }
    charts: dict[str, Chart] = {}
    for name, chart in draw.items():
        try:
            charts[name] = chart()
        except ImportError:
            charts[name] = Chart(TITLES[name], None, NEEDS_REPORT_EXTRA)
    return charts


__all__ = [
    "NEEDS_REPORT_EXTRA",
    "TITLES",
    "Chart",
    "all_charts",
    "crossover_chart",
    "efficiency_chart",
    "throughput_chart",
    "time_to_train_chart",
]
