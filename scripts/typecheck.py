"""Type-check the package as it is installed: ``hwadvisor`` with ``probes/`` and ``templates/``
mapped inside it (pyproject's package-dir), which mypy cannot follow from the source tree alone.

    python scripts/typecheck.py [extra mypy options]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {"probes": ROOT / "probes", "templates": ROOT / "templates"}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hwadvisor-typecheck-") as tmp:
        package = Path(tmp) / "hwadvisor"
        package.mkdir()
        for entry in (ROOT / "src" / "hwadvisor").iterdir():
            if entry.name not in MAPPED and entry.name != "__pycache__":
                (package / entry.name).symlink_to(entry)
        for name, target in MAPPED.items():
            (package / name).symlink_to(target, target_is_directory=True)
        env = {**os.environ, "MYPYPATH": tmp}
        cmd = [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            "hwadvisor",
            *sys.argv[1:],
        ]
        return subprocess.run(cmd, cwd=tmp, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
