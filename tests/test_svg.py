"""The hand-drawn SVG charts: text measured as the font measures it, round axes, bars where their
values say, labels that fit, hostile text made harmless, the same bytes every time."""

from __future__ import annotations

import base64
import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hwadvisor.model.load import load_profile
from hwadvisor.render import svg
from hwadvisor.render.charts import all_charts, crossover_chart

NS = "{http://www.w3.org/2000/svg}"
REPORTS = Path(__file__).parent / "fixtures" / "reports"


def _root(text: str) -> ET.Element:
    return ET.fromstring(text.encode("utf-8"))


def _texts(root: ET.Element) -> list[tuple[float, float, str, str]]:
    out = []
    for t in root.iter(f"{NS}text"):
        anchor = re.search(r"text-anchor: (\w+)", t.get("style", ""))
        out.append(
            (
                float(t.get("x", 0)),
                float(t.get("y", 0)),
                anchor.group(1) if anchor else "start",
                "".join(t.itertext()),
            )
        )
    return out


def _font_path() -> Path | None:
    for folder in ("/usr/share/fonts", "/usr/local/share/fonts", "/Library/Fonts"):
        found = next(Path(folder).rglob("DejaVuSans.ttf"), None) if Path(folder).is_dir() else None
        if found:
            return found
    return None


def test_text_width_is_the_fonts_own() -> None:
    path = _font_path()
    ttlib = pytest.importorskip("fontTools.ttLib")
    if path is None:
        pytest.skip("DejaVu Sans is not installed here")
    font = ttlib.TTFont(str(path))
    cmap, hmtx, upm = font.getBestCmap(), font["hmtx"], font["head"].unitsPerEm
    sample = "NVIDIA H100 80GB HBM3: matmul bf16 ≈ 97 % (8× …)"
    expected = sum(hmtx[cmap[ord(ch)]][0] for ch in sample) * 10.0 / upm
    assert svg.text_width(sample, 10.0) == pytest.approx(expected, rel=0.01)
    # A character outside the table is counted wide, never as nothing.
    assert svg.text_width("日本", 10.0) >= 2 * 9.0


def test_fit_cuts_only_what_does_not_fit() -> None:
    assert svg.fit("short", 200) == "short"
    long = "8× NVIDIA H100 80GB HBM3 SXM5 in a node with a very long marketing name indeed"
    cut = svg.fit(long, 150)
    assert cut.endswith("…") and long.startswith(cut[:-1].rstrip())
    assert svg.text_width(cut) <= 150


@pytest.mark.parametrize("high", [0.7, 3, 9.5, 17, 100, 1322, 5400, 215_280, 7e6])
def test_linear_axis_is_round_and_covers_the_data(high: float) -> None:
    axis = svg.linear_axis(high)
    assert axis.lo == 0 and axis.hi >= high and axis.ticks[-1] == axis.hi
    assert 2 <= len(axis.ticks) <= 5
    step = axis.ticks[1] - axis.ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5)), step
    assert axis.hi < high + 2 * step  # no empty half of the plot


def test_integer_axis_has_whole_ticks() -> None:
    for high in (1, 3, 7, 11, 4000):
        ticks = svg.linear_axis(high, integer=True).ticks
        assert all(float(t).is_integer() for t in ticks), ticks


@pytest.mark.parametrize(("low", "high"), [(3, 70), (1_300, 218_400), (0.02, 5e6), (12, 13)])
def test_log_axis_spans_whole_decades(low: float, high: float) -> None:
    axis = svg.log_axis(low, high, most=5)
    assert axis.log and axis.lo <= low and axis.hi >= high
    assert all(math.isclose(math.log10(t), round(math.log10(t))) for t in axis.ticks)
    assert 1 <= len(axis.ticks) <= 5
    assert axis.fraction(axis.lo) == 0 and axis.fraction(axis.hi) == 1


def test_tick_labels_that_would_touch_are_thinned() -> None:
    axis = svg.Axis(0, 10, tuple(float(i) for i in range(11)), lambda v: f"{v * 1e6:,.0f}")
    chart = svg.bar_chart([svg.Panel((svg.Row("a", (svg.Bar(5, "#000"),)),), axis)])
    labels = sorted(
        (x, text)
        for x, y, anchor, text in _texts(_root(chart))
        if anchor == "middle" and "," in text
    )
    assert 2 <= len(labels) < 11
    for (x1, a), (x2, b) in itertools.pairwise(labels):
        assert x2 - x1 >= (svg.text_width(a) + svg.text_width(b)) / 2


def _bars(root: ET.Element, colour: str) -> list[tuple[float, float]]:
    return [
        (float(r.get("x", 0)), float(r.get("width", 0)))
        for r in root.iter(f"{NS}rect")
        if r.get("fill") == colour
    ]


def test_bars_are_as_long_as_their_values() -> None:
    rows = tuple(svg.Row(f"row {v}", (svg.Bar(v, "#123456", text=f"{v}"),)) for v in (10, 40, 80))
    root = _root(svg.bar_chart([svg.Panel(rows, svg.linear_axis(80))]))
    bars = _bars(root, "#123456")
    assert len(bars) == 3 and len({x for x, _ in bars}) == 1  # all from the plot's left edge
    widths = [w for _, w in bars]
    assert widths[1] / widths[0] == pytest.approx(4, rel=0.01)
    assert widths[2] / widths[0] == pytest.approx(8, rel=0.01)
    texts = [t for *_, t in _texts(root)]
    assert {"row 10", "row 40", "row 80", "10", "40", "80"} <= set(texts)


def test_a_value_with_no_room_after_its_bar_goes_inside_it() -> None:
    axis = svg.Axis(0, 100, (0.0, 50.0, 100.0), svg.plain_number)
    bar = svg.Bar(100, "#123456", text="a long value label 100 %")
    root = _root(svg.bar_chart([svg.Panel((svg.Row("full", (bar,)),), axis)]))
    x, _, anchor, text = next(t for t in _texts(root) if t[3].startswith("a long"))
    fill = next(t for t in root.iter(f"{NS}text") if "".join(t.itertext()) == text).get("style")
    assert anchor == "end" and "#ffffff" in (fill or "")
    assert x <= float(_root_width(root))


def _root_width(root: ET.Element) -> float:
    return float(root.get("viewBox", "0 0 0 0").split()[2])


def test_stacked_panels_share_one_plot_width() -> None:
    narrow = svg.Panel((svg.Row("a", (svg.Bar(3, "#111111"),)),), svg.linear_axis(3))
    wide = svg.Panel(
        (svg.Row("b", (svg.Bar(2e5, "#222222"),)),), svg.log_axis(1e3, 1e6, title="GFLOP/s")
    )
    root = _root(svg.bar_chart([narrow, wide]))
    assert _bars(root, "#111111")[0][0] == _bars(root, "#222222")[0][0]


def test_hostile_text_is_escaped_and_visible() -> None:
    label = 'GPU <script>alert(1)</script> & "x" \x1b[31m\u202e'
    chart = svg.bar_chart(
        [svg.Panel((svg.Row(label, (svg.Bar(1, "#000000"),)),), svg.linear_axis(1))]
    )
    assert "<script>" not in chart and "\x1b" not in chart and "\u202e" not in chart
    texts = [t for *_, t in _texts(_root(chart))]
    assert any(t.startswith("GPU <script>") and "\\u001b" in t for t in texts)


def test_charts_are_the_same_bytes_every_time() -> None:
    profile = load_profile(REPORTS / "single-gpu.json")
    first = all_charts(profile.benchmarks, profile.advice)
    again = all_charts(profile.benchmarks, profile.advice)
    assert first == again
    assert sum(c.svg_data_uri is not None for c in first.values()) == 4


def test_crossover_names_the_crossing_and_its_three_lines() -> None:
    profile = load_profile(REPORTS / "single-gpu.json")
    assert profile.benchmarks is not None
    run = profile.benchmarks.crossover[0]
    uri = crossover_chart(profile.benchmarks).svg_data_uri
    assert uri is not None
    root = _root(base64.b64decode(uri.split(",", 1)[1]).decode("utf-8"))
    texts = [t for *_, t in _texts(root)]
    assert f"CPU faster below n≈{run.cpu_faster_below_n}" in texts
    assert {"CPU", "GPU with transfers", "GFLOP/s"} <= set(texts)
    lines = list(root.iter(f"{NS}polyline"))
    assert len(lines) == 3
    # Along n the CPU line goes right; the GPU line ends higher than it starts (log y: up is -y).
    gpu = [tuple(map(float, p.split(","))) for p in lines[1].get("points", "").split()]
    assert [x for x, _ in gpu] == sorted(x for x, _ in gpu)
    assert gpu[-1][1] < gpu[0][1]


def test_the_marker_name_never_sits_on_the_y_title() -> None:
    x_axis = svg.Axis(50, 5000, (64.0, 4096.0), lambda v: f"{v:,.0f}", "n", log=True)
    y_axis = svg.log_axis(10, 1e4, title="GFLOP/s")
    series = [svg.Series("CPU", ((64.0, 20.0), (4096.0, 900.0)), "#000000")]
    root = _root(svg.line_chart(series, x_axis, y_axis, marker=(60.0, "CPU faster below n≈60")))
    texts = {t: (x, y) for x, y, _, t in _texts(root)}
    title_y, marker_y = texts["GFLOP/s"][1], texts["CPU faster below n≈60"][1]
    assert abs(title_y - marker_y) >= svg.FONT  # on separate lines
