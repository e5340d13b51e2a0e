"""probes/system.py: memory, storage, platform and host, from fakes and recorded trees."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from collections import namedtuple
from pathlib import Path
from typing import Any

import psutil
import pytest

from hwadvisor.model.facts import Source
from hwadvisor.probes import system as system_module
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.system import (
    parse_meminfo,
    probe_host,
    probe_memory,
    probe_platform,
    probe_storage,
)

FIXTURES = Path(__file__).parent / "fixtures"
SYSTEM = FIXTURES / "system"

VirtualMemory = namedtuple("VirtualMemory", "total available")
Swap = namedtuple("Swap", "total free")


class FakePsutil:
    Error = psutil.Error

    def __init__(self, *, virtual: Any = None, swap: Any = None) -> None:
        self.virtual, self.swap = virtual, swap

    def virtual_memory(self) -> Any:
        if isinstance(self.virtual, BaseException):
            raise self.virtual
        return self.virtual

    def swap_memory(self) -> Any:
        if isinstance(self.swap, BaseException):
            raise self.swap
        return self.swap


def write_tree(base: Path, files: dict[str, str]) -> Roots:
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Roots.under(base)


# --------------------------------------------------------------------------------------------
# Memory


def test_memory_from_psutil_with_cgroup_limit() -> None:
    fake = FakePsutil(virtual=VirtualMemory(16 * 2**30, 12 * 2**30), swap=Swap(2**30, 2**29))
    info = probe_memory(Roots.under(FIXTURES / "cgroup" / "v2-quota-2cpu"), psutil_module=fake)
    assert info.total_bytes.value == 16 * 2**30
    assert info.total_bytes.source == Source.PSUTIL
    assert info.available_bytes.value == 12 * 2**30
    assert info.swap_total_bytes.value == 2**30
    assert info.swap_free_bytes.value == 2**29
    assert info.cgroup_limit_bytes.value == 4 * 2**30
    assert info.cgroup_limit_bytes.source == Source.CGROUP


def test_memory_falls_back_to_proc_meminfo() -> None:
    fake = FakePsutil(virtual=psutil.AccessDenied(), swap=OSError("no swap info"))
    info = probe_memory(Roots.under(SYSTEM / "debian-vm"), psutil_module=fake)
    # Recorded: MemTotal 24684084 kB, MemAvailable 24295672 kB, no swap.
    assert info.total_bytes.value == 24684084 * 1024
    assert info.total_bytes.source == Source.PROCFS
    assert info.available_bytes.value == 24295672 * 1024
    assert info.swap_total_bytes.value == 0
    assert info.swap_free_bytes.source == Source.PROCFS
    assert info.cgroup_limit_bytes.reason == "no cgroup filesystem"


def test_memory_unknown_when_everything_fails(tmp_path: Path) -> None:
    fake = FakePsutil(virtual=RuntimeError("broken"), swap=RuntimeError("broken"))
    info = probe_memory(Roots.under(tmp_path), psutil_module=fake)
    assert info.total_bytes.value is None
    assert "psutil.virtual_memory() failed: broken" in (info.total_bytes.reason or "")
    assert "no /proc/meminfo" in (info.total_bytes.reason or "")
    assert info.swap_free_bytes.value is None
    json.loads(info.model_dump_json())


def test_memory_limits_v1_and_unlimited() -> None:
    fake = FakePsutil(virtual=VirtualMemory(8 * 2**30, 2**30), swap=Swap(0, 0))
    v1 = probe_memory(Roots.under(FIXTURES / "cgroup" / "v1-quota"), psutil_module=fake)
    assert v1.cgroup_limit_bytes.value == 2 * 2**30
    unlimited = probe_memory(Roots.under(FIXTURES / "cgroup" / "v2-max"), psutil_module=fake)
    assert unlimited.cgroup_limit_bytes.value is None
    assert unlimited.cgroup_limit_bytes.reason == "no memory limit (memory.max = max)"


def test_parse_meminfo() -> None:
    values = parse_meminfo("MemTotal:  100 kB\nHugePages_Total:   4\nBad line\nX: y kB\n")
    assert values == {"MemTotal": 102400, "HugePages_Total": 4}


def test_live_memory_is_plausible() -> None:
    info = probe_memory()
    assert info.total_bytes.value and info.total_bytes.value > 0
    assert info.available_bytes.value is not None
    assert info.available_bytes.value <= info.total_bytes.value


# --------------------------------------------------------------------------------------------
# Storage


def test_storage_at_a_folder_not_yet_created(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "2026" / "run-1"
    info = probe_storage(target)
    assert info.path.value == str(target)
    assert f"measured at existing parent {tmp_path}" == info.path.reason
    usage = shutil.disk_usage(tmp_path)
    assert info.total_bytes.value == usage.total
    assert info.free_bytes.value is not None and info.free_bytes.value > 0
    assert not target.exists()  # probing creates nothing


def test_storage_at_an_existing_folder(tmp_path: Path) -> None:
    info = probe_storage(tmp_path)
    assert info.path.value == str(tmp_path)
    assert info.path.reason is None
    assert info.free_bytes.source == Source.OS


def test_storage_error_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(path: Any) -> Any:
        raise PermissionError("denied")

    monkeypatch.setattr(shutil, "disk_usage", fail)
    info = probe_storage(tmp_path)
    assert info.free_bytes.value is None
    assert "denied" in (info.free_bytes.reason or "")


# --------------------------------------------------------------------------------------------
# Platform


def platform_of(name: str, env: dict[str, str] | None = None, system: str = "Linux") -> Any:
    return probe_platform(Roots.under(SYSTEM / name), env=env or {}, system=system)


def test_plain_linux_vm() -> None:
    info = platform_of("debian-vm")
    assert info.os.value == "Linux"
    assert info.distribution.value == "Debian GNU/Linux 12 (bookworm)"
    assert info.container.value == "none"
    assert info.wsl.value is False
    assert info.wsl.source == Source.PROCFS
    assert info.rosetta.value is False
    assert info.rosetta.source == Source.PLATFORM
    assert info.visibility_env == {}
    assert info.python_version.value
    assert info.kernel.value


@pytest.mark.parametrize(
    ("name", "env", "expected"),
    [
        ("podman", {}, "podman"),
        ("docker-cgroup-v1", {}, "docker"),
        ("kubernetes-cgroup-v1", {}, "kubernetes"),
        ("debian-vm", {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes"),
        ("debian-vm", {"container": "lxc"}, "lxc"),
        ("debian-vm", {"container": "podman"}, "none"),
    ],
)
def test_container_detection(name: str, env: dict[str, str], expected: str) -> None:
    assert platform_of(name, env).container.value == expected


def test_dockerenv_marker(tmp_path: Path) -> None:
    roots = write_tree(tmp_path, {".dockerenv": "", "proc/1/cgroup": "0::/\n"})
    assert probe_platform(roots, env={}, system="Linux").container.value == "docker"


def test_wsl_detection() -> None:
    wsl = platform_of("wsl2")
    assert wsl.wsl.value is True
    assert wsl.distribution.value == "Ubuntu 22.04.4 LTS"
    by_env = platform_of("debian-vm", {"WSL_DISTRO_NAME": "Ubuntu"})
    assert by_env.wsl.value is True
    assert by_env.wsl.source == Source.ENV


def test_visibility_env_keeps_only_set_variables_even_empty() -> None:
    env = {
        "CUDA_VISIBLE_DEVICES": "",
        "HIP_VISIBLE_DEVICES": "0,1",
        "ONEAPI_DEVICE_SELECTOR": "level_zero:0",
        "PATH": "/usr/bin",
    }
    info = platform_of("debian-vm", env)
    assert info.visibility_env == {
        "CUDA_VISIBLE_DEVICES": "",
        "HIP_VISIBLE_DEVICES": "0,1",
        "ONEAPI_DEVICE_SELECTOR": "level_zero:0",
    }


def test_nvidia_device_nodes(tmp_path: Path) -> None:
    roots = write_tree(
        tmp_path,
        {
            "dev/nvidiactl": "",
            "dev/nvidia0": "",
            "dev/nvidia-uvm": "",
            "dev/null": "",
            "dev/sda": "",
        },
    )
    info = probe_platform(roots, env={}, system="Linux")
    assert info.nvidia_device_nodes.value == ["nvidia-uvm", "nvidia0", "nvidiactl"]
    assert info.nvidia_device_nodes.source == Source.DEVFS
    no_dev = probe_platform(Roots.under(tmp_path / "nothing"), env={}, system="Linux")
    assert no_dev.nvidia_device_nodes.value is None
    assert no_dev.nvidia_device_nodes.reason


def make_pci_device(
    base: Path, bus_id: str, vendor: str, device: str, klass: str, driver: str | None
) -> None:
    devices = base / "sys" / "bus" / "pci" / "devices"
    drivers = base / "sys" / "bus" / "pci" / "drivers"
    entry = devices / bus_id
    entry.mkdir(parents=True)
    (entry / "vendor").write_text(vendor + "\n")
    (entry / "device").write_text(device + "\n")
    (entry / "class").write_text(klass + "\n")
    if driver:
        (drivers / driver).mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(drivers / driver, entry), entry / "driver")


def test_pci_display_devices(tmp_path: Path) -> None:
    make_pci_device(tmp_path, "0000:00:02.0", "0x8086", "0x46a6", "0x030000", "i915")
    make_pci_device(tmp_path, "0000:01:00.0", "0x10de", "0x2684", "0x030000", "nvidia")
    make_pci_device(tmp_path, "0000:01:00.1", "0x10de", "0x22ba", "0x040300", "snd_hda_intel")
    make_pci_device(tmp_path, "0000:03:00.0", "0x1002", "0x74a1", "0x120000", None)
    make_pci_device(tmp_path, "0000:00:04.0", "0x1234", "0x1111", "0x030000", "bochs-drm")
    make_pci_device(tmp_path, "0000:00:05.0", "0x1af4", "0x1050", "0x038000", "virtio-pci")
    info = probe_platform(Roots.under(tmp_path), env={}, system="Linux")
    devices = {d.bus_id: d for d in info.pci_display_devices}
    assert sorted(devices) == [
        "0000:00:02.0",
        "0000:00:04.0",
        "0000:00:05.0",
        "0000:01:00.0",
        "0000:03:00.0",
    ]  # the HDMI audio function is not a display device
    nvidia = devices["0000:01:00.0"]
    assert (nvidia.vendor, nvidia.vendor_id, nvidia.device_id) == ("nvidia", "0x10de", "0x2684")
    assert nvidia.driver == "nvidia"
    assert nvidia.class_id == "0x030000"
    assert devices["0000:00:02.0"].vendor == "intel"
    amd = devices["0000:03:00.0"]
    assert (amd.vendor, amd.driver, amd.class_id) == ("amd", None, "0x120000")
    assert devices["0000:00:04.0"].vendor == "0x1234"
    assert devices["0000:00:05.0"].vendor == "0x1af4"


def test_non_linux_platform(tmp_path: Path) -> None:
    info = probe_platform(Roots.under(tmp_path), env={}, system="Windows")
    assert info.os.value == "Windows"
    assert info.container.value == "none"
    assert info.wsl.value is False
    assert info.rosetta.value is False
    assert info.nvidia_device_nodes.value is None
    assert info.pci_display_devices == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"sysctl.proc_translated": "1", "hw.optional.arm64": "1"}, True),
        ({"sysctl.proc_translated": "0", "hw.optional.arm64": "1"}, False),
        ({"hw.optional.arm64": "0"}, False),  # Intel Mac: the name does not exist
        ({}, None),  # sysctl missing or timed out
    ],
)
def test_rosetta_on_darwin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: dict[str, str], expected: bool | None
) -> None:
    monkeypatch.setattr(system_module, "read_sysctl", lambda *names, **kw: answer)
    info = probe_platform(Roots.under(tmp_path), env={}, system="Darwin")
    assert info.rosetta.value is expected
    assert info.rosetta.source == Source.SYSCTL
    assert info.wsl.value is False


def test_live_platform_does_not_raise() -> None:
    info = probe_platform()
    assert info.python_implementation.value
    json.loads(info.model_dump_json())


# --------------------------------------------------------------------------------------------
# Host


def test_machine_id_is_hashed() -> None:
    info = probe_host(Roots.under(SYSTEM / "debian-vm"))
    digest = hashlib.sha256(b"0123456789abcdef0123456789abcdef").hexdigest()[:16]
    assert info.machine_id.value == f"sha256:{digest}"
    assert "0123456789abcdef0123456789abcdef" not in info.machine_id.value  # never the raw id
    assert info.hostname.value == socket.gethostname()


def test_machine_id_from_dbus_or_none(tmp_path: Path) -> None:
    dbus = probe_host(Roots.under(SYSTEM / "dbus-machine-id"))
    expected = hashlib.sha256(b"fedcba9876543210fedcba9876543210").hexdigest()[:16]
    assert dbus.machine_id.value == f"sha256:{expected}"
    nothing = probe_host(Roots.under(tmp_path))
    assert nothing.machine_id.value is None
    assert "machine-id" in (nothing.machine_id.reason or "")


def test_hostname_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def fail() -> str:
        raise OSError("no name")

    monkeypatch.setattr(socket, "gethostname", fail)
    info = probe_host(Roots.under(tmp_path))
    assert info.hostname.value is None
    assert "no name" in (info.hostname.reason or "")
