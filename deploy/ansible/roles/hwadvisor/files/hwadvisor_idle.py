"""Is this host idle enough for hwadvisor's microbenchmarks? (the role's hwadvisor_bench=auto)

Prints one JSON object and exits 0 (2 on a usage error):

    {"idle": false, "reasons": ["1-minute load 3.10 per CPU is not below 0.10"],
     "load1": 24.8, "cpus": 8, "load_per_cpu": 3.1, "gpu_processes": 0}

Idle means: the 1-minute load average divided by the number of CPUs is below the threshold, and,
where nvidia-smi exists, it answers and lists no compute process on any GPU. When something
cannot be checked the answer is "not idle": benchmarks on a busy machine would disturb its work
and measure the wrong thing. Standard library only; runs under any Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def load_average(path: Path) -> float:
    """The 1-minute load average: /proc/loadavg where there is one, else os.getloadavg()."""
    try:
        return float(path.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def gpu_processes(command: str, timeout: float) -> tuple[int | None, str | None]:
    """(number of compute processes on NVIDIA GPUs, None) or (None, why it is unknown);
    (0, None) where there is no nvidia-smi (no NVIDIA driver: nothing to disturb)."""
    found = shutil.which(command)
    if found is None:
        return 0, None
    try:
        done = subprocess.run(
            [found, "--query-compute-apps=pid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"nvidia-smi did not answer within {timeout:g} s"
    except OSError as exc:
        return None, f"nvidia-smi could not run: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return None, f"nvidia-smi failed (exit {done.returncode}) {tail[0]}".strip()
    # One pid per line; versions that print "No running processes found" list no pid.
    pids = [line for line in done.stdout.splitlines() if line.strip().split(",")[0].isdigit()]
    return len(pids), None


def check(
    max_load_per_cpu: float, loadavg: Path, nvidia_smi: str, timeout: float
) -> dict[str, Any]:
    cpus = os.cpu_count() or 1
    load1 = load_average(loadavg)
    per_cpu = load1 / cpus
    reasons = []
    if not per_cpu < max_load_per_cpu:
        reasons.append(f"1-minute load {per_cpu:.2f} per CPU is not below {max_load_per_cpu:g}")
    processes, unknown = gpu_processes(nvidia_smi, timeout)
    if unknown is not None:
        reasons.append(f"GPU use unknown: {unknown}")
    elif processes:
        reasons.append(f"{processes} process(es) computing on a GPU")
    return {
        "idle": not reasons,
        "reasons": reasons,
        "load1": load1,
        "cpus": cpus,
        "load_per_cpu": round(per_cpu, 4),
        "gpu_processes": processes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-load-per-cpu", type=float, default=0.1, metavar="LOAD")
    parser.add_argument("--loadavg", type=Path, default=Path("/proc/loadavg"), metavar="PATH")
    parser.add_argument("--nvidia-smi", default="nvidia-smi", metavar="COMMAND")
    parser.add_argument("--nvidia-smi-timeout", type=float, default=20.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    found = check(args.max_load_per_cpu, args.loadavg, args.nvidia_smi, args.nvidia_smi_timeout)
    sys.stdout.write(json.dumps(found) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
