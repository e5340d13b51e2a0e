"""The report's charts: matplotlib figures written as SVG and embedded as ``data:`` URIs.

Each function returns a :class:`Chart`: the SVG as a base64 ``data:image/svg+xml`` URI, or
``None`` with a one-line reason. Embedding as an image (never inline SVG markup) means no string
from the profile is ever inserted into the HTML unescaped. The output is deterministic: a fixed
``svg.hashsalt``, no date in the metadata, and no pyplot global state.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import Benchmarks, BenchStatus, Measurement
from hwadvisor.units import human_duration

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: Width of the drawn chart. The page scales it to the text width (about 17 cm in print, about
#: 370 px on a phone), so text is sized for the smallest case: at 10 pt on a 5.6 in figure it is
#: still about 9 px on a 400 px phone, and about 12 pt in print.
WIDTH_IN = 5.6
FONT_PT = 10.0
#: Chart text wraps at this many characters (a hardware name becomes two lines, never "…").
WRAP_AT = 26
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

#: Why a chart with data is not drawn where matplotlib is not installed (``pip install
#: hwadvisor`` without the ``report`` extra): the report says so where the chart would be.
NEEDS_REPORT_EXTRA = "charts need the report extra: pip install 'hwadvisor[report]'"

#: From this many GPUs on, a case is drawn once for all GPUs (their median), as in the tables.
GROUP_GPUS_FROM = 3


@dataclass(frozen=True)
class Chart:
    title: str
    svg_data_uri: str | None
    why_not: str | None = None
    note: str = ""


_RC: dict[str, Any] = {
    "svg.hashsalt": "hwadvisor",
    # Text as <text>, not glyph outlines: a tenth of the SVG, and the PDF stays searchable.
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": FONT_PT,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _figure(height_in: float) -> Figure:
    """A figure outside pyplot (no global state, no GUI backend), with the report's fonts."""
    import matplotlib

    matplotlib.use("Agg")  # text is measured with Agg's metrics, the same on every call
    from matplotlib.figure import Figure

    # After the import: the first figure of a process must be drawn like every later one.
    params: Any = matplotlib.rcParams  # typed by literal keys; ours are checked at runtime
    params.update(_RC)

    return Figure(figsize=(WIDTH_IN, height_in), layout="constrained")


_CLIP_ID = re.compile(rb"\bp[0-9a-f]{10}\b")


def _to_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    # Clip-path ids hash objects that differ between the first figure of a process and later
    # ones; numbered in order of appearance, the same chart is the same bytes every time.
    names: dict[bytes, bytes] = {}
    svg = _CLIP_ID.sub(
        lambda m: names.setdefault(m.group(0), b"clip%d" % (len(names) + 1)), buffer.getvalue()
    )
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def _ok(measurements: Iterable[Measurement]) -> list[Measurement]:
    return [m for m in measurements if m.status == BenchStatus.OK and m.best is not None]


def _label(m: Measurement) -> str:
    return " ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x)


def _wrap(text: str, width: int = WRAP_AT, lines: int = 2) -> str:
    """``text`` on at most ``lines`` lines of about ``width`` characters (the last one cut)."""
    import textwrap

    parts = textwrap.wrap(text, width) or [""]
    if len(parts) > lines:
        rest = " ".join(parts[lines - 1 :])
        parts = [*parts[: lines - 1], rest if len(rest) <= width else rest[: width - 1] + "…"]
    return "\n".join(parts)


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


def _legend_below(fig: Figure, handles: list[Any], ncols: int | None = None) -> None:
    """A legend under the plot, outside every bar and line."""
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=ncols or len(handles),
        frameon=False,
        handlelength=1.2,
        columnspacing=1.2,
    )


#: Height of one bar row (label above the bar, the bar, the gap) in inches.
ROW_IN = 0.46


def _bar_labels(ax: Any, ys: list[float], labels: list[str], offset: float) -> None:
    """Each bar's name on its own line just above the bar, from the left edge of the plot: the
    plot keeps the figure's full width, and a long name never squeezes the axis."""
    from matplotlib.transforms import blended_transform_factory

    where = blended_transform_factory(ax.transAxes, ax.transData)
    for y, text in zip(ys, labels, strict=True):
        ax.text(
            0.0,
            y - offset,
            text,
            transform=where,
            ha="left",
            va="bottom",
            clip_on=False,
            # over the limit line and the grid, the name stays readable
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.5},
        )
    ax.set_yticks([])
    ax.tick_params(axis="y", length=0)


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
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

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
    cases = sum(len(g) for g in groups)
    fig = _figure(0.32 * cases + 0.6 * len(units) + 0.4)
    axes = fig.subplots(len(units), 1, height_ratios=[len(g) + 0.8 for g in groups], squeeze=False)
    for ax, unit, group in zip(axes[:, 0], units, groups, strict=True):
        ys = [float(i) for i in range(len(group))]
        cpu_vals = [v[1] or 0.0 for _, v in group]
        gpu_vals = [v[2] or 0.0 for _, v in group]
        ax.barh([y - 0.19 for y in ys], cpu_vals, 0.38, color=_CPU_COLOUR)
        ax.barh([y + 0.19 for y in ys], gpu_vals, 0.38, color=_GPU_COLOUR)
        # Case names are short ("matmul bf16"): beside the bars, where they cost little width.
        ax.set_yticks(ys, [_wrap(k, 16) for k, _ in group])
        ax.invert_yaxis()
        if _wide(cpu_vals + gpu_vals):
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(numticks=MAX_TICKS))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.set_xlabel(unit)
        ax.grid(axis="x", alpha=0.3)
    _legend_below(
        fig, [Patch(color=_CPU_COLOUR, label="CPU"), Patch(color=_GPU_COLOUR, label="GPU (best)")]
    )
    return Chart(title, _to_uri(fig), note=NOTES["throughput"])


def crossover_chart(bench: Benchmarks | None) -> Chart:
    """Square FP32 matmul: GFLOP/s against n for the CPU and one GPU, log-log."""
    title = TITLES["crossover"]
    if bench is None:
        return Chart(title, None, "no benchmarks in this profile")
    runs = [c for c in bench.crossover if c.points]
    if not runs:
        why = "no GPU: nothing to compare" if not _gpu_measured(bench) else "no crossover measured"
        return Chart(title, None, why)
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    c = runs[0]
    points = sorted(c.points, key=lambda p: p.n)
    fig = _figure(3.0)
    ax = fig.subplots()
    series = [
        ("CPU", [p.cpu_gflops for p in points], _CPU_COLOUR, "-"),
        (f"GPU ({c.device})", [p.gpu_gflops for p in points], _GPU_COLOUR, "-"),
        (
            "GPU with transfers",
            [p.gpu_with_transfer_gflops for p in points],
            _TRANSFER_COLOUR,
            "--",
        ),
    ]
    handles = []
    for name, values, colour, style in series:
        xy = [(p.n, v) for p, v in zip(points, values, strict=True) if v is not None and v > 0]
        if xy:
            handles += ax.plot(
                *zip(*xy, strict=True), style, marker="o", ms=3, label=name, color=colour
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = [p.n for p in points]
    step = max(1, -(-len(sizes) // MAX_TICKS))
    ax.xaxis.set_major_locator(FixedLocator([float(n) for n in sizes[::step]]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.yaxis.set_major_locator(LogLocator(numticks=5))
    ax.yaxis.set_minor_locator(NullLocator())
    # Plain numbers, not 10^n: readable, and no mathtext to parse (a third of the drawing time).
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, _pos: f"{v:,.4g}" if v < 1 else f"{v:,.0f}")
    )
    ax.set_xlabel("matrix size n (n × n)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(alpha=0.3)
    if c.cpu_faster_below_n is not None:
        ax.axvline(c.cpu_faster_below_n, color="#444444", lw=1, ls=":")
        ax.annotate(
            f"CPU faster below n≈{c.cpu_faster_below_n}",
            xy=(c.cpu_faster_below_n, 1.0),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="bottom",
            xytext=(0, 2),
            textcoords="offset points",
            annotation_clip=False,
        )
    _legend_below(fig, handles)
    return Chart(title, _to_uri(fig), note=NOTES["crossover"])


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
    labels = [_wrap(f"{device}: {_label(m)}", 60, 1) for device, m in rows]
    values = [min(max((m.efficiency or 0.0) * 100, 0.0), 100.0) for _, m in rows]
    fig = _figure(ROW_IN * len(rows) + 0.8)
    ax = fig.subplots()
    ys = [float(i) for i in range(len(rows))]
    colours = [_CPU_COLOUR if m.device == "cpu" else _GPU_COLOUR for _, m in rows]
    ax.barh(ys, values, 0.45, color=colours)
    for y, v in zip(ys, values, strict=True):
        ax.text(v + 1.5, y, f"{v:.0f} %", va="center")
    ax.invert_yaxis()
    _bar_labels(ax, ys, labels, 0.27)
    ax.set_xlim(0, 112)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("share of theoretical peak (%)")
    ax.grid(axis="x", alpha=0.3)
    return Chart(title, _to_uri(fig), note=NOTES["efficiency"])


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
        label_in = 10 * 0.62 * FONT_PT / 72 + 0.1  # ten characters and a space
        gap = max(gap, label_in * decades / axis_in)
    ticks = [inside[0]]
    for d in inside[1:]:
        if math.log10(d / ticks[-1]) >= gap:
            ticks.append(d)
    while len(ticks) > most:
        ticks = ticks[::2]
    return ticks


def time_to_train_chart(advice: Advice | None) -> Chart:
    """Time to train on each piece of hardware: bars with the low–high band as error bars."""
    title = TITLES["time_to_train"]
    if advice is None:
        return Chart(title, None, "no workload given")
    rows = [e for e in advice.estimates if e.seconds is not None and e.seconds > 0]
    if not rows:
        return Chart(title, None, "no time estimate for this workload")
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = _figure(ROW_IN * len(rows) + 1.0)
    ax = fig.subplots()
    ys = [float(i) for i in range(len(rows))]
    secs = [float(e.seconds or 0.0) for e in rows]
    pairs = list(zip(rows, secs, strict=True))
    lows = [s - (e.low_seconds if e.low_seconds is not None else s) for e, s in pairs]
    highs = [(e.high_seconds if e.high_seconds is not None else s) - s for e, s in pairs]
    outcome = {True: _OK_COLOUR, False: _NO_COLOUR, None: _UNKNOWN_COLOUR}
    colours = [outcome[e.meets_scenario] for e in rows]
    ax.barh(ys, secs, 0.45, xerr=[lows, highs], color=colours, ecolor="#333333", capsize=2)
    ax.invert_yaxis()
    _bar_labels(ax, ys, [_wrap(e.hardware, 70, 1) for e in rows], 0.27)
    ax.set_xscale("log")
    smallest = min(s - lo for s, lo in zip(secs, lows, strict=True))
    largest = max(s + hi for s, hi in zip(secs, highs, strict=True))
    limit_s = advice.this_machine.limit_hours * 3600
    smallest, largest = min(smallest, limit_s) / 2, max(largest, limit_s) * 2
    ax.set_xlim(smallest, largest)
    ticks = duration_ticks(smallest, largest, axis_in=WIDTH_IN - 0.4)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: human_duration(v)))
    ax.axvline(limit_s, color="#222222", lw=1.2, ls=":")
    # The limit is named above the plot, where no bar or label can sit under it.
    ax.annotate(
        f"limit {human_duration(limit_s)}",
        xy=(limit_s, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(-3, 3),
        textcoords="offset points",
        ha="left" if limit_s < (smallest * largest) ** 0.5 else "right",
        va="bottom",
        annotation_clip=False,
    )
    ax.set_xlabel("time to train (log scale)")
    ax.grid(axis="x", alpha=0.3)
    present = {e.meets_scenario for e in rows}
    names = {True: "meets the scenario", False: "does not meet it", None: "unknown"}
    handles: list[Any] = [
        Patch(color=outcome[k], label=names[k]) for k in (True, False, None) if k in present
    ]
    _legend_below(fig, handles)
    return Chart(title, _to_uri(fig), note=NOTES["time_to_train"])


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
    "duration_ticks",
    "efficiency_chart",
    "throughput_chart",
    "time_to_train_chart",
]
