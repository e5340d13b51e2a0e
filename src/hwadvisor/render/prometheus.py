"""Profiles as Prometheus metrics: the text exposition format 0.0.4 that node_exporter's textfile
collector reads (``--collector.textfile.directory``).

What is written, and why:

* One ``# HELP`` and one ``# TYPE`` line per metric family, and every sample of a family right
  after them, across all the profiles given (the format requires families to be contiguous).
* Every family is a gauge: a profile is a snapshot. Facts that are strings are *info* metrics
  (format 0.0.4 has no info type): value 1, the strings as labels, as node_exporter's
  ``node_uname_info``.
* Every sample carries ``hostname`` and ``machine_id`` (where known), so several machines'
  profiles in one file stay distinct series. Per-GPU samples carry ``gpu`` (the index) and
  ``UUID`` (NVML's ``GPU-…``), the label names NVIDIA's DCGM exporter uses, so the two join with
  ``on(UUID)``.
* Unknown facts are left out: no sample, or no label; never NaN, never 0. Numbers are finite.
  Label values are escaped (backslash, double quote, newline); strings from a profile are made
  visible first (:func:`hwadvisor.model.facts.visible`), so an escape sequence in a host name is
  text, never a terminal command.
* No sample has a timestamp (the textfile collector refuses them); the time of the scan is the
  gauge ``hwadvisor_scan_timestamp_seconds``.

Adding a family is one entry in :data:`FAMILIES`: its name, help, type and a function from a
profile to its samples (label dict, value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, NamedTuple

from hwadvisor.model.bench import BenchStatus, Measurement
from hwadvisor.model.facts import Fact, visible
from hwadvisor.model.profile import GpuInfo, Profile, Severity

Labels = dict[str, str]
Sample = tuple[Labels, float]
Samples = Callable[[Profile], Iterable[Sample]]


class Family(NamedTuple):
    """One metric family: ``name`` (with the ``hwadvisor_`` prefix), its help line, its type
    and the function that gives a profile's samples (without the host labels, added for all)."""

    name: str
    help: str
    type: str
    samples: Samples


# --------------------------------------------------------------------------------------------
# Values and labels


def number(value: Any) -> float | None:
    """A sample value from a fact or a plain value: bools are 0/1, lists count their items;
    unknown, non-finite or non-numeric values are None (the sample is left out)."""
    if isinstance(value, Fact):
        value = value.value
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        as_float = float(value)
        return as_float if math.isfinite(as_float) else None
    if isinstance(value, (list, tuple)):
        return float(len(value))
    return None


def label_text(value: Any) -> str | None:
    """A label value from a fact or a plain value; None (the label is left out) when unknown
    or empty (Prometheus treats an empty label as an absent one)."""
    if isinstance(value, Fact):
        value = value.value
    if value is None:
        return None
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, tuple)):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, float) and not math.isfinite(value):
        return None
    else:
        text = str(getattr(value, "value", value))  # an Enum's value
    return text or None


def labels(**values: Any) -> Labels:
    """Label names to their values, the unknown ones left out."""
    out: Labels = {}
    for name, value in values.items():
        text = label_text(value)
        if text is not None:
            out[name] = text
    return out


def label_list(value: Any) -> list[str]:
    """The items of a list fact as label values ([] when unknown or not a list)."""
    if isinstance(value, Fact):
        value = value.value
    if not isinstance(value, (list, tuple)):
        return []
    return [text for v in value if (text := label_text(v)) is not None]


# --------------------------------------------------------------------------------------------
# Sample functions


def _one(value: Callable[[Profile], Any]) -> Samples:
    """A machine-wide gauge from one fact of the profile."""

    def samples(p: Profile) -> Iterator[Sample]:
        v = number(value(p))
        if v is not None:
            yield {}, v

    return samples


def _gpu_labels(gpu: GpuInfo) -> Labels:
    return labels(gpu=str(gpu.index), UUID=gpu.uuid)


def _per_gpu(value: Callable[[GpuInfo], Any]) -> Samples:
    """A per-GPU gauge, labelled ``gpu`` and ``UUID``."""

    def samples(p: Profile) -> Iterator[Sample]:
        for gpu in p.gpus:
            v = number(value(gpu))
            if v is not None:
                yield _gpu_labels(gpu), v

    return samples


def _pcie(current: str, maximum: str) -> Samples:
    """A PCIe link figure, current and maximum, as ``state="current"|"max"``."""

    def samples(p: Profile) -> Iterator[Sample]:
        for gpu in p.gpus:
            for state, field in (("current", current), ("max", maximum)):
                v = number(getattr(gpu, field, None))
                if v is not None:
                    yield {**_gpu_labels(gpu), "state": state}, v

    return samples


def _timestamp(p: Profile) -> Iterator[Sample]:
    try:
        when = datetime.fromisoformat(p.created_utc.strip().replace("Z", "+00:00"))
    except ValueError:
        return
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    yield {}, float(int(when.timestamp()))


def _info(p: Profile) -> Iterator[Sample]:
    yield (
        labels(
            version=p.tool.version,
            schema_version=str(p.schema_version),
            origin="import" if p.imported is not None else "scan",
            os=p.platform.os,
            distribution=p.platform.distribution,
            kernel=p.platform.kernel,
            architecture=p.cpu.architecture,
            cpu_vendor=p.cpu.vendor,
            cpu_model=p.cpu.model_name,
            container=p.platform.container,
            hypervisor=p.cpu.hypervisor,
        ),
        1.0,
    )


def _system_info(p: Profile) -> Iterator[Sample]:
    system = getattr(p, "system", None)  # schema 6
    found = labels(
        vendor=getattr(system, "vendor", None),
        product=getattr(system, "product", None),
        bios_vendor=getattr(system, "bios_vendor", None),
        bios_version=getattr(system, "bios_version", None),
        bios_date=getattr(system, "bios_date", None),
    )
    if found:
        yield found, 1.0


def _gpu_fact(name: str) -> Samples:
    """A per-GPU gauge from the GPU fact ``name``, where the profile has it."""
    return _per_gpu(lambda gpu: getattr(gpu, name, None))


def _xid_codes(p: Profile) -> Iterator[Sample]:
    for gpu in p.gpus:
        codes = label_list(getattr(gpu, "xid_errors_recent", None))
        for code in dict.fromkeys(codes):
            yield {**_gpu_labels(gpu), "xid": code}, float(codes.count(code))


def _network(p: Profile, part: str) -> list[Any]:
    found = getattr(getattr(p, "network", None), part, None)
    return list(found) if isinstance(found, list) else []


def _nic_labels(nic: Any) -> Labels:
    return labels(interface=getattr(nic, "name", None))


def _nic_info(p: Profile) -> Iterator[Sample]:
    for nic in _network(p, "interfaces"):
        found = labels(kind=getattr(nic, "kind", None), driver=getattr(nic, "driver", None))
        yield {**_nic_labels(nic), **found}, 1.0


def _nic_speed(p: Profile) -> Iterator[Sample]:
    for nic in _network(p, "interfaces"):
        mbps = number(getattr(nic, "speed_mbps", None))
        if mbps is not None and mbps > 0:  # Linux says -1 (or nothing) for a link that is down
            yield _nic_labels(nic), mbps * 1e6 / 8


def _rdma_labels(port: Any) -> Labels:
    return labels(rdma_device=getattr(port, "device", None), port=getattr(port, "port", None))


def _rdma_info(p: Profile) -> Iterator[Sample]:
    for port in _network(p, "rdma"):
        found = labels(
            link_layer=getattr(port, "link_layer", None),
            state=getattr(port, "state", None),
            netdev=getattr(port, "netdev", None),
        )
        yield {**_rdma_labels(port), **found}, 1.0


def _rdma_rate(p: Profile) -> Iterator[Sample]:
    for port in _network(p, "rdma"):
        gbps = number(getattr(port, "rate_gbps", None))
        if gbps is not None:
            yield _rdma_labels(port), gbps * 1e9 / 8


def _gpu_info(p: Profile) -> Iterator[Sample]:
    for gpu in p.gpus:
        nvidia = gpu.vendor == "nvidia"
        yield (
            {
                **_gpu_labels(gpu),
                **labels(
                    name=gpu.name,
                    pci_bus_id=gpu.pci_bus_id,
                    vendor=gpu.vendor,
                    backend=gpu.backend,
                    architecture=gpu.architecture,
                    compute_capability=gpu.compute_capability,
                    driver_version=p.nvml.driver_version if nvidia else None,
                    cuda_driver_version=p.nvml.cuda_driver_version if nvidia else None,
                    vbios_version=getattr(gpu, "vbios_version", None),  # schema 6
                    catalog_name=gpu.catalog_name,
                    gpu_class=gpu.gpu_class,
                ),
            },
            1.0,
        )


def _bench_labels(p: Profile, m: Measurement) -> Labels:
    uuids = {d.device: d.uuid for d in p.benchmarks.devices} if p.benchmarks else {}
    return labels(
        case=m.case,
        device=m.device,
        precision=m.precision,
        variant=m.variant,
        unit=m.unit,
        UUID=uuids.get(m.device),
    )


def _bench(value: Callable[[Measurement], Any]) -> Samples:
    def samples(p: Profile) -> Iterator[Sample]:
        for m in p.benchmarks.measurements if p.benchmarks else []:
            v = number(value(m))
            if v is not None:
                yield _bench_labels(p, m), v

    return samples


def _best(m: Measurement) -> float | None:
    return m.best if m.status == BenchStatus.OK else None


def _advice(value: Callable[[Any], Any]) -> Samples:
    def samples(p: Profile) -> Iterator[Sample]:
        if p.advice is None:
            return
        v = number(value(p.advice))
        if v is not None:
            yield labels(workload=p.advice.workload.name), v

    return samples


def _finding(p: Profile) -> Iterator[Sample]:
    for f in p.findings:
        yield labels(id=f.id, severity=f.severity), 1.0


def _findings(p: Profile) -> Iterator[Sample]:
    for severity in Severity:
        yield {"severity": severity.value}, float(sum(f.severity == severity for f in p.findings))


def _torch_info(p: Profile) -> Iterator[Sample]:
    t = p.frameworks.torch
    if t.version.value is None:
        return
    yield (
        labels(
            version=t.version,
            build=t.build,
            cuda_runtime_version=t.cuda_runtime_version,
            hip_version=t.hip_version,
            cudnn_version=t.cudnn_version,
            nccl_version=t.nccl_version,
        ),
        1.0,
    )


# --------------------------------------------------------------------------------------------
# The families

G = "gauge"

#: Every family written, in this order. One entry adds one.
FAMILIES: list[Family] = [
    Family(
        "hwadvisor_info",
        "The profile: tool version, schema, OS, kernel and CPU model as labels (always 1).",
        G,
        _info,
    ),
    Family(
        "hwadvisor_scan_timestamp_seconds",
        "When the profile was made (its created_utc), as Unix time.",
        G,
        _timestamp,
    ),
    Family(
        "hwadvisor_system_info",
        "The machine's DMI vendor, product and BIOS version as labels (always 1).",
        G,
        _system_info,
    ),
    Family(
        "hwadvisor_cpu_usable_cpus",
        "CPUs a job here can use: logical cores, CPU affinity and the cgroup quota together.",
        G,
        _one(lambda p: p.cpu.usable_cpus),
    ),
    Family(
        "hwadvisor_cpu_logical_cores", "Logical CPU cores.", G, _one(lambda p: p.cpu.logical_cores)
    ),
    Family(
        "hwadvisor_cpu_physical_cores",
        "Physical CPU cores.",
        G,
        _one(lambda p: p.cpu.physical_cores),
    ),
    Family(
        "hwadvisor_memory_total_bytes",
        "Total system memory in bytes.",
        G,
        _one(lambda p: p.memory.total_bytes),
    ),
    Family(
        "hwadvisor_memory_cgroup_limit_bytes",
        "Memory limit of the container or cgroup in bytes (absent when unlimited).",
        G,
        _one(lambda p: p.memory.cgroup_limit_bytes),
    ),
    Family(
        "hwadvisor_gpu_info",
        "One GPU: name, UUID, PCI bus id, driver, catalog row and class as labels (always 1). "
        "Joins DCGM exporter series on(UUID).",
        G,
        _gpu_info,
    ),
    Family(
        "hwadvisor_gpu_memory_total_bytes",
        "GPU memory in bytes.",
        G,
        _per_gpu(lambda g: g.vram_total_bytes),
    ),
    Family(
        "hwadvisor_gpu_power_limit_watts",
        "GPU power limit in watts.",
        G,
        _per_gpu(lambda g: g.power_limit_watts),
    ),
    Family(
        "hwadvisor_gpu_pcie_link_generation",
        "PCIe generation of the GPU's link: state=current (now) or max (what it can do).",
        G,
        _pcie("pcie_generation", "pcie_generation_max"),
    ),
    Family(
        "hwadvisor_gpu_pcie_link_width",
        "PCIe lanes of the GPU's link: state=current (now) or max (what it can do).",
        G,
        _pcie("pcie_width", "pcie_width_max"),
    ),
    Family(
        "hwadvisor_gpu_ecc_enabled",
        "GPU ECC mode: 1 on, 0 off.",
        G,
        _per_gpu(lambda g: g.ecc_enabled),
    ),
    Family(
        "hwadvisor_gpu_ecc_errors_corrected_volatile",
        "Corrected (single-bit) ECC errors since the driver loaded.",
        G,
        _gpu_fact("ecc_errors_corrected_volatile"),
    ),
    Family(
        "hwadvisor_gpu_ecc_errors_uncorrected_volatile",
        "Uncorrected (double-bit) ECC errors since the driver loaded.",
        G,
        _gpu_fact("ecc_errors_uncorrected_volatile"),
    ),
    Family(
        "hwadvisor_gpu_ecc_errors_uncorrected_aggregate",
        "Uncorrected ECC errors over the GPU's life.",
        G,
        _gpu_fact("ecc_errors_uncorrected_aggregate"),
    ),
    Family(
        "hwadvisor_gpu_retired_pages",
        "GPU memory pages retired for ECC errors (GPUs before Ampere).",
        G,
        _gpu_fact("retired_pages"),
    ),
    Family(
        "hwadvisor_gpu_retired_pages_pending",
        "1 if a memory page waits to be retired at the next GPU reset, else 0.",
        G,
        _gpu_fact("retired_pages_pending"),
    ),
    Family(
        "hwadvisor_gpu_remapped_rows_uncorrectable",
        "GPU memory rows remapped after uncorrectable errors (Ampere and newer).",
        G,
        _gpu_fact("remapped_rows_uncorrectable"),
    ),
    Family(
        "hwadvisor_gpu_remapped_rows_pending",
        "1 if a row remapping waits for the next GPU reset, else 0.",
        G,
        _gpu_fact("remapped_rows_pending"),
    ),
    Family(
        "hwadvisor_gpu_remapped_rows_failed",
        "1 if a row remapping failed (no spare rows left), else 0.",
        G,
        _gpu_fact("remapped_rows_failed"),
    ),
    Family(
        "hwadvisor_gpu_xid_errors_recent",
        "Xid errors the driver logged for the GPU in the kernel log buffer (0: none).",
        G,
        _gpu_fact("xid_errors_recent"),
    ),
    Family(
        "hwadvisor_gpu_xid_error_recent",
        "Xid errors in the kernel log buffer by Xid code (the xid label).",
        G,
        _xid_codes,
    ),
    # The network (schema 6).
    Family(
        "hwadvisor_network_interface_info",
        "A physical network interface: kind (ethernet, infiniband, wireless) and driver as "
        "labels (always 1).",
        G,
        _nic_info,
    ),
    Family(
        "hwadvisor_network_interface_speed_bytes_per_second",
        "Link speed of a network interface in bytes per second (as node_network_speed_bytes).",
        G,
        _nic_speed,
    ),
    Family(
        "hwadvisor_rdma_port_info",
        "An RDMA port (InfiniBand or RoCE): link layer, state and network interface as labels "
        "(always 1).",
        G,
        _rdma_info,
    ),
    Family(
        "hwadvisor_rdma_port_rate_bytes_per_second",
        "Rate of an RDMA port in bytes per second.",
        G,
        _rdma_rate,
    ),
    Family(
        "hwadvisor_torch_info",
        "The PyTorch build: version, build kind and CUDA/ROCm library versions as labels "
        "(always 1).",
        G,
        _torch_info,
    ),
    Family(
        "hwadvisor_torch_cuda_available",
        "Whether torch.cuda.is_available() was true: 1 yes, 0 no.",
        G,
        _one(lambda p: p.frameworks.torch.cuda_available),
    ),
    Family(
        "hwadvisor_benchmark_best",
        "Best block of a benchmark case, in the unit label (GFLOP/s, GB/s, us, samples/s).",
        G,
        _bench(_best),
    ),
    Family(
        "hwadvisor_benchmark_efficiency_ratio",
        "Benchmark best over the device's theoretical peak, as a fraction.",
        G,
        _bench(lambda m: m.efficiency),
    ),
    Family(
        "hwadvisor_benchmark_trusted",
        "1 if the figure stands for the machine (measured, undisturbed, consistent), else 0.",
        G,
        _bench(lambda m: m.trusted),
    ),
    Family(
        "hwadvisor_advice_scenario",
        "Scenario the workload needs: 1 CPU is enough, 2 one GPU, 3 a deep-learning "
        "workstation or cloud GPUs, 4 a multi-GPU cluster.",
        G,
        _advice(lambda a: a.scenario.id),
    ),
    Family(
        "hwadvisor_advice_sufficient",
        "Whether this machine meets the workload's scenario: 1 yes, 0 no.",
        G,
        _advice(lambda a: a.this_machine.sufficient),
    ),
    Family(
        "hwadvisor_finding",
        "A readiness finding (always 1): its id and severity as labels.",
        G,
        _finding,
    ),
    Family(
        "hwadvisor_findings",
        "Readiness findings by severity (0 written too, so alerts can use > 0).",
        G,
        _findings,
    ),
]


# --------------------------------------------------------------------------------------------
# Rendering

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Labels on every sample; a family's own labels of these names give way.
HOST_LABELS = ("hostname", "machine_id")


def identity(p: Profile) -> tuple[str, str]:
    """Which machine a profile is: (hostname, machine id), empty where unknown."""
    return (label_text(p.host.hostname) or "", label_text(p.host.machine_id) or "")


def latest_per_machine(profiles: list[Profile]) -> tuple[list[Profile], list[int]]:
    """The newest profile of each machine (by ``identity``; the later one given wins a tie), in
    the order given, and the indexes of the ones left out: two profiles of one machine would
    write the same series twice, which the textfile collector refuses."""
    newest: dict[tuple[str, str], int] = {}
    for i, p in enumerate(profiles):
        key = identity(p)
        if key not in newest or p.created_utc >= profiles[newest[key]].created_utc:
            newest[key] = i
    kept = sorted(newest.values())
    dropped = [i for i in range(len(profiles)) if i not in set(kept)]
    return [profiles[i] for i in kept], dropped


def escape_label(value: str) -> str:
    """A label value as the exposition format writes it between double quotes."""
    text = _SURROGATE.sub("\ufffd", visible(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A finite sample value: whole numbers without a fraction, others as Python's repr (which
    Prometheus' float parser reads back exactly)."""
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _check_name(name: str, pattern: re.Pattern[str], what: str) -> None:
    if not pattern.match(name) or name.startswith("__"):
        raise ValueError(f"invalid Prometheus {what} name {name!r}")


def _sample_line(name: str, host: Labels, own: Labels, value: float) -> str:
    merged = {**{k: v for k, v in own.items() if k not in HOST_LABELS}, **host}
    ordered = [(k, merged[k]) for k in HOST_LABELS if k in merged]
    ordered += [(k, v) for k, v in merged.items() if k not in HOST_LABELS]
    for key, _ in ordered:
        _check_name(key, _LABEL_NAME, "label")
    body = ",".join(f'{k}="{escape_label(v)}"' for k, v in ordered)
    return f"{name}{{{body}}} {format_value(value)}" if body else f"{name} {format_value(value)}"


def render_prometheus(profiles: list[Profile], families: list[Family] | None = None) -> str:
    """The profiles as one text-format document: each family's HELP and TYPE once, then all its
    samples (profile by profile); families without samples are left out.

    The host labels keep machines' series apart; of several profiles of one machine only the
    newest is written (:func:`latest_per_machine`), and a label set repeated within a profile
    (a hostile profile listing a finding twice) is written once: the textfile collector refuses
    a file with a series twice.
    """
    profiles = latest_per_machine(profiles)[0]
    lines: list[str] = []
    for family in FAMILIES if families is None else families:
        _check_name(family.name, _METRIC_NAME, "metric")
        rows: list[str] = []
        seen: set[str] = set()
        for p in profiles:
            hostname, machine_id = identity(p)
            host = labels(hostname=hostname, machine_id=machine_id)
            for own, value in family.samples(p):
                if not math.isfinite(value):
                    continue
                line = _sample_line(family.name, host, own, value)
                key = line.rsplit(" ", 1)[0]
                if key not in seen:
                    seen.add(key)
                    rows.append(line)
        if rows:
            lines.append(f"# HELP {family.name} {escape_help(family.help)}")
            lines.append(f"# TYPE {family.name} {family.type}")
            lines.extend(rows)
    return "".join(line + "\n" for line in lines)


__all__ = [
    "FAMILIES",
    "Family",
    "latest_per_machine",
    "render_prometheus",
]
