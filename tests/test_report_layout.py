"""The report's layout for a reader: page one, folded GPUs, brief unknowns, one unit style, and
charts whose text fits and stays legible on a phone."""

from __future__ import annotations

import base64
import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile
from hwadvisor.render.charts import (
    MAX_TICKS,
    crossover_chart,
    duration_ticks,
    efficiency_chart,
    throughput_chart,
    time_to_train_chart,
)
from hwadvisor.render.html import render_html
from hwadvisor.units import human_bytes, human_duration

REPORTS = Path(__file__).parent / "fixtures" / "reports"
NAMES = ("cpu-only", "single-gpu", "eight-gpu")
SVG = "{http://www.w3.org/2000/svg}"
#: The chart's width on a 400 px phone (the page's side padding taken off).
PHONE_PX = 370


def _load(name: str) -> Profile:
    return load_profile(REPORTS / f"{name}.json")


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {name: render_html(_load(name), source_sha256="0" * 64) for name in NAMES}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _page_one(html: str) -> str:
    start = html.index('<section class="page-one">')
    return html[start : html.index("</section>", start)]


def test_viewport_tag(rendered: dict[str, str]) -> None:
    for html in rendered.values():
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html


def test_page_one_gives_the_answer_first(rendered: dict[str, str]) -> None:
    for name, html in rendered.items():
        one = _page_one(html)
        profile = _load(name)
        assert profile.advice is not None
        answer = one.index('class="answer"')
        assert answer < one.index("Needs: scenario ") < one.index("The measurements behind it")
        # The few figures: time here against the deadline.
        deadline = human_duration(profile.advice.deadline_hours * 3600)
        assert f"your deadline: {deadline}" in one
        assert "Time to train on this machine" in one
        # The long tables come after page one.
        assert '<table class="estimates">' not in one
        assert '<table class="facts raw-facts">' not in one


def test_eight_identical_gpus_are_one_row(rendered: dict[str, str]) -> None:
    html = rendered["eight-gpu"]
    table = html[html.index('<table class="gpus">') :]
    table = table[: table.index("</table>")]
    body = table[table.index("<tbody>") :]
    assert body.count("<tr>") == 1
    assert "8 × NVIDIA A100-SXM4-40GB" in body
    # Page one's summary folds them too.
    assert "8 × NVIDIA A100-SXM4-40GB (40.0 GiB each)" in _page_one(html) or (
        f"8 × NVIDIA A100-SXM4-40GB ({human_bytes(40 * 2**30)} each)" in _page_one(html)
    )


def test_gpus_that_differ_get_their_own_row() -> None:
    profile = _load("eight-gpu")
    odd = profile.gpus[3]
    profile.gpus[3] = odd.model_copy(
        update={"vram_total_bytes": odd.vram_total_bytes.model_copy(update={"value": 80 * 2**30})}
    )
    html = render_html(profile, source_sha256="0" * 64)
    table = html[html.index('<table class="gpus">') :]
    table = table[: table.index("</table>")]
    assert "7 × NVIDIA A100-SXM4-40GB" in table and "0–2, 4–7" in table
    assert "1 × NVIDIA A100-SXM4-40GB" in table and human_bytes(80 * 2**30) in table


def test_unknowns_said_once_not_cell_by_cell(rendered: dict[str, str]) -> None:
    for html in rendered.values():
        text = _text(html)
        assert "unknown/unknown" not in text and "unknown / unknown" not in text
        assert "gen unknown" not in text and "xunknown" not in text
        assert "unknown (unknown)" not in text
    eight = _text(rendered["eight-gpu"])
    assert "Not reported: power limit, PCIe link, VBIOS, memory health" in eight
    # The appendix names unknown facts once per reason, not one table row each.
    facts = rendered["eight-gpu"].split('<table class="facts raw-facts">', 1)[1]
    facts = facts.split("</table>", 1)[0]
    assert "not in collect_env output" not in facts
    assert "not in collect_env output:" in eight


def test_no_gpu_is_not_told_to_install_a_driver(rendered: dict[str, str]) -> None:
    profile = _load("cpu-only")
    assert profile.gpus == [] and "install the NVIDIA driver" in (profile.nvml.message or "")
    text = _text(rendered["cpu-only"])
    assert "install the NVIDIA driver" not in text
    assert "No GPU found." in text


def test_one_style_of_units_on_page_one(rendered: dict[str, str]) -> None:
    """Sizes and durations on page one's figures come from units.py alone: whatever unit
    human_bytes uses, no other size unit appears beside it, and the limit reads as
    human_duration writes it."""
    unit = human_bytes(3 * 2**30).split()[-1]
    other = {"GB", "GiB"} - {unit}
    for html in rendered.values():
        one = _page_one(html)
        tiles = one[one.index('<div class="tiles">') : one.index("<h3>")]
        glance = one[one.index('<table class="kv glance">') :]
        tiles += glance[: glance.index("</table>")]
        sizes = re.findall(r"\d (GB|GiB)\b", _text(tiles))
        assert sizes and not other & set(sizes), sizes
        # Durations in human_duration's style, not a second one.
        assert " hours" not in _text(tiles) and " minutes" not in _text(tiles)


def _svgs(chart_uri: str | None) -> ET.Element:
    assert chart_uri is not None
    return ET.fromstring(base64.b64decode(chart_uri.split(",", 1)[1]))


def _texts(root: ET.Element) -> list[tuple[float, float, float, str, str]]:
    out = []
    for t in root.iter(f"{SVG}text"):
        style = t.get("style", "")
        size = float(re.search(r"font-size: ([\d.]+)px", style).group(1))  # type: ignore[union-attr]
        anchor = re.search(r"text-anchor: (\w+)", style)
        lines = [line for line in "".join(t.itertext()).split("\n") if line]
        text = max(lines, key=len) if lines else ""
        out.append(
            (
                float(t.get("x", 0)),
                float(t.get("y", 0)),
                size,
                anchor.group(1) if anchor else "start",
                text,
            )
        )
    return out


def _charts() -> list[tuple[str, str]]:
    out = []
    for name in NAMES:
        p = _load(name)
        out += [
            (f"{name} time", time_to_train_chart(p.advice).svg_data_uri),
            (f"{name} efficiency", efficiency_chart(p.benchmarks).svg_data_uri),
        ]
        if name != "cpu-only":
            out.append((f"{name} throughput", throughput_chart(p.benchmarks).svg_data_uri))
            out.append((f"{name} crossover", crossover_chart(p.benchmarks).svg_data_uri))
    # The fleet report's bar charts, drawn the same way: long names, more rows than are shown.
    from hwadvisor.fleet.report import _bar_chart

    models = [
        (f"NVIDIA GeForce RTX {4000 + 10 * i} SUPER with a long name", 30 - i) for i in range(15)
    ]
    out.append(("fleet models", _bar_chart("GPU models", models, "GPUs")["uri"]))
    finding = [("No GPU: fine for classical ML and small models", 4000)]
    out.append(("fleet findings", _bar_chart("Findings", finding, "hosts")["uri"]))
    return [(label, uri) for label, uri in out if uri is not None]


@pytest.mark.parametrize(("label", "uri"), _charts())
def test_chart_text_inside_the_image_and_legible_on_a_phone(label: str, uri: str) -> None:
    root = _svgs(uri)
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    for x, y, size, anchor, text in _texts(root):
        # DejaVu Sans averages about 0.6 em a character: the text's extent from its anchor.
        extent = 0.55 * size * len(text)
        left = {"start": x, "middle": x - extent / 2, "end": x - extent}[anchor]
        assert left >= -3 and left + extent <= width + 3, (label, text, left, extent, width)
        assert size * 0.8 <= y <= height + 2, (label, text, y, height)
        # Scaled to a phone's width, the text is still about 9 px or more.
        assert size * PHONE_PX / width >= 8.9, (label, text, size, width)


@pytest.mark.parametrize("name", NAMES)
def test_time_axis_has_few_round_ticks_that_do_not_touch(name: str) -> None:
    root = _svgs(time_to_train_chart(_load(name).advice).svg_data_uri)
    ticks = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("xtick_")]
    assert 2 <= len(ticks) <= 5
    labels = []
    for g in ticks:
        t = next(g.iter(f"{SVG}text"))
        labels.append((float(t.get("x", 0)), "".join(t.itertext())))
    labels.sort()
    for (x1, a), (x2, b) in itertools.pairwise(labels):
        # Centred labels of 10 px text: half of each, plus a space, fit between the two ticks.
        assert x2 - x1 >= 0.55 * 10 * (len(a) + len(b)) / 2 + 4, (a, b, x2 - x1)


def test_duration_ticks_are_few_and_spread() -> None:
    for low, high in [(10, 1e4), (3600, 3e7), (1e6, 7e11), (100, 1e12)]:
        ticks = duration_ticks(low, high, axis_in=5.0)
        assert 1 <= len(ticks) <= 5
        assert all(low <= t <= high for t in ticks)
        gaps = [math.log10(b / a) for a, b in itertools.pairwise(ticks)]
        assert all(g >= math.log10(high / low) / 6 for g in gaps)
    assert MAX_TICKS <= 6


def _legend_labels(uri: str | None) -> str:
    return " ".join("".join(t.itertext()) for t in _svgs(uri).iter(f"{SVG}text"))


def test_no_meets_legend_when_nothing_meets() -> None:
    from hwadvisor.advise import advise
    from hwadvisor.workloads import get_workload

    # Pre-training a 7B model in three minutes: not even the largest cluster does it.
    eight = advise(_load("eight-gpu"), get_workload("llm-7b-pretrain"), deadline_hours=0.05)
    assert eight.scenario.rule == "nothing-meets"
    assert not any(e.meets_scenario for e in eight.estimates)
    text = _legend_labels(time_to_train_chart(eight).svg_data_uri)
    assert "meets the scenario" not in text and "does not meet it" in text
    single = _load("single-gpu").advice
    text = _legend_labels(time_to_train_chart(single).svg_data_uri)
    assert "meets the scenario" in text and "does not meet it" in text


def test_wide_tables_scroll_on_a_screen(rendered: dict[str, str]) -> None:
    html = rendered["eight-gpu"]
    for cls in ("estimates", "gpus", "measurements", "facts raw-facts"):
        assert f'<div class="scroll"><table class="{cls}">' in html
    assert ".scroll { overflow-x: auto;" in html
    assert "@media screen and (max-width: 640px)" in html


def test_the_rule_trace_is_in_words_as_in_the_terminal(rendered: dict[str, str]) -> None:
    from hwadvisor.render.summaries import rule_evidence

    profile = load_profile(REPORTS / "cpu-only.json")
    assert profile.advice is not None
    trace = rendered["cpu-only"].split("<h2>How the scenario was chosen</h2>", 1)[1]
    trace = trace.split("</table>", 1)[0]
    assert "_at_most=" not in trace and "cpu_hours" not in trace and "=True" not in trace
    for entry in profile.advice.trace:
        assert f"<td>{rule_evidence(entry)}</td>" in trace
    assert "the scenario: the smallest class that holds it in time" in trace


def test_page_one_machine_rows_are_known_facts_and_the_rest_is_named_once(
    rendered: dict[str, str],
) -> None:
    for name, expect_note in (("eight-gpu", True), ("cpu-only", False)):
        glance = rendered[name].split('<table class="kv glance">', 1)[1].split("<h3>", 1)[0]
        assert "unknown" not in glance
        assert ("Not reported: CPU, memory." in glance) is expect_note
    assert "<th>Memory</th><td>23.5 GiB in all</td>" in rendered["cpu-only"]
