"""How fast a stop signal ends a scan whose NVML probe hangs, and whether anything is left.

Target: exit 128 + signal within 1 s of SIGINT (Ctrl-C), SIGTERM or SIGHUP, with the hung probe
and its own child gone. Runs ``tests/helpers/hung_scan.py`` (a scan whose NVML init never
returns, limit 40 s) from the repository root; prints one line per signal.

    python benchmarks/signal_exit.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def _once(sig: signal.Signals) -> tuple[float, int | None, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        pid_file = Path(tmp) / "pids"
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.hung_scan", str(pid_file)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and len(pid_file.read_text().split()) == 2):
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("the hung probe never started")
            time.sleep(0.05)
        pids = [int(p) for p in pid_file.read_text().split()]
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return float("inf"), None, True
        took = time.monotonic() - sent
        time.sleep(0.2)
        return took, proc.returncode, any(_alive(p) for p in pids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ok = True
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        results = [_once(sig) for _ in range(max(1, args.runs))]
        worst = max(r[0] for r in results)
        codes = sorted({r[1] for r in results}, key=str)
        left = sum(r[2] for r in results)
        good = worst <= TARGET_S and codes == [128 + sig] and left == 0
        ok = ok and good
        print(
            f"{sig.name:<8} exit {'/'.join(map(str, codes))} within {worst:.2f} s at worst over "
            f"{len(results)} runs; processes left: {left}  {'OK' if good else 'MISSED'}"
        )
    print(f"target: exit 128+n within {TARGET_S:g} s, nothing left —", "PASS" if ok else "MISS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
