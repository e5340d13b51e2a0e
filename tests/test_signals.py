"""A scan with a hung probe (an NVML init that never returns) and a stop signal: hwadvisor exits
at once with 128 + the signal, kills the hung child and its grandchild, and writes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.procs import alive

ROOT = Path(__file__).parent.parent

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and process groups")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_a_hung_scan_at_once(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.hung_scan", str(pid_file)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and len(pid_file.read_text().split()) == 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the hung probe never started"
            time.sleep(0.05)
        child, grandchild = (int(p) for p in pid_file.read_text().split())
        time.sleep(0.3)  # let the main thread settle into waiting on the probes
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert took < 1.5, f"exit took {took:.2f} s"
    assert out == "", "no partial output"
    assert f"stopped by {sig.name}" in err and "Traceback" not in err
    gone = time.monotonic() + 1.0
    while (alive(child) or alive(grandchild)) and time.monotonic() < gone:
        time.sleep(0.02)
    assert not alive(child), "the hung probe outlived hwadvisor"
    assert not alive(grandchild), "the probe's own child outlived hwadvisor"


def test_ctrl_c_during_the_pdf_render_stops_cleanly(capfd: pytest.CaptureFixture[str]) -> None:
    """WeasyPrint runs Python from C callbacks, where a KeyboardInterrupt is printed and
    swallowed: the signal is held for the render and acted on after it, with no PDF."""
    import threading

    from hwadvisor.model.load import load_profile
    from hwadvisor.render.html import render_html
    from hwadvisor.render.pdf import render_pdf

    html = render_html(
        load_profile(ROOT / "tests" / "fixtures" / "reports" / "eight-gpu.json"),
        source_sha256="0" * 64,
    )
    render_pdf("<p>warm</p>")  # load WeasyPrint first: the signal must land in the render
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            render_pdf(html)
    finally:
        timer.cancel()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Exception ignored" not in captured.err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
