"""One profile as flat, null-safe rows: what the fleet database stores.

Read from the profile's JSON document directly, not through the pydantic model: 10,000 profiles
must ingest in seconds, and the model costs ten times the JSON parse. Every value is checked
for its type here instead (a hand-edited or hostile profile gives ``None``, never a wrong type),
and every string is made visible and bounded as the model would.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hwadvisor.model.facts import MAX_STRING, visible
from hwadvisor.model.labels import clean_labels

#: The columns of the ``scans`` table after the identity columns, in order, with their SQL types.
#: Units are in the names; every column may be null (unknown on that host).
HOST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("os", "VARCHAR"),
    ("distribution", "VARCHAR"),
    ("kernel", "VARCHAR"),
    ("container", "VARCHAR"),
    ("virtualized", "BOOLEAN"),
    ("system_vendor", "VARCHAR"),
    ("system_product", "VARCHAR"),
    ("bios_version", "VARCHAR"),
    ("cpu_vendor", "VARCHAR"),
    ("cpu_model", "VARCHAR"),
    ("cpu_architecture", "VARCHAR"),
    ("cpu_sockets", "INTEGER"),
    ("cpu_physical_cores", "INTEGER"),
    ("cpu_logical_cores", "INTEGER"),
    ("cpu_usable_cpus", "INTEGER"),
    ("memory_total_bytes", "BIGINT"),
    ("gpu_count", "INTEGER"),
    ("gpu_lost_count", "INTEGER"),
    ("gpu_models", "VARCHAR"),
    ("gpu_vram_min_bytes", "BIGINT"),
    ("gpu_vram_total_bytes", "BIGINT"),
    ("gpu_class", "VARCHAR"),
    ("gpu_nvlink", "BOOLEAN"),
    ("nvml_status", "VARCHAR"),
    ("driver_version", "VARCHAR"),
    ("cuda_driver_version", "VARCHAR"),
    ("torch_version", "VARCHAR"),
    ("torch_build", "VARCHAR"),
    ("torch_cuda_runtime_version", "VARCHAR"),
    ("torch_gpu_ready", "BOOLEAN"),
    ("network_fastest_gbps", "DOUBLE"),
    ("infiniband_ports", "INTEGER"),
    ("roce_ports", "INTEGER"),
    ("findings_error", "INTEGER"),
    ("findings_warning", "INTEGER"),
    ("findings_info", "INTEGER"),
    ("bench_status", "VARCHAR"),
    ("bench_cpu_matmul_fp32_gflops", "DOUBLE"),
    ("bench_gpu_matmul_best_gflops", "DOUBLE"),
    ("bench_gpu_triad_best_gbs", "DOUBLE"),
    ("bench_disturbed", "BOOLEAN"),
    ("capability_scenario", "INTEGER"),
    ("advice_workload", "VARCHAR"),
    ("advice_scenario", "INTEGER"),
    ("advice_sufficient", "BOOLEAN"),
)

#: What identifies the machine beyond its machine id, and where it stands (its labels): the
#: ``scans`` columns after :data:`HOST_COLUMNS`. ``labels`` is the whole label map as JSON text;
#: ``site``, ``rack`` and ``group`` are the labels of those names.
IDENTITY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system_serial", "VARCHAR"),
    ("site", "VARCHAR"),
    ("rack", "VARCHAR"),
    ("group", "VARCHAR"),
    ("labels", "VARCHAR"),
)

GPU_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gpu_index", "INTEGER"),
    ("name", "VARCHAR"),
    ("catalog_name", "VARCHAR"),
    ("gpu_class", "VARCHAR"),
    ("uuid", "VARCHAR"),
    ("serial", "VARCHAR"),
    ("pci_bus_id", "VARCHAR"),
    ("vram_total_bytes", "BIGINT"),
    ("architecture", "VARCHAR"),
    ("compute_capability", "VARCHAR"),
    ("power_limit_watts", "DOUBLE"),
    ("pcie_generation", "INTEGER"),
    ("pcie_generation_max", "INTEGER"),
    ("pcie_width", "INTEGER"),
    ("pcie_width_max", "INTEGER"),
    ("ecc_enabled", "BOOLEAN"),
    ("vbios_version", "VARCHAR"),
    ("ecc_errors_uncorrected_volatile", "BIGINT"),
    ("retired_pages", "BIGINT"),
    ("remapped_rows_pending", "BOOLEAN"),
    ("xid_errors_recent", "VARCHAR"),
    ("mig_enabled", "BOOLEAN"),
    ("lost", "BOOLEAN"),
)

FINDING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "VARCHAR"),
    ("severity", "VARCHAR"),
    ("title", "VARCHAR"),
)

MEASUREMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("device", "VARCHAR"),
    # The GPU's catalog name (or name), or the CPU model: what "identical" means for outliers.
    ("device_model", "VARCHAR"),
    ("gpu_uuid", "VARCHAR"),
    ("gpu_index", "INTEGER"),
    ("case_name", "VARCHAR"),
    ("precision", "VARCHAR"),
    ("variant", "VARCHAR"),
    ("unit", "VARCHAR"),
    ("higher_is_better", "BOOLEAN"),
    ("best", "DOUBLE"),
    ("efficiency", "DOUBLE"),
    ("threads", "INTEGER"),
    ("trusted", "BOOLEAN"),
)


@dataclass
class Rows:
    """One profile, flattened."""

    machine_id: str | None
    hostname: str | None
    created_utc: datetime | None
    schema_version: int
    tool_version: str | None
    origin: str
    """``scan``, ``import`` (an imported profile saved by hwadvisor) or the format a foreign file
    was imported as (``nvidia-smi -q XML``)."""
    host: dict[str, Any]
    identity: dict[str, Any] = field(default_factory=dict)
    """The :data:`IDENTITY_COLUMNS`."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Typed access to a JSON document that may be anything


def _get(data: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(data, dict):
            if isinstance(key, int):
                return None
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int):
            if key >= len(data):
                return None
            data = data[key]
        else:
            return None
    return data


#: The strings of profiles repeat (units, case names, sources, model names): each is checked
#: once per worker. Bounded: a fleet of unique host names does not grow it past this.
_TEXT_SEEN: dict[str, str] = {}
_TEXT_SEEN_MAX = 50_000


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    known = _TEXT_SEEN.get(value)
    if known is not None:
        return known
    text = value
    if len(text) > MAX_STRING:
        text = text[:MAX_STRING]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a JSON "\ud800" escape
            text = text.encode("utf-8", "replace").decode("utf-8")
    text = visible(text)
    if len(value) <= 256:
        if len(_TEXT_SEEN) >= _TEXT_SEEN_MAX:
            _TEXT_SEEN.clear()
        _TEXT_SEEN[value] = text
    return text


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -(2**63) < value < 2**63 else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _fact(data: Any, *path: str | int) -> Any:
    """The value of the fact at ``path`` (``None`` when unknown or not a fact)."""
    return _get(data, *path, "value")


def parse_utc(value: Any) -> datetime | None:
    """``2026-11-21T10:02:03Z`` (or with an offset) as a naive UTC datetime; ``None`` if not."""
    text = _text(value)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when


#: Host columns that are one fact of the profile as it is: column → (section, field).
_HOST_FACTS: dict[str, tuple[str, str]] = {
    "os": ("platform", "os"),
    "distribution": ("platform", "distribution"),
    "kernel": ("platform", "kernel"),
    "container": ("platform", "container"),
    "virtualized": ("cpu", "virtualized"),
    "system_vendor": ("system", "vendor"),
    "system_product": ("system", "product"),
    "bios_version": ("system", "bios_version"),
    "cpu_vendor": ("cpu", "vendor"),
    "cpu_architecture": ("cpu", "architecture"),
    "cpu_sockets": ("cpu", "sockets"),
    "cpu_physical_cores": ("cpu", "physical_cores"),
    "cpu_logical_cores": ("cpu", "logical_cores"),
    "cpu_usable_cpus": ("cpu", "usable_cpus"),
    "memory_total_bytes": ("memory", "total_bytes"),
    "driver_version": ("nvml", "driver_version"),
    "cuda_driver_version": ("nvml", "cuda_driver_version"),
}
#: GPU columns that are the GPU's fact of the same name.
_GPU_FACTS: tuple[str, ...] = (
    "name",
    "catalog_name",
    "gpu_class",
    "uuid",
    "serial",
    "pci_bus_id",
    "vram_total_bytes",
    "architecture",
    "compute_capability",
    "power_limit_watts",
    "pcie_generation",
    "pcie_generation_max",
    "pcie_width",
    "pcie_width_max",
    "ecc_enabled",
    "vbios_version",
    "retired_pages",
    "remapped_rows_pending",
    "mig_enabled",
    "ecc_errors_uncorrected_volatile",
)
_HOST_KINDS = dict(HOST_COLUMNS)
_GPU_KINDS = dict(GPU_COLUMNS)
_READERS: dict[str, Callable[[Any], Any]] = {
    "VARCHAR": _text,
    "INTEGER": _int,
    "BIGINT": _int,
    "DOUBLE": _float,
    "BOOLEAN": _bool,
}


def _typed(column: str, value: Any, kinds: dict[str, str] = _HOST_KINDS) -> Any:
    """``value`` checked for the SQL type of ``column`` (``None`` when it is not that type)."""
    return _READERS[kinds[column]](value)


# --------------------------------------------------------------------------------------------
# The rows


@functools.lru_cache(maxsize=1024)
def catalog_name(name: str, vram_bytes: int | None) -> str | None:
    """The catalog's name for a GPU a profile names but did not match (profiles older than the
    catalog match, imported files): so that one model is counted under one name fleet-wide.
    The packaged catalog only, never the optional online database: a roll-up must not depend
    on what is installed where it runs."""
    from hwadvisor.catalog.peaks import find_gpu_peak

    found = find_gpu_peak(name, vram_bytes, fallback=False)
    return found.name if found is not None else None


def _gpu_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    gpus = doc.get("gpus")
    for position, gpu in enumerate(gpus if isinstance(gpus, list) else []):
        if not isinstance(gpu, dict):
            continue
        xids = _fact(gpu, "xid_errors_recent")
        index = _int(gpu.get("index"))
        facts = {column: _typed(column, _fact(gpu, column), _GPU_KINDS) for column in _GPU_FACTS}
        if facts["catalog_name"] is None and facts["name"]:
            facts["catalog_name"] = catalog_name(facts["name"], facts["vram_total_bytes"])
        rows.append(
            {
                "gpu_index": position if index is None else index,
                **facts,
                "xid_errors_recent": (
                    ";".join(str(x) for x in xids if _int(x) is not None)
                    if isinstance(xids, list)
                    else None
                ),
                "lost": gpu.get("lost") is True,
            }
        )
    return rows


def _device_map(doc: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Which GPU row each benchmark device (``cuda:N``) measured: by the UUID or bus id the
    benchmarks recorded for it, else by position (older profiles)."""
    out = {f"cuda:{n}": gpu for n, gpu in enumerate(gpus)}
    devices = _get(doc, "benchmarks", "devices")
    for entry in devices if isinstance(devices, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("device"), str):
            continue
        for key in ("uuid", "pci_bus_id"):
            want = _text(entry.get(key))
            match = next((g for g in gpus if want and g.get(key) == want), None)
            if match is not None:
                out[entry["device"]] = match
                break
    return out


def _trusted(m: dict[str, Any], best: float | None) -> bool:
    return (
        m.get("status") == "ok"
        and best is not None
        and not m.get("disturbances")
        and m.get("confidence", "high") == "high"
    )


def _measurement_rows(
    doc: dict[str, Any], gpus: list[dict[str, Any]], cpu_model: str | None
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    measurements = _get(doc, "benchmarks", "measurements")
    if not isinstance(measurements, list) or not measurements:
        return rows
    by_device = _device_map(doc, gpus)
    for m in measurements:
        if not isinstance(m, dict):
            continue
        device = _text(m.get("device"))
        best = _float(m.get("best"))
        if device is None or best is None:
            continue
        gpu = by_device.get(device)
        if device == "cpu":
            model = cpu_model
        else:
            model = (gpu.get("catalog_name") or gpu.get("name")) if gpu else None
        rows.append(
            {
                "device": device,
                "device_model": model,
                "gpu_uuid": gpu.get("uuid") if gpu else None,
                "gpu_index": gpu.get("gpu_index") if gpu else None,
                "case_name": _text(m.get("case")),
                "precision": _text(m.get("precision")),
                "variant": _text(m.get("variant")),
                "unit": _text(m.get("unit")),
                "higher_is_better": m.get("higher_is_better") is not False,
                "best": best,
                "efficiency": _float(m.get("efficiency")),
                "threads": _int(m.get("threads")),
                "trusted": _trusted(m, best),
            }
        )
    return rows


def _models(gpus: list[dict[str, Any]]) -> str | None:
    counts: dict[str, int] = {}
    for gpu in gpus:
        if gpu["lost"]:
            continue
        name = gpu["catalog_name"] or gpu["name"] or "unknown GPU"
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None
    return " + ".join(f"{n}× {name}" if n > 1 else name for name, n in sorted(counts.items()))


_CLASS_ORDER = {"datacenter": 3, "workstation": 2, "consumer": 1}


def _network(doc: dict[str, Any]) -> tuple[float | None, int | None, int | None]:
    """The fastest link in Gb/s, and the active InfiniBand and RoCE ports (``None`` where the
    profile has no network section: older schema or an import)."""
    net = doc.get("network")
    if not isinstance(net, dict):
        return None, None, None
    fastest: float | None = None
    for nic in net.get("interfaces") or []:
        mbps = _float(_fact(nic, "speed_mbps"))
        if mbps is not None and mbps > 0:
            fastest = max(fastest or 0.0, mbps / 1000)
    ib = roce = 0
    for port in net.get("rdma") or []:
        rate = _float(_fact(port, "rate_gbps"))
        state = _text(_fact(port, "state"))
        layer = (_text(_fact(port, "link_layer")) or "").lower()
        if state not in (None, "active"):
            continue
        if layer == "infiniband":
            ib += 1
        elif layer == "ethernet":
            roce += 1
        if rate is not None and rate > 0:
            fastest = max(fastest or 0.0, rate)
    return fastest, ib, roce


def _torch_gpu_ready(doc: dict[str, Any]) -> bool | None:
    torch = _get(doc, "frameworks", "torch")
    if not isinstance(torch, dict) or torch.get("installed") is not True:
        return False if isinstance(torch, dict) and torch.get("installed") is False else None
    return _bool(_fact(torch, "cuda_available"))


def _best(rows: list[dict[str, Any]], case: str, *, gpu: bool) -> float | None:
    values = [
        r["best"]
        for r in rows
        if r["case_name"] == case and r["trusted"] and (r["device"] != "cpu") == gpu
    ]
    return max(values) if values else None


def capability(gpus: list[dict[str, Any]], fastest_gbps: float | None, nvlink: bool) -> int:
    """The largest scenario (1–4) this machine's hardware can serve on its own, whatever the
    workload: 1 no usable GPU (or under 8 GB), 2 one GPU of 8 GB or more, 3 two or more such
    GPUs or one of 40 GB or more, 4 four or more GPUs of 40 GB or more, or two or more GPUs with
    NVLink or a 100 Gb/s+ InfiniBand/RoCE link (a node that can join a cluster)."""
    usable = [g for g in gpus if not g["lost"] and (g["vram_total_bytes"] or 0) >= 8 * 2**30]
    big = [g for g in usable if (g["vram_total_bytes"] or 0) >= 40 * 2**30]
    if len(big) >= 4 or (len(usable) >= 2 and (nvlink or (fastest_gbps or 0) >= 100)):
        return 4
    if len(usable) >= 2 or big:
        return 3
    if usable:
        return 2
    return 1


def flatten(doc: dict[str, Any], origin: str) -> Rows:
    """The rows of one profile document (already checked to be a profile)."""
    gpus = _gpu_rows(doc)
    cpu_model = _text(_fact(doc, "cpu", "model_name"))
    measurements = _measurement_rows(doc, gpus, cpu_model)
    findings = []
    raw_findings = doc.get("findings")
    for f in raw_findings if isinstance(raw_findings, list) else []:
        if isinstance(f, dict) and _text(f.get("id")):
            findings.append(
                {
                    "id": _text(f.get("id")),
                    "severity": _text(f.get("severity")) or "info",
                    "title": _text(f.get("title")),
                }
            )
    severities = [f["severity"] for f in findings]
    fastest, ib, roce = _network(doc)
    links = doc.get("gpu_topology")
    nvlink = any(
        isinstance(link, dict) and link.get("link") == "nvlink"
        for link in (links if isinstance(links, list) else [])
    )
    live = [g for g in gpus if not g["lost"]]
    vrams = [g["vram_total_bytes"] for g in live if g["vram_total_bytes"] is not None]
    classes = [g["gpu_class"] for g in live if g["gpu_class"]]
    bench = doc.get("benchmarks")
    advice = doc.get("advice")
    host = {
        **{column: _typed(column, _fact(doc, *path)) for column, path in _HOST_FACTS.items()},
        "cpu_model": cpu_model,
        "gpu_count": len(live),
        "gpu_lost_count": len(gpus) - len(live),
        "gpu_models": _models(gpus),
        "gpu_vram_min_bytes": min(vrams) if vrams else None,
        "gpu_vram_total_bytes": sum(vrams) if vrams else None,
        "gpu_class": max(classes, key=lambda c: _CLASS_ORDER.get(c, 0)) if classes else None,
        "gpu_nvlink": nvlink if len(live) >= 2 else None,
        "nvml_status": _text(_get(doc, "nvml", "status")),
        "torch_version": _text(_fact(doc, "frameworks", "torch", "version")),
        "torch_build": _text(_fact(doc, "frameworks", "torch", "build")),
        "torch_cuda_runtime_version": _text(
            _fact(doc, "frameworks", "torch", "cuda_runtime_version")
        ),
        "torch_gpu_ready": _torch_gpu_ready(doc),
        "network_fastest_gbps": fastest,
        "infiniband_ports": ib,
        "roce_ports": roce,
        "findings_error": severities.count("error"),
        "findings_warning": severities.count("warning"),
        "findings_info": severities.count("info"),
        "bench_status": _text(bench.get("status")) if isinstance(bench, dict) else None,
        "bench_cpu_matmul_fp32_gflops": next(
            (
                r["best"]
                for r in measurements
                if r["device"] == "cpu"
                and r["case_name"] == "matmul"
                and r["precision"] == "fp32"
                and r["trusted"]
            ),
            None,
        ),
        "bench_gpu_matmul_best_gflops": _best(measurements, "matmul", gpu=True),
        "bench_gpu_triad_best_gbs": _best(measurements, "triad", gpu=True),
        "bench_disturbed": (any(not r["trusted"] for r in measurements) if measurements else None),
        "capability_scenario": capability(gpus, fastest, nvlink),
        "advice_workload": _text(_get(advice, "workload", "name")),
        "advice_scenario": _int(_get(advice, "scenario", "id")),
        "advice_sufficient": _bool(_get(advice, "this_machine", "sufficient")),
    }
    version = _int(doc.get("schema_version")) or 0
    labels = clean_labels(_get(doc, "host", "labels")) or {}
    identity = {
        "system_serial": _text(_fact(doc, "system", "serial")),
        "site": labels.get("site"),
        "rack": labels.get("rack"),
        "group": labels.get("group"),
        "labels": json.dumps(labels, separators=(",", ":")) if labels else None,
    }
    return Rows(
        machine_id=_text(_fact(doc, "host", "machine_id")),
        hostname=_text(_fact(doc, "host", "hostname")),
        created_utc=parse_utc(doc.get("created_utc")),
        schema_version=version,
        tool_version=_text(_get(doc, "tool", "version")),
        origin=origin,
        host=host,
        identity=identity,
        gpus=gpus,
        findings=findings,
        measurements=measurements,
    )
