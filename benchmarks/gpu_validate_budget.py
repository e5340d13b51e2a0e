"""The GPU validation kit against its budgets: what travels (≤ 64 MiB, the tree and the kit),
the files it brings back (≤ 8), its step limits (≤ 9 minutes in all), and a run here: without a
GPU it must finish in ≤ 60 s with exit 0.

    python benchmarks/gpu_validate_budget.py        (after scripts/gpu-kit-prepare.sh, if any)
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def tracked_bytes() -> int:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout
    return sum(
        (ROOT / name).stat().st_size
        for name in out.decode().split("\0")
        if name and (ROOT / name).is_file()
    )


def main() -> int:
    spec = importlib.util.spec_from_file_location("gpu_validate", ROOT / "scripts/gpu_validate.py")
    assert spec is not None and spec.loader is not None
    validate = importlib.util.module_from_spec(spec)
    sys.modules["gpu_validate"] = validate
    spec.loader.exec_module(validate)
    kit = ROOT / ".gpu-kit"
    kit_bytes = sum(p.stat().st_size for p in kit.rglob("*") if p.is_file()) if kit.exists() else 0
    tree = tracked_bytes()
    print(
        f"travels: tree {tree / MIB:.1f} MiB + kit {kit_bytes / MIB:.1f} MiB = "
        f"{(tree + kit_bytes) / MIB:.1f} MiB (limit 64 MiB)"
        + ("" if kit_bytes else "; no kit here: run scripts/gpu-kit-prepare.sh")
    )
    limits = sum(s.limit_s for s in validate.STEPS)
    print(
        f"step limits: {' + '.join(f'{s.name} {s.limit_s:.0f}' for s in validate.STEPS)} = "
        f"{limits:.0f} s; the run stops itself at {validate.TOTAL_S:.0f} s (limit 560 s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        env = {**os.environ, "HWADVISOR_VALIDATE_PYTHON": sys.executable}
        started = time.monotonic()
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts/gpu-validate.sh"), str(out)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        took = time.monotonic() - started
        files = sorted(p.name for p in out.iterdir()) if out.exists() else []
    print(
        f"run here: exit {proc.returncode} in {took:.1f} s (limit 60 s without a GPU); "
        f"{len(files)} files back (limit 8): {' '.join(files)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
