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


def _groups(fleet: Fleet) -> list[dict[str, Any]]:
    """One row per configuration: its hosts (keys, names), how many, and the scan of the member
    with the median measured figure, which stands for them all."""
    return fleet.query(
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


def _flagged(fleet: Fleet) -> dict[str, str]:
    """Host → its worst outlier device, said in words."""
    flagged: dict[str, str] = {}
    for o in outliers(fleet):
        worst = max(o.figures, key=lambda f: f["drop"])
        flagged.setdefault(
            o.host_key,
            f"{o.device} measured {worst['drop']:.0%} below identical {o.model} in the fleet",
        )
    return flagged


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

    groups = _groups(fleet)
    held = _held_back(fleet, now)
    flagged = _flagged(fleet)
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


# --- Serving a model: ``fleet advise --serve MODEL`` ------------------------------------------

#: The order hosts are ranked in, by what their estimate says (held-back hosts come after all).
SERVES, TOO_SLOW, NO_FIT, NO_ESTIMATE = range(4)


@dataclass
class ServeRanked:
    """One host serving a model: its configuration's estimate, and whether it counts."""

    host_key: str
    hostname: str | None
    configuration: str
    hardware: str
    fits_memory: bool | None
    memory_needed_bytes: int | None
    memory_usable_bytes: int | None
    decode_tok_s: float | None
    """One user's decode speed, alone."""
    per_user_tok_s: float | None
    """Each user's decode speed with ``users`` at once."""
    prefill_tok_s: float | None
    throughput_tok_s: float | None
    users_at_target: int | None
    measured: bool
    """The speed is from the host's measured bandwidth and FLOPs (else catalog peaks)."""
    serves: bool
    """Holds the model and gives every user the target speed, and is not held back."""
    verdict: str
    """serves it, too slow (each user gets less than the target), too few users (the target
    speed for fewer than ``users``), does not fit, no estimate; a host that would serve it but is
    held back: not ready (a health finding) or not confirmed (a stale scan)."""
    held_back: list[str]
    shared_with: int
    outlier: str | None = None
    reasons: list[str] = field(default_factory=list)
    rank_class: int = NO_ESTIMATE

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        del out["rank_class"]
        return out


def serve_request(model: str, **given: Any) -> tuple[Any, str, str]:
    """The ``ServeRequest`` of ``--serve MODEL`` (a preset's fields, then the options given),
    with the model's name and quantization, checked now: a bad engine, number, model or
    quantization is a usage error before any host is read."""
    from hwadvisor.advise.serving import build_request, check_request, with_context

    request = build_request(model, **given)
    geom, quant = check_request(request)
    return with_context(request, geom), geom.name, quant.name


def _serve_verdict(e: Any, users: int) -> tuple[int, str]:
    if not e.fits_memory:
        return NO_FIT, "does not fit"
    if e.meets_target:
        return SERVES, "serves it"
    if users > 1 and e.users_at_target and e.users_at_target < users:
        return TOO_SLOW, "too few users"
    return TOO_SLOW, "too slow"


def rank_serve(
    fleet: Fleet, request: Any, *, now: datetime | None = None
) -> tuple[list[ServeRanked], int]:
    """Every host with its configuration's serving estimate for ``request`` (a ``ServeRequest``),
    best first, and the configurations estimated. Only each host's own hardware is estimated
    (``serve_advice``'s ``this_machine``). Order: the hosts that serve it at the target (fastest
    per user, then most throughput), those that hold it but are too slow, those it does not fit,
    those without an estimate; hosts held back (findings, or a scan older than STALE_DAYS before
    ``now``) last, whatever their estimate, and never counted as serving it."""
    from hwadvisor.advise.pricing import builtin_prices
    from hwadvisor.advise.serving import serve_advice
    from hwadvisor.model.load import parse_profile

    groups = _groups(fleet)
    held = _held_back(fleet, now)
    flagged = _flagged(fleet)
    prices = builtin_prices()
    out: list[ServeRanked] = []
    for group in groups:
        members = list(zip(group["keys"], group["names"], strict=True))
        blob = fleet.scalar("SELECT doc FROM scans WHERE scan_id = ?", [group["representative"]])
        unreadable = ""
        try:
            profile = parse_profile(zlib.decompress(blob).decode("utf-8"), "stored profile")
        except (InputError, zlib.error, UnicodeDecodeError) as exc:
            profile, unreadable = None, f"stored profile unreadable: {exc}"
        answer = serve_advice(profile, request, prices) if profile else None
        e = answer.this_machine if answer else None
        for key, name in members:
            why = held.get(key, [])
            row = ServeRanked(
                host_key=key,
                hostname=name,
                configuration=group["config"],
                hardware="?",
                fits_memory=None,
                memory_needed_bytes=None,
                memory_usable_bytes=None,
                decode_tok_s=None,
                per_user_tok_s=None,
                prefill_tok_s=None,
                throughput_tok_s=None,
                users_at_target=None,
                measured=False,
                serves=False,
                verdict="no estimate",
                held_back=why,
                shared_with=group["members"],
                outlier=flagged.get(key),
            )
            if profile is None:
                row.reasons = [unreadable]
            elif e is None:
                # the answer's own words for why this machine was not sized (an engine that
                # does not run on it, no trusted bandwidth)
                note = (answer.this_machine_note if answer else None) or "not sized"
                row.reasons = [note.replace("not sized", "no estimate", 1)]
            else:
                cls, verdict = _serve_verdict(e, request.users)
                row.hardware = e.hardware.removeprefix("this machine: ")
                row.fits_memory = e.fits_memory
                row.memory_needed_bytes = e.memory_needed_bytes
                row.memory_usable_bytes = e.memory_available_bytes
                row.decode_tok_s = e.decode_tok_s
                row.per_user_tok_s = e.per_user_tok_s
                row.prefill_tok_s = e.prefill_tok_s
                row.throughput_tok_s = e.throughput_tok_s
                row.users_at_target = e.users_at_target
                row.measured = e.measured
                row.rank_class = cls
                row.verdict = verdict
                row.serves = cls == SERVES and not why
                if why and cls == SERVES:
                    stale_only = all(w.startswith("last scanned") for w in why)
                    row.verdict = "not confirmed" if stale_only else "not ready"
                row.reasons = list(e.suggestions)
            out.append(row)
    out.sort(
        key=lambda r: (
            bool(r.held_back),
            r.rank_class,
            -(r.per_user_tok_s or 0.0),
            -(r.throughput_tok_s or 0.0),
            r.hostname or r.host_key,
        )
    )
    return out, len(groups)
