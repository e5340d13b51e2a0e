"""One-line summaries of the system board, the network, a GPU's memory health and a class the
advice weighed, shared by the terminal summary and the HTML report (plain text: each renderer
escapes it its own way)."""

from __future__ import annotations

from typing import TypeVar

from hwadvisor.model.advice import TraceEntry
from hwadvisor.model.profile import GpuInfo, NetworkInfo, SystemInfo
from hwadvisor.units import hours_text

_K = TypeVar("_K")

#: Link groups shown on the network line, fastest first; the rest are counted.
MAX_LINK_GROUPS = 4


def system_line(system: SystemInfo) -> str | None:
    """``Supermicro SYS-421GE-TNRT, BIOS AMI 2.1 (2023-03-15)``; None when nothing is known."""
    board = " ".join(v for v in (system.vendor.value, system.product.value) if v)
    bios_parts = [v for v in (system.bios_vendor.value, system.bios_version.value) if v]
    bios = ""
    if bios_parts:
        bios = "BIOS " + " ".join(bios_parts)
        if system.bios_date.value:
            bios += f" ({system.bios_date.value})"
    text = ", ".join(part for part in (board, bios) if part)
    return text or None


def _gbps(value: float) -> str:
    return f"{value:g} Gb/s"


def network_line(network: NetworkInfo) -> str | None:
    """The fastest links first, InfiniBand and RoCE named: ``InfiniBand 2× 400 Gb/s; RoCE 200
    Gb/s; Ethernet 2× 25 Gb/s``; None when no interface or RDMA port is known."""
    if not network.interfaces and not network.rdma:
        return None
    groups: dict[tuple[str, float], int] = {}
    no_speed: dict[str, int] = {}
    down: dict[str, int] = {}
    rdma_netdevs = set()
    for port in network.rdma:
        kind = "RoCE" if (port.link_layer.value or "").lower() == "ethernet" else "InfiniBand"
        if port.netdev.value:
            rdma_netdevs.add(port.netdev.value)
        if port.state.value == "active" and port.rate_gbps.value:
            _count(groups, (kind, float(port.rate_gbps.value)))
        elif port.state.value == "active":
            _count(no_speed, kind)
        else:
            _count(down, f"{kind} port")
    wireless = 0
    for nic in network.interfaces:
        if nic.name in rdma_netdevs:
            continue  # the RDMA port above is this link
        label = {"ethernet": "Ethernet", "infiniband": "IPoIB"}.get(nic.kind)
        if nic.kind == "wireless":
            wireless += 1
        elif label is None:
            continue
        elif nic.state.value not in (None, "up", "unknown"):
            _count(down, f"{label} link")
        elif nic.speed_mbps.value:
            _count(groups, (label, nic.speed_mbps.value / 1000))
        else:
            _count(no_speed, label)
    ordered = sorted(groups.items(), key=lambda item: (-item[0][1], item[0][0]))
    parts = [
        f"{kind} {count}× {_gbps(rate)}" if count > 1 else f"{kind} {_gbps(rate)}"
        for (kind, rate), count in ordered[:MAX_LINK_GROUPS]
    ]
    if len(ordered) > MAX_LINK_GROUPS:
        parts.append(f"{sum(c for _, c in ordered[MAX_LINK_GROUPS:])} slower")
    parts += [
        f"{kind}{f' {n}×' if n > 1 else ''} (speed not reported)"
        for kind, n in sorted(no_speed.items())
    ]
    if wireless:
        parts.append("wireless" if wireless == 1 else f"{wireless}× wireless")
    if down:
        parts.append(
            ", ".join(f"{n} {what}{'s' if n > 1 else ''}" for what, n in sorted(down.items()))
            + " down"
        )
    return "; ".join(parts) or None


def _count(counts: dict[_K, int], key: _K) -> None:
    counts[key] = counts.get(key, 0) + 1


def gpu_health(gpu: GpuInfo) -> str:
    """VBIOS, ECC errors, retired pages or remapped rows, and Xid errors in a few words."""
    parts = [f"VBIOS {gpu.vbios_version.value or 'unknown'}"]
    if gpu.ecc_enabled.value is False:
        parts.append("ECC off")
    elif gpu.ecc_errors_uncorrected_volatile.value is not None:
        parts.append(f"{gpu.ecc_errors_uncorrected_volatile.value} uncorrected ECC errors")
    if gpu.remapped_rows_uncorrectable.value is not None:
        text = f"{gpu.remapped_rows_uncorrectable.value} rows remapped"
        if gpu.remapped_rows_failed.value:
            text += ", remapping failed"
        elif gpu.remapped_rows_pending.value:
            text += ", reset pending"
        parts.append(text)
    elif gpu.retired_pages.value is not None:
        text = f"{gpu.retired_pages.value} pages retired"
        if gpu.retired_pages_pending.value:
            text += ", reset pending"
        parts.append(text)
    xids = gpu.xid_errors_recent.value
    if xids is not None:
        parts.append(f"Xid {', '.join(str(x) for x in xids)}" if xids else "no Xid errors")
    return "; ".join(parts)


def rule_evidence(t: TraceEntry) -> str:
    """What the engine weighed for one class, in words: "8-core desktop CPU: 95 days, holds it
    (deadline 24 h); 1 of 2 options meet it"."""
    ev = t.evidence
    if "option" not in ev:
        return t.because or "no option of this class"
    hours, fits = ev.get("hours"), ev.get("fits")
    number = isinstance(hours, (int, float)) and not isinstance(hours, bool)
    shown = hours_text(float(hours)) if number else "no estimate"  # type: ignore[arg-type]
    held = "holds it" if fits is True else "does not hold it" if fits is False else "memory unknown"
    return f"{ev['option']}: {shown}, {held}; {t.because}"
