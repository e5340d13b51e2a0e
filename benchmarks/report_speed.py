"""Rendering speed and size: JSON + HTML + PDF for the CPU-only, 1-GPU and 8-GPU fixtures.

Targets (issues #5 and #13, 2-core machine): JSON+HTML+PDF in <= 3 s for the 8-GPU profile and
<= 2 s for the CPU-only one; every PDF <= 1 MB. Each render runs `hwadvisor report` in a fresh
process (imports included, the PDF helper forked at start as for a user), median of 3. The
start-up time of `hwadvisor -V` is printed first: it tells a quiet machine from a busy one.

    python benchmarks/report_speed.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "reports"
#: Seconds, JSON+HTML+PDF in a fresh process.
TARGETS = {"cpu-only": 2.0, "eight-gpu": 3.0}


def main() -> None:
    beside = Path(sys.executable).with_name("hwadvisor")  # the venv this script runs in
    exe = (
        str(beside)
        if beside.exists()
        else shutil.which("hwadvisor") or sys.exit("hwadvisor is not installed in this environment")
    )
    # How fast this machine starts a process right now: shared VMs have slow phases, and a
    # render time means little without it.
    starts = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([exe, "-V"], capture_output=True, check=False)
        starts.append(time.perf_counter() - start)
    print(f"`hwadvisor -V` median {statistics.median(starts):.2f} s (this machine's start-up now)")
    for name in ("cpu-only", "single-gpu", "eight-gpu"):
        times, size = [], 0
        for _ in range(3):
            with tempfile.TemporaryDirectory() as tmp:
                src = Path(tmp) / "in.json"
                shutil.copy(FIXTURES / f"{name}.json", src)
                start = time.perf_counter()
                done = subprocess.run(
                    [
                        exe,
                        "report",
                        str(src),
                        "--format",
                        "json,html,pdf",
                        "--out",
                        str(Path(tmp) / "out"),
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                times.append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit(done.stderr)
                size = (Path(tmp) / "out" / "in.pdf").stat().st_size
        med = statistics.median(times)
        target = TARGETS.get(name)
        verdict = (
            ""
            if target is None
            else f"  (target <= {target:g} s: {'ok' if med <= target else 'OVER'})"
        )
        print(
            f"{name:<11} JSON+HTML+PDF median {med:5.2f} s, PDF {size / 1024:6.0f} KiB"
            f" (target <= 1024 KiB){verdict}"
        )


if __name__ == "__main__":
    main()
