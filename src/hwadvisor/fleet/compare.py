"""``fleet diff OLD NEW``: what changed across the fleet between two snapshots."""

from __future__ import annotations

from collections import Counter
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
    """The differences, JSON-ready: hosts added and gone, each watched fact that changed on a
    host (with a count per change, e.g. "driver 535.183.01 → 550.90.07: 120 hosts"), GPUs lost,
    findings that appeared or cleared."""
    before, after = _hosts(old), _hosts(new)
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changes: list[dict[str, Any]] = []
    tally: Counter[tuple[str, str, str]] = Counter()
    new_findings: Counter[str] = Counter()
    cleared: Counter[str] = Counter()
    gpus_lost: list[dict[str, Any]] = []
    for key in sorted(set(before) & set(after)):
        a, b = before[key], after[key]
        if a["scan_id"] == b["scan_id"]:
            continue
        for name, words in WATCHED:
            if a[name] != b[name]:
                old_v, new_v = _show(a[name]), _show(b[name])
                tally[(words, old_v, new_v)] += 1
                changes.append(
                    {"host": b["hostname"] or key, "fact": words, "old": old_v, "new": new_v}
                )
        if (a["gpu_count"] or 0) > (b["gpu_count"] or 0):
            gpus_lost.append(
                {"host": b["hostname"] or key, "old": a["gpu_count"], "new": b["gpu_count"]}
            )
        for fid in b["findings"] - a["findings"]:
            new_findings[fid] += 1
        for fid in a["findings"] - b["findings"]:
            cleared[fid] += 1
    return {
        "hosts_before": len(before),
        "hosts_after": len(after),
        "added": [after[k]["hostname"] or k for k in added],
        "gone": [before[k]["hostname"] or k for k in gone],
        "changed_hosts": len({c["host"] for c in changes}),
        "changes_by_kind": [
            {"fact": words, "old": o, "new": n, "hosts": count}
            for (words, o, n), count in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "changes": changes,
        "gpus_lost": gpus_lost,
        "new_findings": [{"id": k, "hosts": v} for k, v in new_findings.most_common()],
        "cleared_findings": [{"id": k, "hosts": v} for k, v in cleared.most_common()],
    }


def _show(value: Any) -> str:
    if value is None:
        return "unknown"
    return str(value)
