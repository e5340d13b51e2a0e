"""``fleet diff OLD NEW``: what changed across the fleet between two snapshots."""

from __future__ import annotations

from typing import Any

from hwadvisor.fleet.store import Fleet

#: The host facts compared, with the words a change is reported in.
WATCHED: tuple[tuple[str, str], ...] = (
    ("driver_version", "driver"),
    ("cuda_driver_version", "CUDA (driver)"),
    ("torch_version", "torch"),
    ("gpu_models", "GPUs"),
    ("gpu_count", "GPU count"),
    ("memory_total_bytes", "memory"),
    ("cpu_model", "CPU"),
    ("bios_version", "BIOS"),
    ("kernel", "kernel"),
    ("capability_scenario", "capability"),
)


def _hosts(fleet: Fleet) -> dict[str, dict[str, Any]]:
    cols = ", ".join(name for name, _ in WATCHED)
    rows = fleet.query(f"SELECT host_key, hostname, scan_id, {cols} FROM hosts")
    findings: dict[str, set[str]] = {}
    for r in fleet.query("SELECT h.host_key, f.id FROM hosts h JOIN findings f USING (scan_id)"):
        findings.setdefault(r["host_key"], set()).add(r["id"])
    return {r["host_key"]: {**r, "findings": findings.get(r["host_key"], set())} for r in rows}


def compare(old: Fleet, new: Fleet) -> dict[str, Any]:
    """The differences, JSON-ready: hosts added, gone and changed (by name, every one), each
    watched fact that changed on a host (with the hosts of each change, e.g. "driver
    535.183.01 → 550.90.07: 120 hosts"), GPUs lost, findings that appeared or cleared and on
    which hosts."""
    before, after = _hosts(old), _hosts(new)
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changes: list[dict[str, Any]] = []
    tally: dict[tuple[str, str, str], list[str]] = {}
    new_findings: dict[str, list[str]] = {}
    cleared: dict[str, list[str]] = {}
    gpus_lost: list[dict[str, Any]] = []
    changed: list[str] = []
    for key in sorted(set(before) & set(after)):
        a, b = before[key], after[key]
        if a["scan_id"] == b["scan_id"]:
            continue
        name = b["hostname"] or key
        differs = False
        for column, words in WATCHED:
            if a[column] != b[column]:
                old_v, new_v = _show(a[column]), _show(b[column])
                tally.setdefault((words, old_v, new_v), []).append(name)
                changes.append({"host": name, "fact": words, "old": old_v, "new": new_v})
                differs = True
        if (a["gpu_count"] or 0) > (b["gpu_count"] or 0):
            gpus_lost.append({"host": name, "old": a["gpu_count"], "new": b["gpu_count"]})
        for fid in sorted(b["findings"] - a["findings"]):
            new_findings.setdefault(fid, []).append(name)
            differs = True
        for fid in sorted(a["findings"] - b["findings"]):
            cleared.setdefault(fid, []).append(name)
            differs = True
        if differs:
            changed.append(name)

    def by_count(found: dict[str, list[str]]) -> list[dict[str, Any]]:
        rows = sorted(found.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return [{"id": k, "hosts": len(v), "host_names": sorted(v)} for k, v in rows]

    return {
        "hosts_before": len(before),
        "hosts_after": len(after),
        "added": sorted(after[k]["hostname"] or k for k in added),
        "gone": sorted(before[k]["hostname"] or k for k in gone),
        "changed_hosts": len(changed),
        "changed": sorted(changed),
        "changes_by_kind": [
            {"fact": words, "old": o, "new": n, "hosts": len(names), "host_names": sorted(names)}
            for (words, o, n), names in sorted(tally.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ],
        "changes": changes,
        "gpus_lost": gpus_lost,
        "new_findings": by_count(new_findings),
        "cleared_findings": by_count(cleared),
    }


def _show(value: Any) -> str:
    if value is None:
        return "unknown"
    return str(value)
