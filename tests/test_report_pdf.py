"""PDF rendering: text and figures come through, nothing is fetched from disk or network."""

from __future__ import annotations

import base64
import io
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from hwadvisor.render import pdf as pdfmod
from hwadvisor.render.pdf import PdfUnavailable, pdf_available, render_pdf

pypdf = pytest.importorskip("pypdf")
if not pdf_available()[0]:  # pragma: no cover - depends on the machine's system libraries
    pytest.skip(f"WeasyPrint unavailable: {pdf_available()[1]}", allow_module_level=True)


def _svg_chart(values: list[int]) -> str:
    bars = "".join(
        f'<rect x="{10 + i * 30}" y="{110 - v}" width="20" height="{v}" fill="#3a7"/>'
        for i, v in enumerate(values)
    )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="120" viewBox="0 0 300 120">'
        f'{bars}<text x="10" y="118" font-size="8">TFLOPS</text></svg>'
    )


def _data_svg(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def report_html(extra: str = "") -> str:
    charts = "".join(
        f'<figure><img src="{_data_svg(_svg_chart([20 + i * 7, 60, 90 - i * 5, 40]))}" '
        f'alt="chart {i}"><figcaption>Figure {i}: matmul throughput</figcaption></figure>'
        for i in range(3)
    )
    inline = _svg_chart([10, 30, 50, 70, 90])
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>hwadvisor report</title>
<style>body {{ font-family: sans-serif; }} h1 {{ color: #225; }}</style></head><body>
<h1>Verdict: ENOUGH for fine-tuning 7B</h1>
<table><tr><th>VRAM</th><td>80.0 GiB</td></tr>
<tr><th>FP16 matmul</th><td>612.3 TFLOPS</td></tr></table>
{charts}{inline}{extra}</body></html>"""


def _text(pdf: bytes) -> tuple[str, int]:
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    text = " ".join(page.extract_text() or "" for page in reader.pages)
    return " ".join(text.split()), len(reader.pages)


def test_renders_verdict_and_figures_small() -> None:
    pdf = render_pdf(report_html())
    assert pdf.startswith(b"%PDF-")
    text, pages = _text(pdf)
    assert pages >= 1
    assert "Verdict: ENOUGH for fine-tuning 7B" in text
    assert "612.3 TFLOPS" in text and "80.0 GiB" in text
    assert "Figure 2: matmul throughput" in text
    assert len(pdf) < 1_000_000


class _Listener:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


def test_no_file_or_network_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = "HWADVISOR-SECRET-MARKER-7f3a91"
    secret_css = tmp_path / "secret.css"
    secret_css.write_text(f'body::after {{ content: "{marker}"; }}')
    secret_svg = tmp_path / "secret.svg"
    secret_svg.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="20">'
        f'<text x="0" y="15">{marker}</text></svg>'
    )
    opened: list[str] = []

    def no_urlopen(*args: object, **kwargs: object) -> None:
        opened.append(repr(args))
        raise AssertionError("urllib.request.urlopen must not be used")

    monkeypatch.setattr("urllib.request.urlopen", no_urlopen)
    listener = _Listener()
    try:
        http_url = f"http://127.0.0.1:{listener.port}/x.png"
        extra = f"""
<link rel="stylesheet" href="{secret_css.as_uri()}">
<style>h1 {{ background: url("file:///etc/passwd"); }}
  table {{ background-image: url("{http_url}"); }}
  @import url("{secret_css.as_uri()}");</style>
<img src="file:///etc/passwd"><img src="{secret_svg.as_uri()}"><img src="{http_url}">
<img src="http://127.0.0.1:9/x"><img src="relative/secret.svg">"""
        refused: list[str] = []
        pdf = render_pdf(report_html(extra), refused=refused)
    finally:
        listener.close()

    assert listener.connections == 0
    assert opened == []
    text, _ = _text(pdf)
    assert marker not in text
    assert marker.encode() not in pdf
    assert b"root:" not in pdf
    assert "Verdict: ENOUGH" in text  # the data: figures and the page itself still render
    for url in (secret_css.as_uri(), secret_svg.as_uri(), "file:///etc/passwd", http_url):
        assert url in refused, url
    assert not any(url.startswith("data:") for url in refused)


def test_data_images_render() -> None:
    with_images = render_pdf(report_html())
    refused: list[str] = []
    without = render_pdf(report_html().replace("data:image/svg+xml", "file:///x"), refused=refused)
    assert len(refused) == 3
    # The data: charts are drawn (their SVG text is in the PDF); refused ones fall back to alt text.
    text_with, _ = _text(with_images)
    text_without, _ = _text(without)
    assert text_with.count("TFLOPS") == 5  # table + 3 data: charts + inline SVG
    assert "chart 0" not in text_with
    assert text_without.count("TFLOPS") == 2
    assert "chart 0" in text_without


def test_unavailable_when_import_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    monkeypatch.delitem(sys.modules, "weasyprint.urls", raising=False)
    ok, reason = pdf_available()
    assert not ok and reason is not None
    with pytest.raises(PdfUnavailable) as info:
        render_pdf("<p>x</p>")
    message = str(info.value)
    assert "\n" not in message
    assert pdfmod.install_hint() in message


@pytest.mark.parametrize(
    ("system", "ids", "expected"),
    [
        ("Linux", {"debian"}, "apt-get install libpango-1.0-0 libpangoft2-1.0-0"),
        ("Linux", {"ubuntu", "debian"}, "apt-get install libpango-1.0-0 libpangoft2-1.0-0"),
        ("Linux", {"fedora"}, "dnf install pango"),
        ("Darwin", set(), "brew install pango"),
        ("Windows", set(), "MSYS2"),
        ("Linux", set(), "Pango"),
    ],
)
def test_install_hint_per_os(system: str, ids: set[str], expected: str) -> None:
    hint = pdfmod.install_hint(system, ids)
    assert expected in hint
    assert "\n" not in hint


def test_os_release_parsing(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text('NAME="Ubuntu"\nID=ubuntu\nID_LIKE="debian"\n')
    assert pdfmod._os_release_ids(release) == {"ubuntu", "debian"}
    assert pdfmod._os_release_ids(tmp_path / "missing") == set()


# --------------------------------------------------------------------------------------------
# The forked helper: WeasyPrint loads beside the charts; every failure falls back to here

needs_fork = pytest.mark.skipif(
    not sys.platform.startswith("linux") or pdfmod._usable_cpus() < 2,
    reason="the helper is forked on Linux with two or more usable CPUs",
)


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _pages(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(io.BytesIO(data)).pages]


HTML = "<h1>Is this machine enough?</h1><p>" + "A100 " * 400 + "</p>"


@needs_fork
def test_the_helper_renders_what_this_process_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    with pdfmod.PdfWorker() as worker:
        pid = worker._pid
        assert pid is not None  # forked
        data = worker.render(HTML)
    assert _reaped(pid)
    assert _pages(data) == _pages(render_pdf(HTML))


@needs_fork
def test_a_helper_that_dies_leaves_the_pdf_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    monkeypatch.setattr(pdfmod, "_child", lambda *_: os._exit(3))
    with pdfmod.PdfWorker() as worker:
        pid = worker._pid
        data = worker.render(HTML)
    assert pid is not None and _reaped(pid)
    assert "Is this machine enough?" in _pages(data)[0]


@needs_fork
def test_without_weasyprint_the_helper_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    monkeypatch.delitem(sys.modules, "weasyprint.urls", raising=False)
    with pdfmod.PdfWorker() as worker, pytest.raises(PdfUnavailable) as info:
        worker.render(HTML)
    assert pdfmod.install_hint() in str(info.value) and "\n" not in str(info.value)


@needs_fork
def test_ctrl_c_or_an_error_here_stops_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    with pytest.raises(RuntimeError), pdfmod.PdfWorker() as worker:  # the charts failed
        pid = worker._pid
        raise RuntimeError("a chart failed")
    assert pid is not None and _reaped(pid)

    def interrupted(_fd: int) -> bytes:
        raise KeyboardInterrupt

    with pdfmod.PdfWorker() as worker:
        pid = worker._pid
        monkeypatch.setattr(pdfmod, "_read_all", interrupted)  # here, after the fork
        with pytest.raises(KeyboardInterrupt):
            worker.render(HTML)
    assert pid is not None and _reaped(pid)


def test_no_helper_where_it_cannot_help_or_is_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(pdfmod.IN_PROCESS_ENV, "1")
    with pdfmod.PdfWorker() as worker:
        assert worker._pid is None
        assert _pages(worker.render(HTML))
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV)
    monkeypatch.setattr(pdfmod, "_usable_cpus", lambda: 1)
    with pdfmod.PdfWorker() as worker:
        assert worker._pid is None
    monkeypatch.setattr(pdfmod, "_usable_cpus", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with pdfmod.PdfWorker() as worker:
            assert worker._pid is None  # a fork would copy no other thread, nor its locks
    finally:
        stop.set()
        other.join()


# --------------------------------------------------------------------------------------------
# Started with the process: `hwadvisor report` forks the helper before parsing its options


@pytest.mark.parametrize(
    ("args", "asks"),
    [
        (["report", "p.json"], True),
        (["--debug", "report", "p.json", "-o", "out"], True),
        (["report", "p.json", "-f", "json,pdf"], True),
        (["report", "p.json", "--format=pdf"], True),
        (["report", "p.json", "-f", "json,html"], False),
        (["report", "p.json", "--format", "html"], False),
        (["report", "p.json", "-fjson"], False),
        (["report", "--help"], False),
        (["scan"], False),  # the benchmarks must not share the CPUs with an import
        (["import", "x.xml"], False),
        ([], False),
    ],
)
def test_only_a_report_with_a_pdf_starts_the_helper_early(args: list[str], asks: bool) -> None:
    assert pdfmod._asks_for_pdf(args) is asks


@needs_fork
def test_the_early_helper_is_used_once_and_stopped_when_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    pdfmod.start_early(["report", "p.json"])
    worker = pdfmod.take_early()
    assert worker is not None and worker.forked
    assert pdfmod.take_early() is None  # handed out once
    with worker:  # already started: entering forks no second helper
        pid = worker._pid
        data = worker.render(HTML)
    assert pid is not None and _reaped(pid)
    assert "Is this machine enough?" in _pages(data)[0]
    # A command that fails before its PDF: the helper nobody took is stopped.
    pdfmod.start_early(["report", "p.json"])
    left = pdfmod._EARLY
    assert left is not None and left._pid is not None
    pid = left._pid
    pdfmod.stop_early()
    assert pdfmod._EARLY is None and _reaped(pid)


@needs_fork
def test_a_failing_report_leaves_no_helper_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hwadvisor.cli import main

    monkeypatch.delenv(pdfmod.IN_PROCESS_ENV, raising=False)
    pdfmod.start_early(["report", str(tmp_path / "missing.json")])
    assert pdfmod._EARLY is not None
    pid = pdfmod._EARLY._pid
    assert main(["report", str(tmp_path / "missing.json")]) != 0
    assert pdfmod._EARLY is None and pid is not None and _reaped(pid)


def test_weasyprint_libraries_are_looked_up_in_ldconfigs_cache_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctypes.util

    original = ctypes.util.find_library
    calls: list[str] = []
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(
        ctypes.util, "_findSoname_ldconfig", lambda name: calls.append(name), raising=False
    )
    with pdfmod._ldconfig_only() as in_effect:
        assert in_effect
        assert ctypes.util.find_library("pango-1.0") is None  # no compiler, no linker run
    assert calls == ["pango-1.0"]
    assert ctypes.util.find_library is original
    with pytest.raises(RuntimeError), pdfmod._ldconfig_only():
        raise RuntimeError
    assert ctypes.util.find_library is original
    monkeypatch.delattr(ctypes.util, "_findSoname_ldconfig")
    with pdfmod._ldconfig_only() as in_effect:
        assert not in_effect and ctypes.util.find_library is original


def test_a_library_only_the_full_lookup_finds_still_loads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ctypes.util

    for name in [n for n in sys.modules if n.partition(".")[0] == "weasyprint"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes.util, "_findSoname_ldconfig", lambda _n: None, raising=False)
    tries: list[bool] = []
    loaded = object()

    def import_module(name: str) -> object:
        narrow = ctypes.util.find_library.__name__ == "<lambda>"
        tries.append(narrow)
        if narrow:  # as WeasyPrint does when a library is missing: a help text, then OSError
            sys.modules["weasyprint"] = loaded  # type: ignore[assignment]
            print("WeasyPrint could not import some external libraries")
            raise OSError("cannot load library 'pango-1.0'")
        return loaded

    monkeypatch.setattr(pdfmod.importlib, "import_module", import_module)
    assert pdfmod._import_weasyprint() is loaded
    assert tries == [True, False]  # the full lookup after the narrow one
    assert "weasyprint" not in sys.modules  # the half-loaded module was dropped before
    assert capsys.readouterr().out == ""  # the narrow try's help text is not shown


def test_the_helpers_warm_up_page_is_in_the_reports_style() -> None:
    page = pdfmod._warm_up_page()
    css = (Path(__file__).resolve().parent.parent / "templates" / "report.css").read_text()
    assert css.strip() and css in page  # the bundled CSS, so the report's fonts are loaded
    text = _pages(render_pdf(page))[0]
    assert "hwadvisor" in text and "GPU 24 h" in text  # the chart's SVG text is drawn too
