"""``fleet advise``: which machines of the fleet can train a workload, ranked by time-to-train.

The advice engine runs once per distinct configuration (CPU model and usable CPUs, memory, GPU
models and memory), on the member with the median measured figure: hosts that are the same
hardware share one estimate, so 10,000 hosts of 40 configurations cost 40 runs, not 10,000.
Outliers (a degraded GPU) are named beside their host, since the shared estimate flatters them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from hwadvisor.errors import InputError
from hwadvisor.fleet.queries import outliers
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
    """enough, not enough, or not confirmed (the advice's words)."""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_CONFIG = (
    "coalesce(cpu_model, '?'), coalesce(cpu_usable_cpus, -1), "
    "coalesce(memory_total_bytes // 1073741824, -1), coalesce(gpu_models, ''), "
    "coalesce(gpu_vram_min_bytes, -1)"
)


def rank(
    fleet: Fleet, workload: Any, *, rules: Any = None, deadline_hours: float | None = None
) -> tuple[list[Ranked], int]:
    """Every host with the estimate for ``workload``, best first; and the configurations run."""
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
            out.append(
                Ranked(
                    host_key=key,
                    hostname=name,
                    hardware=this.hardware,
                    seconds=this.seconds,
                    low_seconds=this.low_seconds,
                    high_seconds=this.high_seconds,
                    fits_memory=this.fits_memory,
                    sufficient=this.sufficient,
                    reasons=list(this.reasons),
                    shared_with=group["members"],
                    outlier=flagged.get(key),
                    verdict=this.verdict,
                )
            )
    out.sort(
        key=lambda r: (
            not r.sufficient,
            r.seconds is None,
            r.seconds or 0.0,
            r.hostname or r.host_key,
        )
    )
    return out, len(groups)
