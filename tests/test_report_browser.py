"""The HTML report in a real headless browser: it renders, and the verdict is visible."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hwadvisor.model.load import load_profile
from hwadvisor.render.html import render_html

REPORTS = Path(__file__).parent / "fixtures" / "reports"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(BROWSER is None, reason="needs chromium (CI installs it)")

# No network from the browser: the report must not need any, and this machine has none.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("fixture", ["cpu-only.json", "eight-gpu.json"])
def test_report_renders_in_chromium_with_the_verdict(tmp_path: Path, fixture: str) -> None:
    profile = load_profile(REPORTS / fixture)
    page = tmp_path / "report.html"
    page.write_text(render_html(profile, source_sha256="0" * 64), encoding="utf-8")
    dom = _browser(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert profile.advice is not None
    assert f"Needs: scenario {profile.advice.scenario.id} of 4" in dom.stdout
    assert profile.advice.scenario.title in dom.stdout
    # The console would report failed resource loads or script errors here.
    errors = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "net::ERR" in line]
    assert errors == []
    shot = tmp_path / "page1.png"
    done = _browser(tmp_path, f"--screenshot={shot}", "--window-size=1024,1400", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a page with content, not a blank one


#: A phone's viewport. Headless Chromium keeps its window at least 500 px wide, so the report is
#: loaded into a 400 px frame, whose viewport is exactly that.
PHONE = 400


@pytest.mark.parametrize("fixture", ["cpu-only.json", "single-gpu.json", "eight-gpu.json"])
def test_report_fits_a_phone_without_sideways_scrolling(tmp_path: Path, fixture: str) -> None:
    profile = load_profile(REPORTS / fixture)
    page = tmp_path / "report.html"
    page.write_text(render_html(profile, source_sha256="0" * 64), encoding="utf-8")
    frame = tmp_path / "phone.html"
    frame.write_text(
        f'<!DOCTYPE html><html><body><iframe id="f" src="report.html" width="{PHONE}" '
        'height="800"></iframe><script>'
        'document.getElementById("f").onload = function () {'
        "  var d = this.contentDocument.documentElement;"
        '  var imgs = Array.from(d.querySelectorAll("img"));'
        '  document.body.setAttribute("data-width", d.scrollWidth);'
        '  document.body.setAttribute("data-img", Math.max.apply(null, imgs.map('
        "    function (i) { return i.getBoundingClientRect().right; })));"
        "};</script></body></html>",
        encoding="utf-8",
    )
    dom = _browser(
        tmp_path,
        "--allow-file-access-from-files",
        "--virtual-time-budget=5000",
        "--dump-dom",
        frame.as_uri(),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    width = re.search(r'data-width="(\d+)"', dom.stdout)
    right = re.search(r'data-img="([\d.]+)"', dom.stdout)
    assert width is not None and right is not None, dom.stdout[-500:]
    # Wide tables scroll inside their own box; the page itself is never wider than the phone.
    assert int(width.group(1)) <= PHONE + 2
    # Charts scale down to the text width, inside the side padding.
    assert float(right.group(1)) <= PHONE - 8
