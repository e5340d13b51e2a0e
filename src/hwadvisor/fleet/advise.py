"""``fleet advise``: which machines of the fleet can train a workload, ranked by time-to-train.

The advice engine runs once per distinct configuration (CPU model and usable CPUs, memory, GPU
models, count and memory, driver branch), on the member with the median measured figure: hosts
that are the same hardware share one estimate, so 10,000 hosts of 40 configurations cost 40
runs, not 10,000. A host is never said to meet the workload while its latest scan has an error
finding or a GPU health warning (uncorrected ECC errors, pending row remaps, Xid errors), nor
while that scan is stale: it is ranked after the hosts that do, with why. Outliers (a degraded
GPU) are named beside their host, since the shared estimate flatters them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hwadvisor.errors import InputError
from hwadvisor.fleet.queries import STALE_DAYS, outliers
from hwadvisor.fleet.store import Fleet


@dataclass
class Ranked:
    host_key: str
    hostname: str | None
    hardware: str
    seconds: float | None
    low_seconds: float | None
    high_seconds: float | None
    fits_memory: bool | None
    sufficient: bool
    reasons: list[str]
    shared_with: int
    """Hosts of the same configuration (this one included) that share the estimate."""
    outlier: str | None = None
    verdict: str = ""
    """enough, not enough, not ready (a health finding) or not confirmed (stale, or the
    advice's own)."""
    held_back: list[str] = field(default_factory=list)
    """Why a host that would meet it is not counted: its findings, or its scan's age."""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: One configuration: every fact the estimate and the readiness depend on. (A list, not a
#: comma-separated run of expressions: ``a, b AS config`` names only the last one.)
_CONFIG = (
    "concat_ws(' | ', coalesce(cpu_model, '?'), coalesce(cpu_usable_cpus, -1), "
    "coalesce(memory_total_bytes // 1073741824, -1), coalesce(gpu_models, ''), "
    "coalesce(gpu_count, 0), coalesce(gpu_vram_min_bytes // 1048576, -1), "
    "coalesce(split_part(driver_version, '.', 1), ''))"
)

#: Warnings that say a host cannot do GPU work as it is: a GPU is unhealthy, or no current
#: framework build runs on its driver (found with or without torch on the host). A host with one
#: does not meet a workload until it is fixed.
HEALTH_WARNINGS = (
    "gpu-ecc-uncorrected",
    "gpu-memory-repair-pending",
    "cuda-driver-too-old-for-frameworks",
)


def _held_back(fleet: Fleet, now: datetime | None) -> dict[str, list[str]]:
    """Host → why it is not counted: error findings, GPU health warnings, a stale scan."""
    rows = fleet.query(
        """SELECT h.host_key, list(f.title ORDER BY f.severity, f.id) AS titles
           FROM hosts h JOIN findings f USING (scan_id)
           WHERE f.severity = 'error' OR f.id IN (SELECT unnest(?))
              OR (f.id LIKE 'gpu-xid-%' AND f.severity <> 'info')
           GROUP BY h.host_key""",
        [list(HEALTH_WARNINGS)],
    )
    out = {r["host_key"]: list(r["titles"]) for r in rows}
    if now is not None:
        old = fleet.query(
            "SELECT host_key, effective_utc FROM hosts WHERE effective_utc < ?",
            [now - timedelta(days=STALE_DAYS)],
        )
        for r in old:
            days = (now - r["effective_utc"]).days
            out.setdefault(r["host_key"], []).append(f"last scanned {days} days ago")
    return out


def rank(
    fleet: Fleet,
    workload: Any,
    *,
    rules: Any = None,
    deadline_hours: float | None = None,
    now: datetime | None = None,
) -> tuple[list[Ranked], int]:
    """Every host with the estimate for ``workload``, best first; and the configurations run.
    Hosts held back (findings, or a scan older than STALE_DAYS before ``now``) never meet it."""
    from hwadvisor.advise import advise
    from hwadvisor.model.load import parse_profile

    groups = fleet.query(
        f"""
        WITH h AS (
            SELECT host_key, hostname, scan_id, {_CONFIG} AS config,
                   coalesce(bench_gpu_matmul_best_gflops, bench_cpu_matmul_fp32_gflops) AS fig
            FROM hosts
        ), ranked AS (
            SELECT *, row_number() OVER (PARTITION BY config ORDER BY fig NULLS LAST) AS pos,
                   count(*) OVER (PARTITION BY config) AS members
            FROM h
        )
        SELECT config, list(host_key ORDER BY host_key) AS keys,
               list(hostname ORDER BY host_key) AS names, any_value(members) AS members,
               arg_min(scan_id, abs(pos - (members + 1) // 2)) AS representative
        FROM ranked GROUP BY config
        """
    )
    held = _held_back(fleet, now)
    flagged: dict[str, str] = {}
    for o in outliers(fleet):
        worst = max(o.figures, key=lambda f: f["drop"])
        flagged.setdefault(
            o.host_key,
            f"{o.device} measured {worst['drop']:.0%} below identical {o.model} in the fleet",
        )
    out: list[Ranked] = []
    for group in groups:
        blob = fleet.scalar("SELECT doc FROM scans WHERE scan_id = ?", [group["representative"]])
        try:
            profile = parse_profile(zlib.decompress(blob).decode("utf-8"), "stored profile")
        except (InputError, zlib.error, UnicodeDecodeError) as exc:
            reason = f"stored profile unreadable: {exc}"
            for key, name in zip(group["keys"], group["names"], strict=True):
                out.append(Ranked(key, name, "?", None, None, None, None, False, [reason], 0))
            continue
        this = advise(profile, workload, rules=rules, deadline_hours=deadline_hours).this_machine
        for key, name in zip(group["keys"], group["names"], strict=True):
            why = held.get(key, [])
            verdict = this.verdict
            if why and this.sufficient:
                stale_only = all(w.startswith("last scanned") for w in why)
                verdict = "not confirmed" if stale_only else "not ready"
            out.append(
                Ranked(
                    host_key=key,
                    hostname=name,
                    hardware=this.hardware,
                    seconds=this.seconds,
                    low_seconds=this.low_seconds,
                    high_seconds=this.high_seconds,
                    fits_memory=this.fits_memory,
                    sufficient=this.sufficient and not why,
                    reasons=list(this.reasons),
                    shared_with=group["members"],
                    outlier=flagged.get(key),
                    verdict=verdict,
                    held_back=why,
                )
            )
    out.sort(
        key=lambda r: (
            not r.sufficient,
            bool(r.held_back),
            r.seconds is None,
            r.seconds or 0.0,
            r.hostname or r.host_key,
        )
    )
    return out, len(groups)
