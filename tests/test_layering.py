"""The layering is enforced by ruff (a ruff.toml per layer bans the imports that would climb
back): probes and the model import no renderer or advice, the advice no renderer or presentation,
the renderers no probe and no advice. Each case feeds ruff a file as if it stood in that folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ("probes/x.py", "hwadvisor.render.console", True),
    ("probes/x.py", "hwadvisor.advise", True),
    ("probes/x.py", "hwadvisor.model.profile", False),
    ("src/hwadvisor/model/x.py", "hwadvisor.advise.engine", True),
    ("src/hwadvisor/model/x.py", "hwadvisor.probes.nvml", True),
    ("src/hwadvisor/advise/x.py", "hwadvisor.render.html", True),
    ("src/hwadvisor/advise/x.py", "hwadvisor.present.answer", True),
    ("src/hwadvisor/advise/x.py", "hwadvisor.catalog.peaks", False),
    ("src/hwadvisor/render/x.py", "hwadvisor.probes.bench", True),
    ("src/hwadvisor/render/x.py", "hwadvisor.advise.engine", True),
    ("src/hwadvisor/render/x.py", "hwadvisor.present.answer", False),
    ("src/hwadvisor/present/x.py", "hwadvisor.render.console", True),
    ("src/hwadvisor/present/x.py", "hwadvisor.advise.figures", False),
]


def _ruff() -> list[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("ruff is not installed here (bash setup.sh --dev installs it)")
    return [found]


@pytest.mark.parametrize(("where", "module", "banned"), CASES)
def test_an_import_that_climbs_back_is_refused(where: str, module: str, banned: bool) -> None:
    source = f"from {module} import something  # noqa: F401\n"
    out = subprocess.run(
        [*_ruff(), "check", "--select", "TID251", "--stdin-filename", where, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert ("TID251" in out.stdout) is banned, out.stdout + out.stderr
