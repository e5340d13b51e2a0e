"""Escape sequences stored in a profile (``\\u001b`` in JSON: a host name, a GPU name, a driver
string) never reach a terminal, a page or a chart raw: every string of a profile is made visible
when the model is built, whatever the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.cli import main
from hwadvisor.model.facts import visible
from hwadvisor.model.load import parse_profile

FIXTURES = Path(__file__).parent / "fixtures"
BASE = FIXTURES / "reports" / "single-gpu.json"

#: An OSC sequence that sets the window title, a cursor move, a bell, a right-to-left override.
HOSTILE = "box\u001b]0;pwned\u0007\u001b[2J\u202eevil\u0000"
RAW = ("\x1b", "\x07", "\u202e", "\x00")


def _hostile_profile(tmp_path: Path) -> Path:
    doc = json.loads(BASE.read_text(encoding="utf-8"))
    doc["host"]["hostname"]["value"] = HOSTILE
    doc["gpus"][0]["name"]["value"] = "NVIDIA GeForce RTX 3080" + HOSTILE
    doc["nvml"]["driver_version"]["value"] = "550.54" + HOSTILE
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} reached the output"


@pytest.mark.parametrize(
    "command",
    [
        ["advise", "-p", "{p}", "-w", "resnet50-imagenet"],
        ["advise", "-p", "{p}", "-w", "resnet50-imagenet", "--json", "-"],
        ["diff", "{p}", str(BASE)],
        ["diff", str(BASE), "{p}"],
        ["import", "{p}", "--json", "-"],
        ["import", "{p}", "--out", "{out}"],
        ["report", "{p}", "--out", "{out}", "--format", "html"],
    ],
)
def test_no_command_lets_an_escape_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    path = _hostile_profile(tmp_path)
    out_dir = tmp_path / "out"
    args = [a.replace("{p}", str(path)).replace("{out}", str(out_dir)) for a in command]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    _clean(captured.out)
    _clean(captured.err)
    for written in out_dir.glob("*") if out_dir.exists() else []:
        _clean(written.read_text(encoding="utf-8"))
    assert "\\u001b" in captured.out + captured.err + "".join(
        p.read_text(encoding="utf-8") for p in (out_dir.glob("*") if out_dir.exists() else [])
    ), "the escape is shown, not dropped silently"


def test_the_loaded_profile_holds_visible_text() -> None:
    doc = json.loads(BASE.read_text(encoding="utf-8"))
    doc["host"]["hostname"]["value"] = HOSTILE
    profile = parse_profile(json.dumps(doc))
    assert profile.host.hostname.value == "box\\u001b]0;pwned\\u0007\\u001b[2J\\u202eevil\\u0000"


@given(st.text())
def test_visible_leaves_nothing_active_and_keeps_plain_text(text: str) -> None:
    shown = visible(text)
    for ch in shown:
        code = ord(ch)
        assert ch in "\t\n" or not (code < 0x20 or 0x7F <= code <= 0x9F)
        assert ch not in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
    if all(ch in "\t\n" or (0x20 <= ord(ch) < 0x7F) for ch in text):
        assert shown == text
    assert visible(shown) == shown  # idempotent


def test_a_huge_string_is_cut_on_loading(tmp_path: Path) -> None:
    import time

    doc = json.loads(BASE.read_text(encoding="utf-8"))
    doc["host"]["hostname"]["value"] = "h" * 5_000_000
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    start = time.perf_counter()
    code = main(["report", str(path), "--out", str(tmp_path / "out"), "--format", "html"])
    assert code == 0
    assert time.perf_counter() - start < 30
    page = (tmp_path / "out" / "huge.html").read_text(encoding="utf-8")
    assert "characters cut]" in page
    assert len(page) < 2_000_000


def test_charts_stay_valid_xml_with_hostile_names() -> None:
    import base64
    import re
    import xml.etree.ElementTree as ET

    from hwadvisor.render.html import render_html

    doc = json.loads(BASE.read_text(encoding="utf-8"))
    doc["host"]["hostname"]["value"] = HOSTILE
    doc["gpus"][0]["name"]["value"] = "RTX\u0000\u001b[31m\u202e3080"
    page = render_html(parse_profile(json.dumps(doc)), source_sha256="0" * 64)
    charts = re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)
    assert len(charts) >= 3
    for chart in charts:
        svg = base64.b64decode(chart).decode("utf-8")
        _clean(svg)
        ET.fromstring(svg)  # raises on invalid XML
    _clean(page)
