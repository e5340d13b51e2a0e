"""``fleet show HOST``: one host's why — its configuration, its findings with their fixes,
whether ``fleet advise`` holds it back and why, whether it is an outlier or stale, when it was
last scanned and from which file."""

from __future__ import annotations

import difflib
import json
import zlib
from datetime import datetime
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.fleet.store import Fleet
from hwadvisor.model.facts import MAX_STRING, visible

#: The host facts shown as its configuration, in this order (columns of the ``hosts`` view).
CONFIGURATION = (
    "os",
    "distribution",
    "kernel",
    "system_vendor",
    "system_product",
    "bios_version",
    "cpu_model",
    "cpu_usable_cpus",
    "cpu_logical_cores",
    "memory_total_bytes",
    "gpu_count",
    "gpu_lost_count",
    "gpu_models",
    "gpu_vram_total_bytes",
    "nvml_status",
    "driver_version",
    "cuda_driver_version",
    "torch_version",
    "torch_gpu_ready",
    "network_fastest_gbps",
    "capability_scenario",
)
_SEVERITY = {"error": 0, "warning": 1, "info": 2}
_GPU_FIELDS = (
    "gpu_index",
    "name",
    "catalog_name",
    "vram_total_bytes",
    "uuid",
    "pci_bus_id",
    "ecc_errors_uncorrected_volatile",
    "xid_errors_recent",
    "lost",
)


def find_host(fleet: Fleet, name: str) -> dict[str, Any]:
    """The ``hosts`` row that ``name`` names: its host name (or short name, before the first
    dot), machine id or host key, case aside. A usage error, with the nearest names, when none
    does or several do."""
    wanted = name.strip().lower()
    rows = fleet.query(
        "SELECT * FROM hosts WHERE lower(hostname) = $1 OR lower(split_part(hostname, '.', 1)) "
        "= $1 OR lower(machine_id) = $1 OR lower(host_key) = $1 ORDER BY hostname, host_key",
        [wanted],
    )
    exact = [r for r in rows if (r.get("hostname") or "").lower() == wanted]
    rows = exact or rows
    if len(rows) == 1:
        return rows[0]
    if rows:
        keys = ", ".join(f"{r.get('hostname')} ({r['host_key']})" for r in rows[:5])
        raise UsageError(
            f"{name!r} names {len(rows)} hosts: {keys}; name one by its machine id or host key"
        )
    names = [r[0] for r in fleet.con.execute("SELECT hostname FROM hosts").fetchall() if r[0]]
    near = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise UsageError(f"no host named {name!r} in the fleet{hint} (fleet export lists them)")


def _findings(fleet: Fleet, scan_id: str) -> list[dict[str, Any]]:
    """The scan's findings with their detail and fix, from the stored profile (the tables keep
    id, severity and title only); errors first."""
    blob = fleet.scalar("SELECT doc FROM scans WHERE scan_id = ?", [scan_id])
    found: list[dict[str, Any]] = []
    try:
        doc = json.loads(zlib.decompress(blob).decode("utf-8", "replace"))
        items = doc.get("findings") if isinstance(doc, dict) else None
    except (zlib.error, TypeError, ValueError, RecursionError):
        items = None
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                # Stored as written: shown only once every active character is made visible.
                found.append(
                    {
                        key: visible(str(item[key])[:MAX_STRING])
                        if item.get(key) is not None
                        else None
                        for key in ("id", "severity", "title", "detail", "fix")
                    }
                )
    else:  # the stored profile cannot be read: what the tables have
        found = fleet.query(
            "SELECT id, severity, title, NULL AS detail, NULL AS fix FROM findings "
            "WHERE scan_id = ?",
            [scan_id],
        )
    return sorted(found, key=lambda f: (_SEVERITY.get(f["severity"] or "", 3), f["id"] or ""))


def host_detail(fleet: Fleet, name: str, now: datetime, stale_days: int) -> dict[str, Any]:
    """Everything ``fleet show`` prints about one host, JSON-ready."""
    from hwadvisor.fleet.advise import _held_back
    from hwadvisor.fleet.queries import outliers

    host = find_host(fleet, name)
    key, scan_id = host["host_key"], host["scan_id"]
    when: datetime | None = host.get("effective_utc")
    age = (now - when).days if when is not None else None
    gpus = fleet.query(
        f"SELECT {', '.join(_GPU_FIELDS)} FROM gpus WHERE scan_id = ? ORDER BY gpu_index",
        [scan_id],
    )
    held = _held_back(fleet, now).get(key, [])
    slow = [o.as_dict() for o in outliers(fleet) if o.host_key == key]
    scans = fleet.scalar("SELECT count(*) FROM host_scans WHERE host_key = ?", [key])
    return {
        "hostname": host.get("hostname"),
        "host_key": key,
        "machine_id": host.get("machine_id"),
        "scan_utc": when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else None,
        "age_days": age,
        "stale": age is not None and age >= stale_days,
        "stale_days": stale_days,
        "clock_note": host.get("clock_note"),
        "duplicate_machine_id": bool(host.get("duplicate_id")),
        "path": host.get("path"),
        "origin": host.get("origin"),
        "tool_version": host.get("tool_version"),
        "scans": scans,
        "configuration": {c: host.get(c) for c in CONFIGURATION if c in host},
        "gpus": gpus,
        "findings": _findings(fleet, scan_id),
        "outliers": slow,
        "advise": {
            "held_back": bool(held),
            "why": held,
            "meaning": (
                "fleet advise never counts this host as meeting a workload until these are "
                "fixed and it is scanned again"
                if held
                else "fleet advise counts this host on its hardware's estimate"
            ),
        },
    }
