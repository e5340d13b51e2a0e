"""What the fleet database answers: the roll-up, outliers, stale and duplicate hosts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from hwadvisor.fleet.identity import DUPLICATE_WINDOW_DAYS
from hwadvisor.fleet.store import Fleet

#: A figure is an outlier when it is this many robust standard deviations (1.4826 × the median
#: absolute deviation) below the median of identical devices in the fleet ...
OUTLIER_SIGMAS = 4.5
#: ... and at least this far below it (a very tight group must not flag a 3 % dip) ...
OUTLIER_MIN_DROP = 0.08
#: ... in a group of at least this many identical devices (fewer say nothing about "normal").
OUTLIER_MIN_GROUP = 5
#: A device is an outlier when two or more of its figures are, or one is by this much: a
#: degraded card or node is slow at everything, while one figure of a healthy device dips
#: 9-12 % now and then in a fleet of thousands (2.5 % noise: one in a few hundred figures).
OUTLIER_SINGLE_DROP = 0.20
#: A host whose latest scan is older than this is stale.
STALE_DAYS = 30


@dataclass
class Outlier:
    host_key: str
    hostname: str | None
    device: str
    """``cpu`` or ``cuda:N``."""
    model: str
    gpu_uuid: str | None
    figures: list[dict[str, Any]]
    """Each figure below its siblings: case, precision, unit, value, median, drop, group."""

    @property
    def worst_drop(self) -> float:
        return float(max(f["drop"] for f in self.figures))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "worst_drop": round(self.worst_drop, 4)}


def outliers(
    fleet: Fleet,
    *,
    sigmas: float = OUTLIER_SIGMAS,
    min_drop: float = OUTLIER_MIN_DROP,
    min_group: int = OUTLIER_MIN_GROUP,
) -> list[Outlier]:
    """Devices whose trusted figures are well below the median of identical devices (same GPU
    model, or same CPU model at the same thread count) across the hosts' latest scans: two
    figures or more, or one by OUTLIER_SINGLE_DROP."""
    rows = fleet.query(
        """
        WITH m AS (
            SELECT h.host_key, h.hostname, ms.*
            FROM hosts h JOIN measurements ms USING (scan_id)
            WHERE ms.trusted AND ms.device_model IS NOT NULL AND ms.best > 0
        ), keyed AS (
            SELECT *, concat_ws('|', device = 'cpu', device_model, case_name,
                                coalesce(precision, ''), coalesce(variant, ''),
                                CASE WHEN device = 'cpu' THEN coalesce(threads, -1) END) AS grp
            FROM m
        ), stats AS (
            SELECT grp, median(best) AS med, count(*) AS n FROM keyed GROUP BY grp
        ), dev AS (
            SELECT k.*, s.med, s.n, abs(k.best - s.med) AS dev
            FROM keyed k JOIN stats s USING (grp)
        ), mad AS (
            SELECT grp, median(dev) AS mad FROM dev GROUP BY grp
        ), limits AS (
            SELECT d.*, greatest(?, ? * 1.4826 * mad.mad / d.med) AS threshold
            FROM dev d JOIN mad USING (grp)
            WHERE d.n >= ? AND d.med > 0
        )
        SELECT host_key, hostname, device, device_model, gpu_uuid, case_name, precision,
               variant, unit, best, med, n, higher_is_better, threshold
        FROM limits
        WHERE (higher_is_better AND best < med * (1 - threshold))
           OR (NOT higher_is_better AND best > med * (1 + threshold))
        ORDER BY host_key, device, case_name, precision
        """,
        [min_drop, sigmas, min_group],
    )
    found: dict[tuple[str, str], Outlier] = {}
    for r in rows:
        key = (r["host_key"], r["device"])
        out = found.setdefault(
            key,
            Outlier(
                r["host_key"], r["hostname"], r["device"], r["device_model"], r["gpu_uuid"], []
            ),
        )
        ratio = r["best"] / r["med"]
        out.figures.append(
            {
                "case": r["case_name"],
                "precision": r["precision"],
                "variant": r["variant"],
                "unit": r["unit"],
                "value": r["best"],
                "median": r["med"],
                "drop": round(1 - ratio if r["higher_is_better"] else ratio - 1, 4),
                "group": r["n"],
            }
        )
    confirmed = [
        o for o in found.values() if len(o.figures) >= 2 or o.worst_drop >= OUTLIER_SINGLE_DROP
    ]
    return sorted(confirmed, key=lambda o: -o.worst_drop)


def stale(fleet: Fleet, now: datetime, days: int = STALE_DAYS) -> list[dict[str, Any]]:
    """Hosts whose latest scan is older than ``days``."""
    return fleet.query(
        "SELECT host_key, hostname, effective_utc FROM hosts WHERE effective_utc < ? "
        "ORDER BY effective_utc",
        [now - timedelta(days=days)],
    )


def duplicates(fleet: Fleet) -> list[dict[str, Any]]:
    """Machine ids that several hosts report at once (a cloned image's /etc/machine-id): each
    with its hosts' names (a name several hosts share followed by the host key)."""
    return fleet.query(
        """SELECT machine_key AS machine_id,
                  list(DISTINCT display_name ORDER BY display_name) AS hostnames
        FROM hosts WHERE duplicate_id GROUP BY machine_key ORDER BY machine_key"""
    )


def _counts(fleet: Fleet, expr: str, table: str = "hosts", where: str = "") -> list[list[Any]]:
    rows = fleet.con.execute(
        f"SELECT coalesce(CAST({expr} AS VARCHAR), 'unknown') AS k, count(*) AS n "
        f"FROM {table} {where} GROUP BY k ORDER BY n DESC, k"
    ).fetchall()
    return [[k, n] for k, n in rows]


def summary(fleet: Fleet, now: datetime, stale_days: int = STALE_DAYS) -> dict[str, Any]:
    """The fleet in numbers: a JSON-ready dict (``fleet summary --json`` prints it as is)."""
    hosts = fleet.scalar("SELECT count(*) FROM hosts") or 0
    gpu_hosts = "WHERE scan_id IN (SELECT scan_id FROM hosts)"
    finding_rows = fleet.query(
        """SELECT f.id, any_value(f.severity) AS severity, any_value(f.title) AS title,
                  count(DISTINCT h.host_key) AS hosts,
                  list(DISTINCT h.display_name ORDER BY h.display_name) AS host_names
           FROM hosts h JOIN findings f USING (scan_id)
           GROUP BY f.id
           ORDER BY CASE any_value(f.severity) WHEN 'error' THEN 0 WHEN 'warning' THEN 1
                    ELSE 2 END, hosts DESC, f.id"""
    )
    skipped = fleet.query(
        "SELECT reason, count(*) AS files FROM files WHERE status = 'skipped' "
        "GROUP BY reason ORDER BY files DESC, reason"
    )
    found = outliers(fleet)
    old = stale(fleet, now, stale_days)
    return {
        "hosts": hosts,
        "scans": fleet.scalar("SELECT count(*) FROM scans") or 0,
        "files": fleet.scalar("SELECT count(*) FROM files") or 0,
        "skipped_files": sum(r["files"] for r in skipped),
        "skipped_reasons": skipped,
        "gpus": fleet.scalar(f"SELECT count(*) FROM gpus {gpu_hosts} AND NOT lost") or 0,
        "by_cpu_model": _counts(fleet, "cpu_model"),
        "by_gpu_model": _counts(
            fleet,
            "coalesce(catalog_name, name)",
            "gpus",
            f"{gpu_hosts} AND NOT lost",
        ),
        "by_gpu_config": _counts(fleet, "coalesce(gpu_models, 'no GPU')"),
        "by_vram_gib": _counts(
            fleet, "round(vram_total_bytes / 1073741824)::BIGINT", "gpus", f"{gpu_hosts}"
        ),
        "by_driver": _counts(fleet, "driver_version", where="WHERE gpu_count > 0"),
        "by_cuda_driver": _counts(fleet, "cuda_driver_version", where="WHERE gpu_count > 0"),
        "by_torch": _counts(fleet, "torch_version"),
        "torch_gpu_ready": _counts(fleet, "torch_gpu_ready", where="WHERE gpu_count > 0"),
        "by_capability": _counts(fleet, "capability_scenario"),
        "findings": finding_rows,
        "outliers": [o.as_dict() for o in found],
        "stale_days": stale_days,
        "stale": [
            {**r, "effective_utc": r["effective_utc"].strftime("%Y-%m-%dT%H:%M:%SZ")} for r in old
        ],
        "duplicate_machine_ids": duplicates(fleet),
        "clock_skewed": fleet.query(
            "SELECT host_key, hostname, clock_note FROM hosts WHERE clock_note IS NOT NULL "
            "ORDER BY host_key"
        ),
        "duplicate_window_days": DUPLICATE_WINDOW_DAYS,
    }
