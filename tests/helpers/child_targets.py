"""Functions the isolation tests run in child processes (importable by path)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any


def echo(value: Any) -> dict[str, Any]:
    print("library noise on stdout")  # must not corrupt the result
    os.write(1, b"C-level noise on fd 1\n")
    return {"echo": value}


def hang(pid_file: str) -> None:
    """Start a grandchild, record both pids, then never return."""
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(pid_file, "w") as handle:
        handle.write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(300)


def boom() -> None:
    raise RuntimeError("probe exploded")


def die() -> None:
    os._exit(7)


def nan() -> float:
    return float("nan")


def sleep_forever() -> None:
    time.sleep(300)


def garbage() -> dict[str, Any]:
    return {"nvml": {"status": 42}, "gpus": "not a list"}
