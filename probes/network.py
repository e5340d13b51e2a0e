"""Network interfaces and RDMA ports from sysfs: what decides whether several nodes can train
together (InfiniBand or RoCE at 100-400 Gb/s, or plain Ethernet).

``/sys/class/net/<if>`` gives each interface's type, state, speed, MTU, driver and address;
virtual interfaces (loopback, docker0, veth*, bridges, tun: those under ``devices/virtual``) are
left out. ``/sys/class/infiniband/<dev>/ports/<n>`` gives each RDMA port's link layer
(InfiniBand, or Ethernet for RoCE), rate and state. Everything is small sysfs files read with
:func:`~hwadvisor.probes.sysfs.read_attribute`: quick, bounded, never blocking.
"""

from __future__ import annotations

import errno
import os
import platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import NetInterface, NetworkInfo, RdmaPort

from .roots import Roots
from .sysfs import Reader, is_virtual, link_name, read_attribute, why_unreadable

T = TypeVar("T")

_LIVE_ROOTS = Roots()
SRC = Source.SYSFS

#: More entries than one machine has physical interfaces or RDMA ports: a longer listing is cut.
MAX_INTERFACES = 256
MAX_RDMA_PORTS = 64
#: Class entries looked at (virtual ones included: a host with thousands of veths).
MAX_ENTRIES = 8192

#: ARPHRD_* link types (``/sys/class/net/<if>/type``) and what they are.
_TYPES = {1: "ethernet", 32: "infiniband"}
_LOOPBACK = 772

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec", re.IGNORECASE)
_STATE = re.compile(r"^\s*\d+\s*:\s*([A-Za-z_]+)\s*$")
#: speed values that mean "unknown": -1, and the same read as unsigned by older kernels.
_NO_SPEED = {-1, 0xFFFFFFFF, 0xFFFF}


def probe_network(
    roots: Roots = _LIVE_ROOTS, system: str | None = None, read: Reader = read_attribute
) -> NetworkInfo:
    """The physical network interfaces and the RDMA ports of this machine."""
    system = system or platform.system()
    if system != "Linux":
        return NetworkInfo(reason=f"network interfaces are read on Linux only, not on {system}")
    notes: list[str] = []
    interfaces = _interfaces(roots.sys / "class" / "net", read, notes)
    rdma = _rdma_ports(roots.sys / "class" / "infiniband", read, notes)
    return NetworkInfo(interfaces=interfaces, rdma=rdma, reason="; ".join(notes) or None)


def _entries(folder: Path, notes: list[str], what: str) -> list[Path] | None:
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return None
    except OSError as exc:
        notes.append(f"{what} unreadable: {exc.strerror or exc}")
        return []
    if len(names) > MAX_ENTRIES:
        notes.append(f"{len(names)} entries in {what}: the first {MAX_ENTRIES} were looked at")
        names = names[:MAX_ENTRIES]
    return [folder / name for name in names]


# --------------------------------------------------------------------------------------------
# Interfaces


def _interfaces(base: Path, read: Reader, notes: list[str]) -> list[NetInterface]:
    entries = _entries(base, notes, "/sys/class/net")
    if entries is None:
        notes.append("no /sys/class/net (sysfs not mounted)")
        return []
    found: list[NetInterface] = []
    virtual = 0
    for entry in entries:
        if is_virtual(entry):
            virtual += 1
            continue
        if len(found) == MAX_INTERFACES:
            notes.append(f"more than {MAX_INTERFACES} interfaces: the first are listed")
            break
        interface = _interface(entry, read)
        if interface is not None:
            found.append(interface)
    if not found and virtual:
        notes.append(
            "only virtual interfaces are visible (a container's own network namespace?): "
            "the host's network cards are not shown here"
        )
    return found


def _int_attr(read: Reader, path: Path) -> int | None:
    try:
        return int(read(path), 0)
    except (OSError, ValueError):
        return None


def _kind(entry: Path, read: Reader) -> str | None:
    """ethernet, infiniband, wireless, other; None for loopback."""
    link_type = _int_attr(read, entry / "type")
    if link_type == _LOOPBACK:
        return None
    if (entry / "wireless").exists() or (entry / "phy80211").exists():
        return "wireless"
    try:
        if "DEVTYPE=wlan" in read(entry / "uevent").split():
            return "wireless"
    except OSError:
        pass
    return _TYPES.get(link_type, "other") if link_type is not None else "other"


def _interface(entry: Path, read: Reader) -> NetInterface | None:
    kind = _kind(entry, read)
    if kind is None:
        return None
    state = _text(entry / "operstate", read, f"/sys/class/net/{entry.name}/operstate")
    return NetInterface(
        name=entry.name,
        kind=kind,
        state=state,
        speed_mbps=_speed(entry, read, state),
        mtu=_number(entry / "mtu", read, f"/sys/class/net/{entry.name}/mtu"),
        driver=_driver(entry),
        mac=_mac(entry, read),
    )


def _text(path: Path, read: Reader, what: str) -> Fact[str]:
    try:
        text = read(path)
    except OSError as exc:
        return unknown(why_unreadable(exc, what), SRC)
    return fact(text or None, SRC, f"{what} is empty")


def _number(path: Path, read: Reader, what: str) -> Fact[int]:
    try:
        text = read(path)
    except OSError as exc:
        return unknown(why_unreadable(exc, what), SRC)
    try:
        return fact(int(text), SRC)
    except ValueError:
        return unknown(f"{what} is not a number: {text[:40]!r}", SRC)


def _speed(entry: Path, read: Reader, state: Fact[str]) -> Fact[int]:
    what = f"/sys/class/net/{entry.name}/speed"
    down = state.value is not None and state.value != "up"
    try:
        text = read(entry / "speed")
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            # The kernel refuses to read the speed of a link that is not up.
            return unknown(f"no link speed: the link is {state.value or 'not up'}", SRC)
        return unknown(why_unreadable(exc, what), SRC)
    try:
        speed = int(text)
    except ValueError:
        return unknown(f"{what} is not a number: {text[:40]!r}", SRC)
    if speed in _NO_SPEED or speed <= 0:
        if down:
            return unknown(f"no link speed: the link is {state.value}", SRC)
        return unknown("the driver reports no link speed (-1: a virtual NIC, or no link)", SRC)
    return fact(speed, SRC)


def _driver(entry: Path) -> Fact[str]:
    name = link_name(entry / "device" / "driver")
    if name is None:
        return unknown("no device/driver link (no bound driver)", SRC)
    return fact(name, SRC)


def _mac(entry: Path, read: Reader) -> Fact[str]:
    try:
        text = read(entry / "address").lower()
    except OSError as exc:
        return unknown(why_unreadable(exc, f"/sys/class/net/{entry.name}/address"), SRC)
    if not text or not text.replace(":", "").strip("0"):
        return unknown("no hardware address", SRC)
    return fact(text, SRC)


# --------------------------------------------------------------------------------------------
# RDMA ports


def parse_rate(text: str) -> float | None:
    """``200 Gb/sec (4X HDR)`` → 200.0; None for anything else."""
    match = _RATE.match(text)
    return float(match.group(1)) if match else None


def parse_port_state(text: str) -> str | None:
    """``4: ACTIVE`` → ``active``; None for anything else."""
    match = _STATE.match(text)
    return match.group(1).lower() if match else None


def _rdma_ports(base: Path, read: Reader, notes: list[str]) -> list[RdmaPort]:
    devices = _entries(base, notes, "/sys/class/infiniband")
    if devices is None:
        return []  # no RDMA devices, or no RDMA drivers loaded: nothing to say
    ports: list[RdmaPort] = []
    for device in devices:
        if is_virtual(device):
            continue  # soft-RoCE (rxe) and siw: RDMA over an ordinary NIC, not a fabric
        try:
            numbers = sorted(int(n) for n in os.listdir(device / "ports") if n.isdigit())
        except OSError as exc:
            notes.append(f"{device.name}: ports unreadable ({exc.strerror or exc})")
            continue
        netdevs = _netdevs(device)
        for number in numbers:
            if len(ports) == MAX_RDMA_PORTS:
                notes.append(f"more than {MAX_RDMA_PORTS} RDMA ports: the first are listed")
                return ports
            ports.append(_port(device, number, netdevs, read))
    return ports


def _netdevs(device: Path) -> list[str] | str:
    """The network interfaces of an RDMA device's PCI function, or why there are none."""
    try:
        return sorted(os.listdir(device / "device" / "net"))
    except FileNotFoundError:
        return f"no network interface in /sys/class/infiniband/{device.name}/device/net"
    except OSError as exc:
        return f"{device.name}/device/net unreadable: {exc.strerror or exc}"


def _port(device: Path, number: int, netdevs: list[str] | str, read: Reader) -> RdmaPort:
    port = device / "ports" / str(number)
    where = f"/sys/class/infiniband/{device.name}/ports/{number}"
    link_layer = _text(port / "link_layer", read, f"{where}/link_layer")
    state = _parsed(port / "state", read, f"{where}/state", parse_port_state)
    rate = _parsed(port / "rate", read, f"{where}/rate", parse_rate)
    if state.value == "down" and rate.value is not None:
        rate = unknown("the port is down: no link, no rate", SRC)
    return RdmaPort(
        device=device.name,
        port=number,
        link_layer=link_layer,
        rate_gbps=rate,
        state=state,
        netdev=_port_netdev(device, number, netdevs, read),
    )


def _parsed(path: Path, read: Reader, what: str, parse: Callable[[str], T | None]) -> Fact[T]:
    try:
        text = read(path)
    except OSError as exc:
        return unknown(why_unreadable(exc, what), SRC)
    return fact(parse(text), SRC, f"{what} unrecognised: {text[:60]!r}")


def _port_netdev(device: Path, number: int, netdevs: list[str] | str, read: Reader) -> Fact[str]:
    if isinstance(netdevs, str):
        return unknown(netdevs, SRC)
    if len(netdevs) == 1:
        return fact(netdevs[0], SRC)
    # Several ports on one PCI function (mlx4, ConnectX-3): dev_port numbers them from 0.
    for name in netdevs:
        if _int_attr(read, device / "device" / "net" / name / "dev_port") == number - 1:
            return fact(name, SRC)
    if not netdevs:
        return unknown(f"no network interface for {device.name} port {number}", SRC)
    return unknown(f"none of {', '.join(netdevs)} is numbered as port {number}", SRC)
