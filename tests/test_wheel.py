"""The built wheel carries probes and templates, and its `hwadvisor scan --json -` works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.wheel import build_wheel

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def test_wheel_contains_probes_and_templates(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "hwadvisor/probes/nvml.py" in names
    assert "hwadvisor/probes/cpu.py" in names
    assert "hwadvisor/templates/__init__.py" in names
    assert "hwadvisor/cli.py" in names
    # Every package of the source tree is in the wheel (a subpackage missing from pyproject's
    # list would only fail when its command runs).
    source = ROOT / "src" / "hwadvisor"
    for init in source.rglob("__init__.py"):
        assert f"hwadvisor/{init.relative_to(source).as_posix()}" in names
    for data in (
        "calibration.toml",
        "memory_cases.toml",
        "gpus.toml",
        "rules.toml",
        "workloads.toml",
        "drivers.toml",
    ):
        assert f"hwadvisor/catalog/{data}" in names
    assert not any(n.startswith(("tests/", "probes/", "templates/")) for n in names)


def test_scan_from_fresh_environment(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120
    )
    py = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The dependencies come from the test environment's site-packages folders, added as plain
    # paths (their own .pth files, the editable hook for hwadvisor among them, stay inactive);
    # hwadvisor itself comes only from the wheel.
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    (site / "deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run(
        [str(py), "-c", "import hwadvisor.probes as p; print(p.__file__)"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip().startswith(str(site))

    done = subprocess.run(
        [str(env_dir / "bin" / "hwadvisor"), "scan", "--json", "-", "--budget", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    profile = json.loads(done.stdout)
    assert profile["schema_version"] >= 1
    assert profile["cpu"]["logical_cores"]["value"] >= 1
    assert all(run["status"] in ("ok", "skipped") for run in profile["diagnostics"]["probes"])
    assert not (tmp_path / "reports").exists()  # --json - writes nothing to disk

    (tmp_path / "profile.json").write_text(done.stdout, encoding="utf-8")
    advised = subprocess.run(
        [
            str(env_dir / "bin" / "hwadvisor"),
            "advise",
            "--profile",
            str(tmp_path / "profile.json"),
            "--workload",
            "llm-7b-lora",
            "--json",
            "-",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert advised.returncode == 0, advised.stderr
    assert json.loads(advised.stdout)["scenario"]["id"] in (1, 2, 3, 4)
