"""Speed of `hwadvisor advise` on a saved profile, and that it never imports torch.

Target: `advise --profile <v1 fixture> --workload resnet50-imagenet --json -` <= 0.5 s wall
(median of the runs), and no "torch" module in `python -X importtime` output. Prints the figures;
exits 1 when a target is missed.

    python benchmarks/advise_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "tests" / "fixtures" / "profiles" / "v1-cpu-only.json"
TARGET_SECONDS = 0.5


def _args() -> list[str]:
    return ["advise", "--profile", str(PROFILE), "--workload", "resnet50-imagenet", "--json", "-"]


def _env() -> dict[str, str]:
    """As a user runs it: pip writes bytecode on install, so the child may too (an environment
    with PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _time_once() -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hwadvisor", *_args()],
        capture_output=True,
        text=True,
        check=False,
        env=_env(),
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"advise failed ({done.returncode}): {done.stderr.strip()}")
    json.loads(done.stdout)  # the output is a whole JSON document
    return elapsed


def _torch_imports() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hwadvisor", *_args()],
        capture_output=True,
        text=True,
        check=False,
    )
    modules = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        name = line.rsplit("|", 1)[-1].strip()
        if name == "torch" or name.startswith("torch."):
            modules.append(name)
    return modules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    _time_once()  # warm-up: the file cache, and bytecode where it was never written
    times = [_time_once() for _ in range(max(1, args.runs))]
    median = statistics.median(times)
    print(
        f"advise resnet50-imagenet: median {median:.3f} s over {len(times)} runs "
        f"(min {min(times):.3f}, max {max(times):.3f}; target <= {TARGET_SECONDS:.1f} s)"
    )
    torch = _torch_imports()
    print(f"torch imported by advise: {'yes: ' + ', '.join(torch[:5]) if torch else 'no'}")
    ok = median <= TARGET_SECONDS and not torch
    print("OK" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
