"""The built wheel carries probes and templates, and its `hwadvisor scan --json -` works."""

from __future__ import annotations

import email
import email.message
import json
import os
import re
import shutil
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


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_wheel_metadata_licence_classifiers_python(wheel: Path) -> None:
    metadata = _metadata(wheel)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    licence = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("licenses/LICENSE")]
    assert len(licence) == 1
    assert "MIT License" in zipfile.ZipFile(wheel).read(licence[0]).decode()
    assert metadata["Requires-Python"] == ">=3.10"
    classifiers = metadata.get_all("Classifier") or []
    for wanted in (
        "Programming Language :: Python :: 3.10",
        "Environment :: Console",
        "Operating System :: POSIX :: Linux",
        "Topic :: System :: Hardware",
    ):
        assert wanted in classifiers
    # PEP 639: the licence is the expression; a "License ::" classifier beside it is refused.
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert "gpu" in (metadata["Keywords"] or "").split(",")
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "Exit codes" in (metadata.get_payload() or "")


def test_wheel_never_asks_for_torch(wheel: Path) -> None:
    # Neither a dependency nor an extra: pip would fetch the multi-GB CUDA build on Linux x86-64
    # whether or not the machine has an NVIDIA GPU (setup.sh chooses the build instead).
    metadata = _metadata(wheel)
    requires = metadata.get_all("Requires-Dist") or []
    assert not [r for r in requires if re.match(r"torch\b", r)], requires
    assert "torch" not in (metadata.get_all("Provides-Extra") or [])


def test_every_dependency_waits_for_the_python_check(wheel: Path) -> None:
    # pip 23.0 (Python 3.9's) checks Requires-Python after the dependencies: each one carries
    # the marker so that an old Python is told so, not "No matching distribution for ...".
    for requirement in _metadata(wheel).get_all("Requires-Dist") or []:
        assert re.search(r"""python_version\s*>=\s*["']3\.10["']""", requirement), requirement


@pytest.mark.skipif(shutil.which("python3.9") is None, reason="no python3.9 on PATH")
def test_python39_is_told_the_python_version(wheel: Path) -> None:
    python39 = shutil.which("python3.9")
    assert python39 is not None
    version = subprocess.run(
        [python39, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if version.returncode != 0 or version.stdout.strip() != "(3, 9)":
        pytest.skip("python3.9 on PATH does not run")
    for target in (str(wheel), f"{wheel}[report,fleet]"):
        done = subprocess.run(
            [python39, "-m", "pip", "install", "--dry-run", "--no-index", target],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode != 0
        assert "requires a different Python" in done.stderr and ">=3.10" in done.stderr, done.stderr
        assert "No matching distribution" not in done.stderr
