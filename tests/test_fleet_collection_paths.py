"""An old-driver host is found through every way the fleet collects profiles.

The profile is what a scan writes on a GPU node whose driver no current framework build runs on
and which has no PyTorch (the Kubernetes image, a bare node): its findings come from the
readiness rules, not from the test. Each collection path then carries it to ``fleet ingest``
as it would on a real cluster — Ansible's fetched files, the Slurm script (fake ``srun``), the
systemd timer's script (shared folder) and the Kubernetes pod script (``fleet emit`` into the
log, read back from ``kubectl logs --prefix``) — with a fake ``hwadvisor`` only for ``scan``;
``fleet emit`` is the real command. Each time the fleet must name the host in *Needs
attention* and hold it back in ``fleet advise``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.model.load import parse_profile
from hwadvisor.model.profile import TorchInfo
from hwadvisor.readiness import assess
from tests.helpers import fleet_synth
from tests.test_deploy_manifests import (
    FAKE_SCONTROL,
    FAKE_SRUN,
    FAKE_STAT,
    _container,
    _manifest,
)

ROOT = Path(__file__).resolve().parent.parent
HOST = "gpu-old-7"
FINDING = "cuda-driver-too-old-for-frameworks"

# hwadvisor on a node: `scan` prints the prepared profile, anything else is the real command.
FAKE_HWADVISOR = """#!/bin/sh
if [ "$1" = scan ]; then
    cat "$FAKE_PROFILE"
    exit 0
fi
exec "$REAL_PYTHON" -m hwadvisor "$@"
"""
FAKE_HOSTNAME = f'#!/bin/sh\necho "{HOST}"\n'


def _old_driver_profile() -> str:
    """A scan's profile of a GPU node on driver 470 (CUDA 11.4) without PyTorch, with the
    findings the readiness rules give it."""
    doc = fleet_synth.template("single-gpu")
    doc["host"]["hostname"]["value"] = HOST
    doc["host"]["machine_id"]["value"] = fleet_synth.machine_id(7, "old")
    profile = parse_profile(json.dumps(doc))
    profile.nvml.driver_version.value = "470.182.03"
    profile.nvml.cuda_driver_version.value = "11.4"
    profile.frameworks.torch = TorchInfo(installed=False)
    profile.findings = assess(profile)
    return profile.model_dump_json(indent=2)


@pytest.fixture(scope="module")
def profile_text() -> str:
    text = _old_driver_profile()
    ids = [f["id"] for f in json.loads(text)["findings"]]
    assert FINDING in ids, ids  # the readiness rule fires without torch
    return text


def _env(tmp_path: Path, profile_text: str, **extra: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in {
        "hwadvisor": FAKE_HWADVISOR,
        "hostname": FAKE_HOSTNAME,
        "srun": FAKE_SRUN,
        "scontrol": FAKE_SCONTROL,
        "stat": FAKE_STAT,
    }.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "profile.json").write_text(profile_text)
    return {
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "LC_ALL": "C",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "REAL_PYTHON": sys.executable,
        "FAKE_PROFILE": str(tmp_path / "profile.json"),
        "FAKE_SRUN_LOG": str(tmp_path / "srun-args"),
        "FAKE_DIR": str(tmp_path),
        **extra,
    }


def _found(source: str, capsys: Any, tmp_path: Path) -> None:
    """The fleet read from ``source`` names the host under the finding and holds it back."""
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", source, "--db", str(db)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["fleet", "summary", "--db", str(db), "--json"]) == 0
    findings = {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert FINDING in findings, sorted(findings)
    assert findings[FINDING]["host_names"] == [HOST]
    assert main(["fleet", "summary", "--db", str(db)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"({FINDING}) on {HOST}" in text
    assert main(["fleet", "advise", "--db", str(db), "--workload", "resnet50-imagenet"]) == 0
    advice = " ".join(capsys.readouterr().out.split())
    assert "0 of 1 hosts meet it" in advice and "driver 470.182.03 (CUDA 11.4)" in advice


def test_ansible_fetched_profiles(tmp_path: Path, profile_text: str, capsys: Any) -> None:
    # The role fetches each host's profile as <output_dir>/<inventory_hostname>.json.
    out = tmp_path / "hwadvisor-profiles"
    out.mkdir()
    (out / f"{HOST}.json").write_text(profile_text)
    _found(str(out), capsys, tmp_path)


def test_slurm_collect_script(tmp_path: Path, profile_text: str, capsys: Any) -> None:
    out = tmp_path / "shared" / "profiles"
    env = _env(
        tmp_path,
        profile_text,
        SLURM_JOB_ID="4711",
        SLURM_JOB_NUM_NODES="1",
        FAKE_NODENAMES=HOST,
    )
    done = subprocess.run(
        ["bash", str(ROOT / "deploy" / "slurm" / "collect.sh"), "--out", str(out)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [p.name for p in out.iterdir()] == [f"{HOST}.json"]
    _found(str(out), capsys, tmp_path)


def test_systemd_timer_script(tmp_path: Path, profile_text: str, capsys: Any) -> None:
    state, shared = tmp_path / "var-lib-hwadvisor", tmp_path / "shared"
    state.mkdir()
    shared.mkdir()
    env = _env(tmp_path, profile_text)
    script = ROOT / "deploy" / "systemd" / "hwadvisor-scan.sh"
    body = script.read_text()
    assert "HWADVISOR_SHARED_DIR" in body and "HWADVISOR_STATE_DIR" in body
    env.update(HWADVISOR_STATE_DIR=str(state), HWADVISOR_SHARED_DIR=str(shared))
    done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(list(shared.glob("*.json"))) == 1
    _found(str(shared), capsys, tmp_path)


def test_kubernetes_pod_log(
    tmp_path: Path, profile_text: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "var-lib-hwadvisor"
    out.mkdir()
    env = _env(tmp_path, profile_text, HWADVISOR_OUT_DIR=str(out), HWADVISOR_INTERVAL_SECONDS="0")
    script = str(_container(_manifest("daemonset.yaml", "DaemonSet"))["args"][0])
    done = subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("hwadvisor-profile ")]
    assert lines and all(len(line.encode()) < 8_000 for line in lines)
    # What `kubectl logs --prefix --timestamps` shows, among the pod's other lines.
    log = tmp_path / "pods.log"
    prefix = "[pod/hwadvisor-x7k2p/hwadvisor] 2026-11-27T08:00:00.000000000Z "
    log.write_text(
        "".join(f"{prefix}{line}\n" for line in ["starting", *lines, "sleeping"]),
        encoding="utf-8",
    )
    _found(str(log), capsys, tmp_path)
