"""Speed of the command line: `hwadvisor --help`, detection only, and the default scan.

Targets on a 2-core machine: --help <= 0.3 s with no torch/pynvml/cpuinfo/weasyprint import at
start; detection (`scan --no-bench --json -`) <= 3 s wall; the default scan (detection +
benchmarks + JSON) <= 12 s wall, its benchmark phase <= 8 s. Prints medians and ranges.

    python benchmarks/scan_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "pynvml", "cpuinfo", "weasyprint", "matplotlib", "psutil", "pydantic")


def _exe() -> list[str]:
    found = shutil.which("hwadvisor")
    return [found] if found else [sys.executable, "-m", "hwadvisor"]


def _time(
    cmd: list[str], runs: int, cwd: Path
) -> tuple[list[float], subprocess.CompletedProcess[str]]:
    times = []
    last = None
    for _ in range(runs):
        start = time.perf_counter()
        last = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
        times.append(time.perf_counter() - start)
    assert last is not None
    return times, last


def _heavy_imports_at_start() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import hwadvisor.cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    seen = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return sorted(m for m in HEAVY if m in seen)


def _report(label: str, times: list[float], target: float) -> None:
    med = statistics.median(times)
    verdict = "ok" if med <= target else "OVER TARGET"
    print(
        f"{label:<34} median {med:6.3f} s  min {min(times):6.3f}  max {max(times):6.3f}"
        f"  (target <= {target} s: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        help_times, _ = _time([*_exe(), "--help"], args.runs * 2, cwd)
        detect_times, done = _time([*_exe(), "scan", "--no-bench", "--json", "-"], args.runs, cwd)
        full_times, full = _time([*_exe(), "scan", "--json", "-"], args.runs, cwd)
    _report("hwadvisor --help", help_times, 0.3)
    heavy = _heavy_imports_at_start()
    print(f"{'heavy modules imported at start':<34} {', '.join(heavy) or 'none'}")
    _report("scan --no-bench --json - (detect)", detect_times, 3.0)
    _report("scan --json - (detect + bench)", full_times, 12.0)
    if full.returncode in (0, 3):
        bench = json.loads(full.stdout).get("benchmarks") or {}
        print(
            f"{'benchmark phase (last run)':<34} {bench.get('duration_seconds', 0):6.3f} s"
            f"  (target <= 8 s; other processes used {bench.get('other_cpu_load')} of the CPUs)"
        )
    if done.returncode not in (0, 3):
        print(done.stderr, file=sys.stderr)
        sys.exit(1)
    profile = json.loads(done.stdout)
    for run in profile["diagnostics"]["probes"]:
        print(f"  probe {run['name']:<9} {run['status']:<8} {run['seconds']:6.3f} s")


if __name__ == "__main__":
    main()
