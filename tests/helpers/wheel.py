"""Building hwadvisor's wheel from this checkout, offline (for the packaging tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(out: Path) -> Path:
    """``pip wheel`` the repository into ``out`` (no dependencies, no isolated build
    environment: nothing is downloaded) and return the wheel's path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("hwadvisor-*.whl")
    return built
