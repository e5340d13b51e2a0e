"""Rendering speed and size: JSON + HTML + PDF for the CPU-only, 1-GPU and 8-GPU fixtures.

Target (issue #5, 2-core machine): the 8-GPU profile renders JSON+HTML+PDF in <= 3 s; every PDF
<= 1 MB. Each render runs `hwadvisor report` in a fresh process (imports included), median of 3.

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


def main() -> None:
    exe = shutil.which("hwadvisor") or sys.exit("hwadvisor is not installed in this environment")
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
        verdict = (
            "" if name != "eight-gpu" else f"  (target <= 3 s: {'ok' if med <= 3 else 'OVER'})"
        )
        print(
            f"{name:<11} JSON+HTML+PDF median {med:5.2f} s, PDF {size / 1024:6.0f} KiB"
            f" (target <= 1024 KiB){verdict}"
        )


if __name__ == "__main__":
    main()
