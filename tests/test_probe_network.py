"""The network probe on recorded sysfs trees: an InfiniBand NDR GPU server with a RoCE port and
a 25 GbE NIC, a Wi-Fi laptop, a container's namespace; and every way a read can fail."""

from __future__ import annotations

import errno
import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from hwadvisor.model.facts import Source
from hwadvisor.model.profile import (
    NetInterface,
    NetworkInfo,
    ProbeStatus,
    Profile,
    RdmaPort,
    ToolInfo,
)
from hwadvisor.pipeline import ScanOptions, is_degraded, run_scan
from hwadvisor.probes import network
from hwadvisor.probes.network import parse_port_state, parse_rate, probe_network
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.sysfs import read_attribute
from hwadvisor.render.console import render_summary
from hwadvisor.render.html import render_html
from hwadvisor.render.summaries import network_line
from tests.helpers import sysfs_tree

IB_ADDRESS = "00:00:10:49:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:4b:7e:12"


def scan(name: str, tmp_path: Path) -> NetworkInfo:
    tree = sysfs_tree.build(name, tmp_path)
    return probe_network(Roots.under(tree), system="Linux", read=sysfs_tree.reader(name, tree))


def by_name(info: NetworkInfo) -> dict[str, NetInterface]:
    return {nic.name: nic for nic in info.interfaces}


def ports(info: NetworkInfo) -> dict[str, RdmaPort]:
    return {f"{p.device}/{p.port}": p for p in info.rdma}


# --------------------------------------------------------------------------------------------
# A GPU server


def test_server_interfaces_virtual_ones_left_out(tmp_path: Path) -> None:
    info = scan("net-ndr-server", tmp_path)
    # lo, docker0 and the veth resolve under devices/virtual.
    assert sorted(by_name(info)) == ["eno1", "eno2", "ens1f0np0", "ens2f0", "ibp59s0", "ibp94s0"]
    assert info.reason is None


def test_server_25_gbe_nic(tmp_path: Path) -> None:
    nic = by_name(scan("net-ndr-server", tmp_path))["ens2f0"]
    assert nic.kind == "ethernet"
    assert (nic.state.value, nic.speed_mbps.value, nic.mtu.value) == ("up", 25000, 9000)
    assert (nic.driver.value, nic.mac.value) == ("ice", "b4:96:91:c2:4e:10")
    assert all(
        f.source == Source.SYSFS for f in (nic.state, nic.speed_mbps, nic.mtu, nic.driver, nic.mac)
    )


def test_server_down_links(tmp_path: Path) -> None:
    nics = by_name(scan("net-ndr-server", tmp_path))
    # Cable out: the driver says -1.
    assert nics["eno1"].state.value == "down"
    assert nics["eno1"].speed_mbps.value is None
    assert nics["eno1"].speed_mbps.reason == "no link speed: the link is down"
    # Not running: the kernel refuses the read (EINVAL).
    assert nics["eno2"].speed_mbps.value is None
    assert nics["eno2"].speed_mbps.reason == "no link speed: the link is down"
    # The rest of a down interface is still read.
    assert (nics["eno2"].driver.value, nics["eno2"].mtu.value) == ("igb", 1500)


def test_server_ipoib_interfaces(tmp_path: Path) -> None:
    nic = by_name(scan("net-ndr-server", tmp_path))["ibp59s0"]
    assert nic.kind == "infiniband"
    assert nic.mac.value == IB_ADDRESS  # the 20-byte IPoIB hardware address
    assert (nic.speed_mbps.value, nic.mtu.value, nic.driver.value) == (400000, 4092, "mlx5_core")


def test_server_infiniband_ndr_ports(tmp_path: Path) -> None:
    found = ports(scan("net-ndr-server", tmp_path))
    assert sorted(found) == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1"]
    for name, netdev in (("mlx5_0/1", "ibp59s0"), ("mlx5_1/1", "ibp94s0")):
        port = found[name]
        assert port.link_layer.value == "InfiniBand"
        assert port.rate_gbps.value == 400.0
        assert port.state.value == "active"
        assert port.netdev.value == netdev


def test_server_roce_port(tmp_path: Path) -> None:
    port = ports(scan("net-ndr-server", tmp_path))["mlx5_2/1"]
    assert port.link_layer.value == "Ethernet"  # RoCE
    assert (port.rate_gbps.value, port.state.value) == (200.0, "active")
    assert port.netdev.value == "ens1f0np0"


def test_server_summary_names_the_fabric(tmp_path: Path) -> None:
    line = network_line(scan("net-ndr-server", tmp_path))
    # The IPoIB and RoCE interfaces are the RDMA ports' own links: counted once, as ports.
    assert line == "InfiniBand 2× 400 Gb/s; RoCE 200 Gb/s; Ethernet 25 Gb/s; 2 Ethernet links down"


# --------------------------------------------------------------------------------------------
# A laptop and a container


def test_laptop_wireless(tmp_path: Path) -> None:
    info = scan("net-laptop-wifi", tmp_path)
    nics = by_name(info)
    assert sorted(nics) == ["enx00e04c680a3b", "wlp0s20f3"]
    wifi = nics["wlp0s20f3"]
    assert wifi.kind == "wireless"
    assert (wifi.state.value, wifi.driver.value) == ("up", "iwlwifi")
    # Wi-Fi has no ethtool speed: the kernel answers EINVAL even though the link is up.
    assert wifi.speed_mbps.value is None
    assert wifi.speed_mbps.reason == "no link speed: the link is up"
    usb = nics["enx00e04c680a3b"]
    assert (usb.kind, usb.state.value, usb.driver.value) == ("ethernet", "down", "r8152")
    assert info.rdma == []
    assert network_line(info) == "wireless; 1 Ethernet link down"


def test_wireless_known_by_uevent_alone(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-laptop-wifi", tmp_path)
    (tree / "sys/devices/pci0000:00/0000:00:14.3/net/wlp0s20f3/phy80211").unlink()
    info = probe_network(Roots.under(tree), system="Linux")
    assert by_name(info)["wlp0s20f3"].kind == "wireless"


def test_container_sees_only_virtual_interfaces(tmp_path: Path) -> None:
    info = scan("net-container", tmp_path)
    assert info.interfaces == [] and info.rdma == []
    assert info.reason is not None and "only virtual interfaces" in info.reason


# --------------------------------------------------------------------------------------------
# Failures, one at a time


def test_no_sysfs(tmp_path: Path) -> None:
    info = probe_network(Roots.under(tmp_path), system="Linux")
    assert info.interfaces == [] and info.rdma == []
    assert info.reason == "no /sys/class/net (sysfs not mounted)"


def test_not_linux() -> None:
    info = probe_network(system="Darwin")
    assert info.interfaces == []
    assert info.reason == "network interfaces are read on Linux only, not on Darwin"


def test_unreadable_attributes_each_keep_their_reason(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)

    def broken(path: Path) -> str:
        if path.parent.name == "ens2f0" and path.name == "mtu":
            raise OSError(errno.EIO, "Input/output error", str(path))
        if path.parent.name == "ens2f0" and path.name == "address":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        if path.name == "rate" and path.parent.parent.parent.name == "mlx5_0":
            raise FileNotFoundError(errno.ENOENT, "No such file", str(path))
        return read_attribute(path)

    info = probe_network(Roots.under(tree), system="Linux", read=broken)
    nic = by_name(info)["ens2f0"]
    assert nic.mtu.reason == "/sys/class/net/ens2f0/mtu unreadable: Input/output error"
    assert nic.mac.reason == "readable by root only"
    assert nic.speed_mbps.value == 25000  # the other attributes are read
    port = ports(info)["mlx5_0/1"]
    assert port.rate_gbps.reason == "no /sys/class/infiniband/mlx5_0/ports/1/rate"
    assert port.state.value == "active" and port.link_layer.value == "InfiniBand"


def test_garbage_values(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)
    base = tree / "sys/devices/pci0000:16/0000:16:02.0/0000:18:00.0/net/ens2f0"
    (base / "speed").write_text("fast\n")
    (base / "mtu").write_text("\n")
    hca = tree / "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1"
    (hca / "rate").write_text("unknown\n")
    (hca / "state").write_text("ACTIVE\n")
    info = probe_network(Roots.under(tree), system="Linux")
    nic = by_name(info)["ens2f0"]
    assert nic.speed_mbps.reason == "/sys/class/net/ens2f0/speed is not a number: 'fast'"
    assert nic.mtu.reason == "/sys/class/net/ens2f0/mtu is not a number: ''"
    port = ports(info)["mlx5_0/1"]
    assert port.rate_gbps.reason == (
        "/sys/class/infiniband/mlx5_0/ports/1/rate unrecognised: 'unknown'"
    )
    assert port.state.reason == "/sys/class/infiniband/mlx5_0/ports/1/state unrecognised: 'ACTIVE'"


def test_down_port_has_no_rate(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)
    hca = tree / "sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_1/ports/1"
    (hca / "state").write_text("1: DOWN\n")
    (hca / "rate").write_text("10 Gb/sec (4X SDR)\n")  # what an unlinked port reports
    info = probe_network(Roots.under(tree), system="Linux")
    port = ports(info)["mlx5_1/1"]
    assert port.state.value == "down"
    assert port.rate_gbps.value is None
    assert port.rate_gbps.reason == "the port is down: no link, no rate"
    assert network_line(info) == (
        "InfiniBand 400 Gb/s; RoCE 200 Gb/s; Ethernet 25 Gb/s; 2 Ethernet links, "
        "1 InfiniBand port down"
    )


def test_rdma_device_without_a_netdev(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)
    net = tree / "sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/net"
    (tree / "sys/class/net/ibp94s0").unlink()
    for item in sorted(net.rglob("*"), reverse=True):
        item.unlink() if item.is_file() or item.is_symlink() else item.rmdir()
    net.rmdir()
    port = ports(probe_network(Roots.under(tree), system="Linux"))["mlx5_1/1"]
    assert port.netdev.value is None
    assert port.netdev.reason == "no network interface in /sys/class/infiniband/mlx5_1/device/net"


def test_two_ports_on_one_function_matched_by_dev_port(tmp_path: Path) -> None:
    """ConnectX-3 (mlx4): one PCI function, two ports, two netdevs numbered by dev_port."""
    pci = tmp_path / "sys/devices/pci0000:00/0000:00:03.0/0000:04:00.0"
    hca = pci / "infiniband/mlx4_0"
    for port, state in ((1, "4: ACTIVE"), (2, "1: DOWN")):
        (hca / "ports" / str(port)).mkdir(parents=True)
        (hca / "ports" / str(port) / "link_layer").write_text("InfiniBand\n")
        (hca / "ports" / str(port) / "rate").write_text("56 Gb/sec (4X FDR)\n")
        (hca / "ports" / str(port) / "state").write_text(f"{state}\n")
    for name, dev_port in (("ib0", 0), ("ib1", 1)):
        (pci / "net" / name).mkdir(parents=True)
        (pci / "net" / name / "dev_port").write_text(f"{dev_port}\n")
    (tmp_path / "sys/class/infiniband").mkdir(parents=True)
    os.symlink(
        "../../devices/pci0000:00/0000:00:03.0/0000:04:00.0/infiniband/mlx4_0",
        tmp_path / "sys/class/infiniband/mlx4_0",
    )
    os.symlink("../../../0000:04:00.0", hca / "device")
    found = ports(probe_network(Roots.under(tmp_path), system="Linux"))
    assert found["mlx4_0/1"].netdev.value == "ib0"
    assert found["mlx4_0/2"].netdev.value == "ib1"
    assert (found["mlx4_0/1"].rate_gbps.value, found["mlx4_0/2"].rate_gbps.value) == (56.0, None)


def test_soft_roce_is_left_out(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-container", tmp_path)
    rxe = tree / "sys/devices/virtual/infiniband/rxe0/ports/1"
    rxe.mkdir(parents=True)
    (rxe / "link_layer").write_text("Ethernet\n")
    (tree / "sys/class/infiniband").mkdir(parents=True)
    os.symlink("../../devices/virtual/infiniband/rxe0", tree / "sys/class/infiniband/rxe0")
    assert probe_network(Roots.under(tree), system="Linux").rdma == []


def test_many_entries_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "MAX_INTERFACES", 2)
    info = scan("net-ndr-server", tmp_path)
    assert [nic.name for nic in info.interfaces] == ["eno1", "eno2"]
    assert info.reason == "more than 2 interfaces: the first are listed"


def test_a_fifo_as_an_attribute_does_not_hang(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)
    speed = tree / "sys/devices/pci0000:16/0000:16:02.0/0000:18:00.0/net/ens2f0/speed"
    speed.unlink()
    os.mkfifo(speed)
    nic = by_name(probe_network(Roots.under(tree), system="Linux"))["ens2f0"]
    assert nic.speed_mbps.reason == "/sys/class/net/ens2f0/speed unreadable: not a regular file"


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("400 Gb/sec (4X NDR)", 400.0),
        ("200 Gb/sec (4X HDR)", 200.0),
        ("100 Gb/sec (2X HDR)", 100.0),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("56 Gb/sec (4X FDR)", 56.0),
        ("", None),
        ("fast", None),
    ],
)
def test_parse_rate(text: str, rate: float | None) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    ("text", "state"),
    [("4: ACTIVE", "active"), ("1: DOWN", "down"), ("2: INIT", "init"), ("ACTIVE", None)],
)
def test_parse_port_state(text: str, state: str | None) -> None:
    assert parse_port_state(text) == state


def test_this_machine_never_raises() -> None:
    info = probe_network()
    for nic in info.interfaces:
        assert nic.kind in ("ethernet", "infiniband", "wireless", "other")
        for f in (nic.state, nic.speed_mbps, nic.mtu, nic.driver, nic.mac):
            assert f.value is not None or f.reason


# --------------------------------------------------------------------------------------------
# What the reports show


def _profile_with(info: NetworkInfo) -> Profile:
    return Profile(tool=ToolInfo(version="0"), created_utc="2026-11-21T10:00:00Z", network=info)


def test_terminal_summary_has_a_network_line(tmp_path: Path) -> None:
    out = io.StringIO()
    profile = _profile_with(scan("net-ndr-server", tmp_path))
    render_summary(profile, Console(file=out, width=200, color_system=None))
    line = next(row for row in out.getvalue().splitlines() if row.strip().startswith("network"))
    assert "InfiniBand 2× 400 Gb/s; RoCE 200 Gb/s; Ethernet 25 Gb/s" in line


def test_terminal_summary_says_why_there_is_no_network_line(tmp_path: Path) -> None:
    out = io.StringIO()
    render_summary(
        _profile_with(scan("net-container", tmp_path)),
        Console(file=out, width=300, color_system=None),
    )
    line = next(row for row in out.getvalue().splitlines() if row.strip().startswith("network"))
    assert "unknown (only virtual interfaces are visible" in line


def test_html_report_has_a_network_row(tmp_path: Path) -> None:
    html = render_html(_profile_with(scan("net-ndr-server", tmp_path)), source_sha256="0" * 64)
    assert (
        "<tr><th>network</th><td>InfiniBand 2× 400 Gb/s; RoCE 200 Gb/s; Ethernet 25 Gb/s; "
        "2 Ethernet links down</td></tr>"
    ) in html
    old = render_html(_profile_with(NetworkInfo()), source_sha256="0" * 64)
    assert "<tr><th>network</th>" not in old  # no row of "unknown": named once instead
    said = [n.split(", ") for n in re.findall(r"Not reported: ([^<]*)\.</p>", old)]
    assert any("network" in names for names in said)


# --------------------------------------------------------------------------------------------
# In the scan


def test_scan_reads_the_network_and_the_board(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-ndr-server", tmp_path)
    dmi_tree = sysfs_tree.build("dmi-supermicro-server", tmp_path)
    (tree / "sys/class/dmi").symlink_to(dmi_tree / "sys/class/dmi", target_is_directory=True)
    options = ScanOptions(out_dir=tmp_path / "out", bench=False, roots=Roots(sys=tree / "sys"))
    profile = run_scan(options)
    runs = {r.name: r for r in profile.diagnostics.probes}
    assert runs["network"].status == ProbeStatus.OK
    assert runs["system"].status == ProbeStatus.OK
    assert [f"{p.device}/{p.port}" for p in profile.network.rdma] == [
        "mlx5_0/1",
        "mlx5_1/1",
        "mlx5_2/1",
    ]
    assert profile.system.product.value == "SYS-421GE-TNRT"
    assert profile.cpu.logical_cores.value is not None  # the rest of the scan is intact


def test_scan_in_a_container_marks_the_network_probe_partial(tmp_path: Path) -> None:
    tree = sysfs_tree.build("net-container", tmp_path)
    options = ScanOptions(out_dir=tmp_path / "out", bench=False, roots=Roots(sys=tree / "sys"))
    run = {r.name: r for r in run_scan(options).diagnostics.probes}["network"]
    assert run.status == ProbeStatus.PARTIAL
    assert run.message is not None and "only virtual interfaces" in run.message


@pytest.mark.parametrize(("module", "name"), [("network", "probe_network"), ("dmi", "probe_dmi")])
def test_a_broken_probe_is_recorded_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, name: str
) -> None:
    import importlib

    def broken(*_a: object, **_k: object) -> None:
        raise ValueError("sysfs exploded")

    monkeypatch.setattr(importlib.import_module(f"hwadvisor.probes.{module}"), name, broken)
    profile = run_scan(ScanOptions(out_dir=tmp_path, bench=False))
    section = "network" if module == "network" else "system"
    run = {r.name: r for r in profile.diagnostics.probes}[section]
    assert run.status == ProbeStatus.FAILED and "sysfs exploded" in (run.message or "")
    assert is_degraded(profile)
    if module == "network":
        assert profile.network.interfaces == [] and profile.network.reason == "not probed"
    else:
        assert profile.system.vendor.reason == "not probed"
    assert profile.memory.total_bytes.value is not None
