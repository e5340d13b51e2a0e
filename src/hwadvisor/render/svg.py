"""Charts drawn as SVG by hand: horizontal bar charts (one or more panels) and a log-log line
chart, in the report's font and colours.

No plotting library is needed, so every install draws them (the slim one included) and a
report starts drawing at once. The drawing is deterministic (same input, same bytes) and every
string goes through :func:`~hwadvisor.model.facts.visible` and XML escaping, so a profile's text
can neither break the markup nor act in it. Text is measured with DejaVu Sans' advance widths,
the font the page asks for; a page that falls back to another sans-serif font differs by a few
per cent, which the layout leaves room for.
"""

from __future__ import annotations

import base64
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from hwadvisor.model.facts import visible

#: Width of a chart in points (5.6 in). The page scales it to the text width (about 17 cm in
#: print, about 370 px on a phone), so text is sized for the smallest case: 10 pt here is still
#: about 9 px on a 400 px phone, and about 12 pt in print.
WIDTH = 403.2
FONT = 10.0
LINE = 1.25 * FONT
FONT_FAMILY = "'DejaVu Sans', Verdana, 'Bitstream Vera Sans', sans-serif"
TEXT_COLOUR = "#222222"
AXIS_COLOUR = "#555555"
GRID_COLOUR = "#dddddd"

#: DejaVu Sans advance widths in thousandths of an em (from the font's ``hmtx`` table), in
#: the order of :data:`_CHARS`.
_CHARS = (
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`"
    "abcdefghijklmnopqrstuvwxyz{|}~×–—≈↔…µ≤≥·°±→"
)
_WIDTHS = (
    "318 401 460 838 636 950 780 275 390 390 500 838 318 361 318 337 636 636 636 636 "
    "636 636 636 636 636 636 337 337 838 838 838 531 1000 684 686 698 770 632 575 "
    "775 752 295 295 656 557 863 748 787 603 787 695 635 611 732 684 989 685 611 685 "
    "390 337 390 838 500 500 613 635 550 635 615 352 635 634 278 278 579 278 974 634 "
    "612 635 635 411 521 392 634 592 818 592 592 525 636 337 636 838 838 500 1000 "
    "838 838 1000 636 838 838 318 500 838 838 "
)
_ADVANCE = dict(zip(_CHARS, map(int, _WIDTHS.split()), strict=True))


def text_width(text: str, size: float = FONT) -> float:
    """The width of ``text`` in DejaVu Sans at ``size``; a character the table lacks counts as
    a wide one (an East Asian character is a full em)."""
    total = 0
    for ch in text:
        total += _ADVANCE.get(ch, 1000 if ord(ch) >= 0x2E80 else 700)
    return total * size / 1000


def fit(text: str, width: float, size: float = FONT) -> str:
    """``text`` cut with "…" so that it is at most ``width`` wide."""
    if text_width(text, size) <= width:
        return text
    room = width - text_width("…", size)
    out = ""
    for ch in text:
        if text_width(out + ch, size) > room:
            break
        out += ch
    return out.rstrip() + "…"


def _num(v: float) -> str:
    """A coordinate: two decimals at most, no trailing zeros (stable bytes, small files)."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


class Canvas:
    """SVG elements in drawing order; :meth:`svg` is the document."""

    def __init__(self, width: float = WIDTH) -> None:
        self.width = width
        self.parts: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, opacity: float = 1) -> None:
        extra = f' fill-opacity="{opacity}"' if opacity < 1 else ""
        self.parts.append(
            f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0))}" '
            f'height="{_num(max(h, 0))}" fill="{fill}"{extra}/>'
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        stroke: str = AXIS_COLOUR,
        width: float = 1,
        dash: str | None = None,
    ) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(
            f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
            f'stroke="{stroke}" stroke-width="{_num(width)}"{extra}/>'
        )

    def polyline(
        self, points: Sequence[tuple[float, float]], stroke: str, dash: str | None = None
    ) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        coords = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self.parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{stroke}" stroke-width="1.5"{extra}/>'
        )

    def circle(self, x: float, y: float, r: float, fill: str) -> None:
        self.parts.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" fill="{fill}"/>')

    def text(
        self,
        x: float,
        y: float,
        text: str,
        anchor: str = "start",
        fill: str = TEXT_COLOUR,
        backdrop: bool = False,
    ) -> None:
        """``text`` with its baseline at ``y``; with ``backdrop`` on a white box, so that a
        grid or limit line under it does not cross the letters."""
        text = visible(text)
        if backdrop:
            w = text_width(text)
            left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
            self.rect(left - 1, y - 0.8 * FONT, w + 2, FONT, "#ffffff")
        self.parts.append(
            f'<text x="{_num(x)}" y="{_num(y)}" style="font-size: {_num(FONT)}px; '
            f'text-anchor: {anchor}; fill: {fill}">{escape(text)}</text>'
        )

    def open_group(self, gid: str) -> None:
        self.parts.append(f"<g id={quoteattr(gid)}>")

    def close_group(self) -> None:
        self.parts.append("</g>")

    def svg(self, height: float) -> str:
        w, h = _num(self.width), _num(height)
        return (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}pt" height="{h}pt" '
            f'viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}">\n'
            + "\n".join(self.parts)
            + "\n</svg>\n"
        )


def data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


# --------------------------------------------------------------------------------------------
# Axes


@dataclass(frozen=True)
class Axis:
    """A numeric axis from ``lo`` to ``hi``, linear or logarithmic, labelled at ``ticks``."""

    lo: float
    hi: float
    ticks: tuple[float, ...]
    fmt: Callable[[float], str]
    title: str = ""
    log: bool = False

    def fraction(self, v: float) -> float:
        """Where ``v`` lies between ``lo`` (0) and ``hi`` (1), clamped."""
        if self.log:
            v = max(v, self.lo)
            span = math.log10(self.hi / self.lo) or 1.0
            f = math.log10(v / self.lo) / span
        else:
            f = (v - self.lo) / ((self.hi - self.lo) or 1.0)
        return min(max(f, 0.0), 1.0)


def plain_number(v: float) -> str:
    """A tick label: thousands separated, no exponent."""
    if v == 0:
        return "0"
    if abs(v) < 1:
        return f"{v:.4g}"
    return f"{v:,.0f}" if float(v).is_integer() or abs(v) >= 100 else f"{v:,.1f}"


def linear_axis(
    high: float,
    *,
    most: int = 5,
    title: str = "",
    integer: bool = False,
    fmt: Callable[[float], str] = plain_number,
) -> Axis:
    """0 to a round number at or above ``high``, with at most ``most`` round ticks (steps of 1,
    2, 2.5 or 5 times a power of ten)."""
    high = high if high > 0 else 1.0
    raw = high / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    # 2.5 × 1 is not a whole step: an integer axis takes it from 25 on.
    steps = (1, 2, 5, 10) if integer and power < 10 else (1, 2, 2.5, 5, 10)
    candidates = [max(s * power, 1.0) if integer else s * power for s in steps]
    # The round step that leaves the least empty plot (then the one with more ticks).
    step, top = min(
        ((c, math.ceil(high / c - 1e-9) * c) for c in candidates if c >= raw),
        key=lambda pair: (pair[1], pair[0]),
    )
    count = round(top / step)
    return Axis(0.0, top, tuple(i * step for i in range(count + 1)), fmt, title)


def log_axis(
    low: float,
    high: float,
    *,
    most: int = 5,
    title: str = "",
    fmt: Callable[[float], str] = plain_number,
) -> Axis:
    """Whole decades around ``low``..``high``, labelled at most ``most`` times."""
    lo = 10 ** math.floor(math.log10(low))
    hi = 10 ** math.ceil(math.log10(high))
    if hi <= lo:
        hi = lo * 10
    decades = [lo * 10**i for i in range(round(math.log10(hi / lo)) + 1)]
    step = max(1, math.ceil(len(decades) / most))
    return Axis(lo, hi, tuple(decades[::step]), fmt, title, log=True)


def _tick_labels(axis: Axis, x0: float, x1: float) -> list[tuple[float, float, str]]:
    """``(value, x, label)`` for the ticks whose centred labels neither touch each other nor
    leave the chart; every other one is dropped until they do not."""
    ticks = [(t, x0 + axis.fraction(t) * (x1 - x0), axis.fmt(t)) for t in axis.ticks]
    while len(ticks) > 2:
        close = any(
            b[1] - a[1] < (text_width(a[2]) + text_width(b[2])) / 2 + 6
            for a, b in itertools.pairwise(ticks)
        )
        if not close:
            break
        ticks = ticks[::2]
    return ticks


# --------------------------------------------------------------------------------------------
# Bar charts


@dataclass(frozen=True)
class Bar:
    value: float
    colour: str
    #: The low–high band, drawn as a whisker.
    low: float | None = None
    high: float | None = None
    #: Written after the bar (or its whisker).
    text: str | None = None


@dataclass(frozen=True)
class Row:
    """One name, written above its bar(s)."""

    label: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Panel:
    rows: tuple[Row, ...]
    axis: Axis
    #: A dotted vertical line at this value, named above the panel.
    marker: tuple[float, str] | None = None


@dataclass(frozen=True)
class Legend:
    items: tuple[tuple[str, str], ...]  # (colour, name)
    lines: bool = False  # drawn as line samples (a line chart) rather than squares
    dashed: tuple[bool, ...] = field(default=())


BAR_H = 11.0
BAR_GAP = 2.0
ROW_GAP = 8.0
SIDE = 6.0


def _legend(canvas: Canvas, legend: Legend, top: float) -> float:
    """Draw the legend centred from ``top``; the height it took."""
    if not legend.items:
        return 0.0
    sample = 18.0 if legend.lines else 10.0
    widths = [sample + 4 + text_width(name) for _, name in legend.items]
    rows: list[list[int]] = [[]]
    used = 0.0
    for i, w in enumerate(widths):
        if rows[-1] and used + 16 + w > canvas.width - 2 * SIDE:
            rows.append([])
            used = 0.0
        used += (16 if rows[-1] else 0) + w
        rows[-1].append(i)
    y = top
    for row in rows:
        total = sum(widths[i] for i in row) + 16 * (len(row) - 1)
        x = (canvas.width - total) / 2
        for i in row:
            colour, name = legend.items[i]
            if legend.lines:
                dashed = legend.dashed[i] if i < len(legend.dashed) else False
                canvas.line(x, y + 6, x + sample, y + 6, colour, 1.5, "4 2" if dashed else None)
                canvas.circle(x + sample / 2, y + 6, 2.5, colour)
            else:
                canvas.rect(x, y + 1, sample, sample, colour)
            canvas.text(x + sample + 4, y + 10, name)
            x += widths[i] + 16
        y += LINE + 2
    return y - top


def _x_axis(
    canvas: Canvas, axis: Axis, x0: float, x1: float, top: float, bottom: float, tag: str
) -> float:
    """Grid lines from ``top`` to ``bottom``, ticks and labels under ``bottom``, the title
    under them; returns the y below the axis."""
    canvas.line(x0, bottom, x1, bottom)
    for i, (_, x, label) in enumerate(_tick_labels(axis, x0, x1), start=1):
        canvas.open_group(f"xtick_{tag}{i}")
        canvas.line(x, top, x, bottom, GRID_COLOUR, 0.8)
        canvas.line(x, bottom, x, bottom + 3.5)
        canvas.text(x, bottom + 4 + FONT, label, "middle")
        canvas.close_group()
    y = bottom + 4 + LINE
    if axis.title:
        canvas.text((x0 + x1) / 2, y + FONT + 2, fit(axis.title, x1 - x0), "middle")
        y += LINE + 2
    return y


def _margins(axis: Axis, width: float) -> tuple[float, float]:
    """Left and right edges of the plot: the first and last tick labels, centred on their
    ticks, stay inside the chart."""
    first, last = axis.fmt(axis.ticks[0]), axis.fmt(axis.ticks[-1])
    x0 = max(SIDE, text_width(first) / 2 + 2)
    x1 = width - max(SIDE, text_width(last) / 2 + 2)
    return x0, x1


def bar_chart(panels: Sequence[Panel], legend: Legend | None = None, width: float = WIDTH) -> str:
    """Horizontal bars, each row's name on its own line above its bars, from the plot's left
    edge: the plot keeps the chart's full width and a long name never squeezes it. Panels are
    stacked, each with its own axis; the legend goes under all of them."""
    canvas = Canvas(width)
    y = 4.0
    # One plot width for every panel, so that stacked panels line up.
    edges = [_margins(panel.axis, width) for panel in panels]
    x0, x1 = max(e[0] for e in edges), min(e[1] for e in edges)
    for p, panel in enumerate(panels):
        axis = panel.axis
        if panel.marker is not None:
            y += LINE  # room for the marker's name above the plot
        plot_top = y
        y += 2
        inner: list[tuple[float, float, Bar]] = []  # (bar top, value x, bar)
        labels: list[tuple[float, str]] = []
        for row in panel.rows:
            labels.append((y + FONT, fit(row.label, x1 - x0)))
            y += LINE + 1
            for bar in row.bars:
                inner.append((y, x0 + axis.fraction(bar.value) * (x1 - x0), bar))
                y += BAR_H + BAR_GAP
            y += ROW_GAP - BAR_GAP
        plot_bottom = y
        below = _x_axis(canvas, axis, x0, x1, plot_top, plot_bottom, f"{p}_" if p else "")
        for top, x, bar in inner:
            canvas.rect(x0, top, x - x0, BAR_H, bar.colour)
            end = x
            if bar.low is not None and bar.high is not None:
                lo = x0 + axis.fraction(bar.low) * (x1 - x0)
                hi = x0 + axis.fraction(bar.high) * (x1 - x0)
                mid = top + BAR_H / 2
                canvas.line(lo, mid, hi, mid, "#333333", 1)
                canvas.line(lo, mid - 3, lo, mid + 3, "#333333", 1)
                canvas.line(hi, mid - 3, hi, mid + 3, "#333333", 1)
                end = max(end, hi)
            if bar.text:
                w = text_width(bar.text)
                if end + 4 + w <= width - 2:
                    canvas.text(end + 4, top + BAR_H - 2, bar.text)
                else:  # no room after the bar: inside its end, in white
                    canvas.text(x - 3, top + BAR_H - 2, bar.text, "end", "#ffffff")
        if panel.marker is not None:
            value, name = panel.marker
            mx = x0 + axis.fraction(value) * (x1 - x0)
            canvas.line(mx, plot_top, mx, plot_bottom, "#222222", 1.2, "1.5 2.5")
            w = text_width(name)
            left = min(max(mx - w / 2, 2.0), width - 2 - w)
            canvas.text(left, plot_top - 3, name)
        for top, label in labels:
            canvas.text(x0, top, label, backdrop=True)
        y = below + 6
    if legend is not None:
        y += _legend(canvas, legend, y)
    return canvas.svg(y + 2)


# --------------------------------------------------------------------------------------------
# Line chart


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[tuple[float, float], ...]
    colour: str
    dashed: bool = False


def line_chart(
    series: Sequence[Series],
    x_axis: Axis,
    y_axis: Axis,
    *,
    marker: tuple[float, str] | None = None,
    height: float = 190.0,
    width: float = WIDTH,
) -> str:
    """Series over two axes (either may be logarithmic); the y axis' title sits above its tick
    labels, the ``marker`` (a dotted vertical line) is named above the plot, the legend is
    under the x axis."""
    canvas = Canvas(width)
    y_labels = [(t, y_axis.fmt(t)) for t in y_axis.ticks]
    left = max([text_width(label) for _, label in y_labels] + [0.0]) + 8
    x0 = max(left, text_width(x_axis.fmt(x_axis.ticks[0])) / 2 + 2)
    x1 = width - max(SIDE, text_width(x_axis.fmt(x_axis.ticks[-1])) / 2 + 2)
    header = LINE
    name_x = 0.0
    if marker is not None:
        mx = x0 + x_axis.fraction(marker[0]) * (x1 - x0)
        w = text_width(marker[1])
        name_x = min(max(mx - w / 2, 2.0), width - 2 - w)
        if name_x < 2 + text_width(y_axis.title) + 8:
            header += LINE  # under the y axis' title, not over it
    top, bottom = 4 + header + 7, 4 + header + 7 + height

    def y_of(v: float) -> float:
        return bottom - y_axis.fraction(v) * (bottom - top)

    canvas.text(2, 4 + FONT, y_axis.title)
    for t, label in y_labels:
        y = y_of(t)
        canvas.line(x0, y, x1, y, GRID_COLOUR, 0.8)
        canvas.text(x0 - 5, y + 0.35 * FONT, label, "end")
    canvas.line(x0, top, x0, bottom)
    below = _x_axis(canvas, x_axis, x0, x1, top, bottom, "")
    for s in series:
        points = [(x0 + x_axis.fraction(x) * (x1 - x0), y_of(v)) for x, v in s.points]
        canvas.polyline(points, s.colour, "5 3" if s.dashed else None)
        for x, y in points:
            canvas.circle(x, y, 2.2, s.colour)
    if marker is not None:
        mx = x0 + x_axis.fraction(marker[0]) * (x1 - x0)
        canvas.line(mx, top, mx, bottom, "#444444", 1, "1.5 2.5")
        canvas.text(name_x, top - 4, marker[1])
    legend = Legend(
        tuple((s.colour, s.name) for s in series),
        lines=True,
        dashed=tuple(s.dashed for s in series),
    )
    y = below + 6
    y += _legend(canvas, legend, y)
    return canvas.svg(y + 2)


__all__ = [
    "FONT",
    "WIDTH",
    "Axis",
    "Bar",
    "Canvas",
    "Legend",
    "Panel",
    "Row",
    "Series",
    "bar_chart",
    "data_uri",
    "fit",
    "line_chart",
    "linear_axis",
    "log_axis",
    "plain_number",
    "text_width",
]
