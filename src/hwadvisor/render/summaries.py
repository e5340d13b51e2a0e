"""One-line summaries of the system board, the network and a GPU's memory health, shared by the
terminal summary and the HTML report (plain text: each renderer escapes it its own way)."""

from __future__ import annotations

from typing import Any, TypeVar

from hwadvisor.model.advice import Advice, HardwareEstimate, TraceEntry
from hwadvisor.model.bench import Benchmarks, BenchStatus
from hwadvisor.model.profile import GpuInfo, NetworkInfo, Profile, SystemInfo
from hwadvisor.units import (
    duration_with_range,
    format_rate,
    format_value,
    hours_text,
    human_bytes,
    short_plan,
)

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


# --------------------------------------------------------------------------------------------
# The verdict's figures, shared by the terminal and the reports


def this_machine_estimate(advice: Advice | None) -> HardwareEstimate | None:
    """The this-machine row that decides: the GPUs where there are some, else the CPU."""
    if advice is None:
        return None
    mine = [e for e in advice.estimates if e.origin == "this-machine"]
    for e in mine:
        if e.hardware == advice.this_machine.hardware:
            return e
    return mine[-1] if mine else None


def recommended(advice: Advice | None) -> HardwareEstimate | None:
    """The first rung of the candidate ladder (cheapest first) that meets the scenario."""
    if advice is None:
        return None
    for e in advice.estimates:
        if e.origin != "this-machine" and e.meets_scenario:
            return e
    return None


def recommendation_label(advice: Advice) -> str:
    """What the cheapest class that meets the scenario is to the reader: the hardware to get
    when this machine is not enough; when it is, only the smallest class that would also do (a
    machine that is enough is never told to buy something)."""
    if advice.this_machine.sufficient:
        return "Smallest class that also meets it"
    return "Recommended hardware class"


def recommendation_line(advice: Advice) -> str:
    """ "Recommended hardware class: 24 GB high-end GPU (RTX 4090 class), about 8.3 h
    (5–13.3 h)", or what is needed at scale, or that no class meets it on its own."""
    best = recommended(advice)
    if best is not None:
        return (
            f"{recommendation_label(advice)}: {best.hardware}, about "
            f"{duration_with_range(best.seconds, best.low_seconds, best.high_seconds)}"
        )
    if advice.scale_out is not None:
        return f"Recommended hardware class: a cluster; {advice.scale_out.summary}"
    return (
        f"Recommended hardware class: none of the candidates meets “{advice.scenario.title}” "
        "on its own; see the time to train below"
    )


def scenario_name(scenario_id: int, title: str) -> str:
    """ "scenario 2 of 4 (One reasonable GPU)": never a bare number."""
    return f"scenario {scenario_id} of 4 ({title})"


def best_measurement(
    bench: Benchmarks | None, case: str, cpu: bool, precisions: tuple[str, ...]
) -> Any:
    """The best OK run of ``case`` on the CPU (or on any GPU), in the first precision found."""
    if bench is None:
        return None
    for precision in precisions:
        rows = [
            m
            for m in bench.measurements
            if m.case == case
            and m.precision == precision
            and m.status == BenchStatus.OK
            and m.best is not None
            and (m.device == "cpu") == cpu
        ]
        if rows:
            return max(rows, key=lambda m: m.best or 0.0)
    return None


def key_figures(profile: Profile | None, advice: Advice | None) -> list[tuple[str, str, str]]:
    """The few figures behind a verdict, as (label, value, detail): the CPU's and the best GPU's
    matrix multiply, the GPU's speed-up on a training step, the memory that decides."""
    rows: list[tuple[str, str, str]] = []
    b = profile.benchmarks if profile is not None else None
    cpu = best_measurement(b, "matmul", True, ("fp32",))
    if cpu is not None:
        threads = cpu.threads or (b.threads if b else None)
        busy = "; machine busy" if cpu.disturbances else ""
        detail = f"{threads} thread{'s' if threads != 1 else ''}" if threads else ""
        rows.append(("CPU matrix multiply (fp32)", format_rate(cpu.best, cpu.unit), detail + busy))
    gpu = best_measurement(b, "matmul", False, ("bf16", "fp16", "tf32", "fp32"))
    if gpu is not None:
        eff = f", {gpu.efficiency:.0%} of peak" if gpu.efficiency is not None else ""
        rows.append(
            (
                f"GPU matrix multiply ({gpu.precision})",
                format_rate(gpu.best, gpu.unit),
                gpu.device + eff,
            )
        )
    if b is not None and b.training_speedup:
        t = b.training_speedup[0]
        rows.append(
            (
                "training step, GPU vs CPU",
                f"{t.speedup:.1f}×",
                f"{t.gpu_samples_per_s:,.0f} vs {t.cpu_samples_per_s:,.1f} samples/s",
            )
        )
    here = this_machine_estimate(advice)
    memory = _memory_figure(here) if here is not None else None
    if memory is not None:
        rows.append(memory)
    elif here is None and profile is not None and profile.memory.total_bytes.value is not None:
        rows.append(("system memory", human_bytes(profile.memory.total_bytes.value), "total"))
    return rows


def _memory_figure(here: HardwareEstimate) -> tuple[str, str, str] | None:
    """The training memory that decides, said once: the plan's figures where the plan gives
    them ("fits as given: 30.1 GiB of 38.0 GiB usable per GPU"), else the need at the full batch
    beside the memory there is; None where the verdict's own memory line says it all."""
    plan = here.memory_plan or ""
    if here.fits_memory is False and plan:
        return None  # "does not fit even at batch 1 …: needs …" is among the reasons
    if plan.startswith("fits as given: "):
        return ("training memory", plan.removeprefix("fits as given: "), "fits")
    if here.memory_needed_bytes is None:
        return None
    available = (
        human_bytes(here.memory_available_bytes)
        if here.memory_available_bytes is not None
        else "unknown"
    )
    fits = {True: "fits", False: "does not fit", None: "fit unknown"}[here.fits_memory]
    if here.fits_memory and short_plan(plan):
        fits = f"fits {short_plan(plan)}"
    where = "per GPU" if here.gpus else "of RAM"
    return (
        "training memory at the full batch",
        f"{human_bytes(here.memory_needed_bytes)} needed, {available} {where}",
        fits,
    )


_ROLES = {
    "cpu": "desktop CPU",
    "mid_gpu": "mid-range GPU",
    "single_gpu": "high-end GPU",
    "workstation": "workstation",
    "node": "cloud node",
}


def _role(metric: str) -> str:
    for role, name in _ROLES.items():
        if metric.startswith(role + "_"):
            return name
    return metric.replace("_", " ")


def rule_evidence(t: TraceEntry) -> str:
    """What a rule looked at, in words: "desktop CPU: 74 days (at most 2 h)"."""
    ev = t.evidence
    parts = []
    for key, want in ev.items():
        value: Any
        if key.endswith(("_at_most", "_at_least")):
            metric = key.rsplit("_at_", 1)[0]
            bound = "at most" if key.endswith("_at_most") else "at least"
            value = ev.get(metric)
            if metric.endswith("_hours"):
                shown = "no estimate" if value is None else hours_text(float(value))
                parts.append(f"{_role(metric)}: {shown} ({bound} {hours_text(float(want or 0))})")
            elif metric == "memory_gb":
                shown = "unknown" if value is None else human_bytes(float(value) * 1e9)
                parts.append(
                    f"training memory: {shown} ({bound} {human_bytes(float(want or 0) * 1e9)})"
                )
            else:
                parts.append(f"{metric.replace('_', ' ')}: {value} ({bound} {want})")
        elif key.endswith("_fits"):
            shown = format_value(want)
            parts.append(f"fits a {_role(key)}: {shown}")
        elif key == "workload_kind":
            parts.append(f"workload: {want}")
    return "; ".join(parts) or "always (the last rule)"
