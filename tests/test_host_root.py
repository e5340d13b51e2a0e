"""``HWADVISOR_HOST_ROOT``: in a container with the node's files mounted (the Kubernetes
DaemonSet mounts them at /host), the OS name and machine-id are the node's, the profile says
where they came from, and a missing file falls back on the container's own with a note."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.pipeline import ScanOptions, run_scan
from hwadvisor.probes.roots import HOST_ROOT_ENV, Roots
from hwadvisor.probes.system import probe_host, probe_platform

NODE_OS = (
    'NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n'
)
IMAGE_OS = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'
NODE_ID = "0123456789abcdef0123456789abcdef"
IMAGE_ID = "fedcba9876543210fedcba9876543210"


def hashed(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def tree(base: Path, os_release: str | None, machine_id: str | None, lib: bool = False) -> Path:
    etc = base / ("usr/lib" if lib else "etc")
    etc.mkdir(parents=True, exist_ok=True)
    if os_release is not None:
        (etc / "os-release").write_text(os_release, encoding="utf-8")
    if machine_id is not None:
        (base / "etc").mkdir(parents=True, exist_ok=True)
        (base / "etc" / "machine-id").write_text(machine_id + "\n", encoding="utf-8")
    return base


def container(tmp_path: Path, host: Path | None) -> Roots:
    image = tree(tmp_path / "image", IMAGE_OS, IMAGE_ID)
    return replace(Roots.under(image), host=host)


def test_the_nodes_os_and_machine_id_with_where_they_came_from(tmp_path: Path) -> None:
    host = tree(tmp_path / "host", NODE_OS, NODE_ID)
    roots = container(tmp_path, host)
    distribution = probe_platform(roots, env={}, system="Linux").distribution
    assert distribution.value == "Ubuntu 22.04.4 LTS"
    assert distribution.reason == f"read from the host root {host}/etc/os-release ({HOST_ROOT_ENV})"
    ident = probe_host(roots)
    assert ident.machine_id.value == hashed(NODE_ID) != hashed(IMAGE_ID)
    assert (
        ident.machine_id.reason
        == f"read from the host root {host}/etc/machine-id ({HOST_ROOT_ENV})"
    )
    # The hostname is this container's; the note says when that is the node's.
    assert ident.hostname.value and "hostNetwork" in (ident.hostname.reason or "")


def test_usr_lib_os_release_when_etc_has_none(tmp_path: Path) -> None:
    host = tree(tmp_path / "host", NODE_OS, None, lib=True)
    distribution = probe_platform(container(tmp_path, host), env={}, system="Linux").distribution
    assert distribution.value == "Ubuntu 22.04.4 LTS"
    assert (distribution.reason or "").endswith(f"{host}/usr/lib/os-release ({HOST_ROOT_ENV})")


@pytest.mark.parametrize("layout", ["empty", "missing", "a file", "junk"])
def test_missing_files_under_the_root_fall_back_with_a_note(tmp_path: Path, layout: str) -> None:
    host = tmp_path / "host"
    if layout == "empty":
        host.mkdir()
    elif layout == "a file":
        host.write_text("not a folder")
    elif layout == "junk":
        tree(host, "no equals sign here\n", "")
    roots = container(tmp_path, host)
    distribution = probe_platform(roots, env={}, system="Linux").distribution
    assert distribution.value == "Debian GNU/Linux 12 (bookworm)"  # the container's own
    assert distribution.reason == (
        f"{HOST_ROOT_ENV}={host} has no readable etc/os-release or usr/lib/os-release: the OS "
        "is the container's own"
    )
    machine_id = probe_host(roots).machine_id
    assert machine_id.value == hashed(IMAGE_ID)
    assert (machine_id.reason or "").endswith("the machine-id is the container's own")


def test_nothing_anywhere_is_unknown_with_both_reasons(tmp_path: Path) -> None:
    host = tmp_path / "host"
    roots = replace(Roots.under(tmp_path / "image"), host=host)
    distribution = probe_platform(roots, env={}, system="Linux").distribution
    assert distribution.value is None
    assert (distribution.reason or "").startswith("no /etc/os-release; HWADVISOR_HOST_ROOT=")
    machine_id = probe_host(roots).machine_id
    assert machine_id.value is None
    assert "no machine-id" in (machine_id.reason or "")
    assert f"{HOST_ROOT_ENV}={host}" in (machine_id.reason or "")


def test_without_a_host_root_nothing_changes(tmp_path: Path) -> None:
    roots = container(tmp_path, None)
    distribution = probe_platform(roots, env={}, system="Linux").distribution
    assert distribution.value == "Debian GNU/Linux 12 (bookworm)" and distribution.reason is None
    ident = probe_host(roots)
    assert ident.machine_id.reason is None and ident.hostname.reason is None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({HOST_ROOT_ENV: ""}, None),
        ({HOST_ROOT_ENV: "  "}, None),
        ({HOST_ROOT_ENV: "/host"}, Path("/host")),
    ],
)
def test_roots_from_the_environment(env: dict[str, str], expected: Path | None) -> None:
    roots = Roots.live(env)
    assert roots.host == expected
    assert roots.etc == Path("/etc") and roots.proc == Path("/proc")  # the rest is live


def test_a_scan_uses_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host = tree(tmp_path / "host", NODE_OS, NODE_ID)
    monkeypatch.setenv(HOST_ROOT_ENV, str(host))
    assert ScanOptions().roots.host == host
    profile = run_scan(ScanOptions(out_dir=tmp_path / "out", bench=False))
    assert profile.platform.distribution.value == "Ubuntu 22.04.4 LTS"
    assert profile.host.machine_id.value == hashed(NODE_ID)
    code = main(["scan", "--no-bench", "--json", "-", "-q"])
    assert code in (ExitStatus.OK, ExitStatus.DEGRADED)  # NVML may be missing here
    doc = json.loads(capsys.readouterr().out)
    assert doc["platform"]["distribution"]["value"] == "Ubuntu 22.04.4 LTS"
    assert HOST_ROOT_ENV in doc["platform"]["distribution"]["reason"]
