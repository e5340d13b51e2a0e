"""Which scans are one machine: the fleet's host identity, forgetting and retention.

A scan names its machine three ways: the machine id (``/etc/machine-id``, hashed: a software
identity, copied by cloned images and renewed by a re-install), the GPUs' UUIDs and the system
serial number (hardware identities, which neither cloning nor re-imaging changes). Scans are
grouped into hosts in three steps (docs/fleet.md, "How hosts are told apart"):

1. **GPUs**: scans with the same machine id, or the same host name, whose GPU UUIDs are mostly
   the same (at least half of the larger set in common, or, under one machine id, all of one
   set within the other: GPUs that fell off the bus) are one machine.
2. **Serial**: scans with the same system serial are one machine where that cannot be two:
   the same machine id and host name, or one of the two and one scan seen only after the
   other was last seen (a rename, a re-install); never two sets of GPUs seen at once.
3. **Machine id**: a scan with neither (CPU-only, not root, redacted without a shared salt)
   joins the hardware host of its machine id and host name; the rest are grouped by machine id
   as before: several host names under one id within :data:`DUPLICATE_WINDOW_DAYS` are
   several machines, an older name is a rename.

Cloned machines (one machine id, different hardware or host names at the same time) are so
several hosts, and each gets the finding :data:`CLONE_FINDING`. A re-imaged node (a new machine
id, the same GPUs or serial) stays one host, keyed by its first machine id.

The result is the ``scan_hosts`` table, recomputed after every change (a few milliseconds per
thousand scans); the ``host_scans`` and ``hosts`` views read it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hwadvisor.fleet.store import Fleet

#: Two host names under one machine id within this window are two machines (a cloned image).
DUPLICATE_WINDOW_DAYS = 7
#: Two scans this close in time could be one collection round: "at the same time".
SAME_TIME = timedelta(hours=1)
#: The finding each cloned host gets (on its latest scan, in the ``findings`` table).
CLONE_FINDING = "fleet-machine-id-clone"
CLONE_TITLE = (
    "Machine id shared by machines scanned at the same time (a cloned image): give each its "
    "own with systemd-machine-id-setup"
)
#: A serial carried by more machine ids, or by more ways of naming a machine, than this is a
#: firmware default, not an identity.
_MAX_SERIAL_KEYS = 8
_MAX_SERIAL_SIGS = 64


@dataclass
class Scan:
    scan_id: str
    machine_key: str
    hostname: str | None
    serial: str | None
    uuids: frozenset[str]
    when: datetime
    ingested: datetime


@dataclass
class _Sig:
    """Scans that name their machine the same way: one vertex of the grouping."""

    machine_key: str
    hostname: str | None
    serial: str | None
    uuids: frozenset[str]
    scans: list[Scan] = field(default_factory=list)
    first: datetime = datetime.max
    last: datetime = datetime.min

    def add(self, scan: Scan) -> None:
        self.scans.append(scan)
        self.first = min(self.first, scan.when)
        self.last = max(self.last, scan.when)


def _apart(a: _Sig | _Span, b: _Sig | _Span) -> bool:
    """One was seen only after the other was last seen (not "at the same time")."""
    return a.last + SAME_TIME < b.first or b.last + SAME_TIME < a.first


@dataclass
class _Span:
    first: datetime
    last: datetime


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i


def usable_serial(value: str | None) -> str | None:
    """A system serial as an identity: trimmed and lower-case; ``None`` for one too short or
    made of one repeated character (what firmware leaves where no serial was written)."""
    if not value:
        return None
    text = "".join(value.split()).lower()
    if len(text) < 4 or len(set(text)) == 1:
        return None
    return text


def _join_alike(vertices: list[_Sig], members: list[int], join: Any) -> None:
    """Join the signatures of one GPU set that share a machine id or a host name."""
    first: dict[tuple[str, Any], int] = {}
    for i in members:
        sig = vertices[i]
        for key in (("key", sig.machine_key), ("name", sig.hostname)):
            if key[1] is None:
                continue
            if key in first:
                join(first[key], i)
            else:
                first[key] = i


def _uuid_linked(a: frozenset[str], b: frozenset[str], same_key: bool) -> bool:
    common = len(a & b)
    if common == 0:
        return False
    if 2 * common >= max(len(a), len(b)):
        return True
    # GPUs that fell off the bus: fewer UUIDs, all of them the machine's, under its machine id.
    return same_key and (a <= b or b <= a)


@dataclass
class Group:
    """One host: its scans, and how it is shown."""

    scans: list[Scan]
    hardware: bool
    shown: bool = True
    key: str = ""
    latest: Scan | None = None
    duplicate: bool = False
    display: str | None = None
    note: str | None = None
    _tokens: dict[str, list[Any]] | None = None

    @property
    def tokens(self) -> dict[str, list[Any]]:
        """What a tombstone of this host matches later scans by."""
        if self._tokens is None:
            self._tokens = _tokens(self)
        return self._tokens


def group_scans(scans: Iterable[Scan]) -> list[Group]:
    """The hosts ``scans`` belong to (the three steps of the module's docstring)."""
    sigs: dict[tuple[Any, ...], _Sig] = {}
    for scan in scans:
        key = (scan.machine_key, scan.hostname, scan.serial, scan.uuids)
        sig = sigs.get(key)
        if sig is None:
            sig = sigs[key] = _Sig(scan.machine_key, scan.hostname, scan.serial, scan.uuids)
        sig.add(scan)
    vertices = list(sigs.values())
    union = _Union(len(vertices))

    # 1. GPUs: scans of one machine id or one host name whose GPUs are mostly the same.
    def join(a: int, b: int) -> None:
        ra, rb = union.find(a), union.find(b)
        if ra != rb:
            union.parent[rb] = ra

    by_set: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, sig in enumerate(vertices):
        if sig.uuids:
            by_set[sig.uuids].append(i)
    for members in by_set.values():
        if len(members) > 1:  # the same GPUs: one machine under one id or one name
            _join_alike(vertices, members, join)
    sets_of: dict[str, list[frozenset[str]]] = defaultdict(list)
    for uuids in by_set:
        for uuid in uuids:
            sets_of[uuid].append(uuids)
    pairs = {
        (a, b) if hash(a) <= hash(b) else (b, a)
        for sets in sets_of.values()
        if len(sets) > 1
        for x, a in enumerate(sets)
        for b in sets[x + 1 :]
    }
    for a, b in pairs:  # GPUs swapped or lost: the sets that share most of theirs
        for ia in by_set[a]:
            for ib in by_set[b]:
                sa, sb = vertices[ia], vertices[ib]
                same_key = sa.machine_key == sb.machine_key
                same_name = sa.hostname is not None and sa.hostname == sb.hostname
                if (same_key or same_name) and _uuid_linked(a, b, same_key):
                    join(ia, ib)
    # Each GPU machine's span in time: two of them at once are two machines, whatever else.
    gpu_spans: dict[int, list[_Span]] = {}
    for i, sig in enumerate(vertices):
        if sig.uuids:
            spans = gpu_spans.setdefault(union.find(i), [_Span(sig.first, sig.last)])
            spans[0].first = min(spans[0].first, sig.first)
            spans[0].last = max(spans[0].last, sig.last)

    # 2. Serial numbers: the same machine id and host name, or one of them and one scan seen
    # only after the other (a rename, a re-install); never two sets of GPUs at the same time.
    by_serial: dict[str, list[int]] = defaultdict(list)
    for i, sig in enumerate(vertices):
        if sig.serial:
            by_serial[sig.serial].append(i)
    for members in by_serial.values():
        if (
            len(members) > _MAX_SERIAL_SIGS
            or len({vertices[i].machine_key for i in members}) > _MAX_SERIAL_KEYS
        ):
            continue
        for x, ia in enumerate(members):
            for ib in members[x + 1 :]:
                sa, sb = vertices[ia], vertices[ib]
                same_key = sa.machine_key == sb.machine_key
                same_name = sa.hostname is not None and sa.hostname == sb.hostname
                linked = (same_key and same_name) or ((same_key or same_name) and _apart(sa, sb))
                if not linked:
                    continue
                ra, rb = union.find(ia), union.find(ib)
                if ra == rb:
                    continue
                if any(
                    not _apart(p, q) for p in gpu_spans.get(ra, []) for q in gpu_spans.get(rb, [])
                ):
                    continue
                union.parent[rb] = ra
                gpu_spans[ra] = gpu_spans.get(ra, []) + gpu_spans.pop(rb, [])

    # 3. Scans with neither: the hardware host of their machine id and host name, else as
    # before, by machine id.
    hardware: dict[int, list[int]] = defaultdict(list)
    names: dict[tuple[str, str | None], set[int]] = defaultdict(set)
    bare: dict[str, list[int]] = defaultdict(list)
    for i, sig in enumerate(vertices):
        if sig.uuids or sig.serial:
            root = union.find(i)
            hardware[root].append(i)
            names[(sig.machine_key, sig.hostname)].add(root)
    for i, sig in enumerate(vertices):
        if sig.uuids or sig.serial:
            continue
        roots = names.get((sig.machine_key, sig.hostname), set())
        if len(roots) == 1:
            hardware[next(iter(roots))].append(i)
        else:
            bare[sig.machine_key].append(i)

    groups = [
        Group([s for i in members for s in vertices[i].scans], hardware=True)
        for members in hardware.values()
    ]
    for members in bare.values():
        groups.extend(_by_machine_id([vertices[i] for i in members]))
    return groups


def _by_machine_id(sigs: list[_Sig]) -> list[Group]:
    """Scans of one machine id without hardware identity: one host, unless several host names
    report it within the window (clones): then one per name, names seen only before it being
    renames (kept as history, not shown)."""
    latest = max(sig.last for sig in sigs)
    since = latest - timedelta(days=DUPLICATE_WINDOW_DAYS)
    recent = {sig.hostname for sig in sigs if sig.hostname is not None and sig.last >= since}
    if len(recent) <= 1:
        return [Group([s for sig in sigs for s in sig.scans], hardware=False)]
    by_name: dict[str | None, list[Scan]] = defaultdict(list)
    for sig in sigs:
        by_name[sig.hostname].extend(sig.scans)
    return [
        Group(scans, hardware=False, shown=name in recent or name is None)
        for name, scans in by_name.items()
    ]


def _tokens(group: Group) -> dict[str, list[Any]]:
    """What a tombstone of this host matches later scans by."""
    uuids = sorted({u for s in group.scans for u in s.uuids})
    serials = sorted({s.serial for s in group.scans if s.serial})
    pairs = sorted(
        {(s.machine_key, s.hostname or "") for s in group.scans if not s.uuids and not s.serial}
    )
    return {"uuids": uuids, "serials": serials, "pairs": [list(p) for p in pairs]}


def _sort(scans: list[Scan]) -> None:
    """Oldest first; the latest last, the smallest scan id winning a tie on times."""
    if len(scans) > 1:
        scans.sort(key=lambda s: s.scan_id, reverse=True)
        scans.sort(key=lambda s: (s.when, s.ingested))


def _real_id(key: str) -> bool:
    """A machine id, not a stand-in (a host name or a file where the profile had none)."""
    return not key.startswith(("host:", "file:", "scan:"))


def name_groups(groups: list[Group]) -> None:
    """Give each host its key, latest scan, display name, clone flag and note."""
    for group in groups:
        _sort(group.scans)
        group.latest = group.scans[-1]
    bases: dict[str, list[Group]] = defaultdict(list)
    for group in groups:
        bases[group.scans[0].machine_key].append(group)
    for base, members in bases.items():
        if len(members) == 1:
            members[0].key = base
            continue
        keys: dict[str, list[Group]] = defaultdict(list)
        for group in members:
            assert group.latest is not None
            keys[f"{base}@{group.latest.hostname or '?'}"].append(group)
        for key, same in keys.items():
            if len(same) == 1:
                same[0].key = key
                continue
            for group in same:
                token = min(
                    group.tokens["uuids"] or group.tokens["serials"] or [group.scans[0].scan_id]
                )
                group.key = f"{key}~{hashlib.sha256(token.encode()).hexdigest()[:8]}"
    # Clones: one machine id on several hosts shown, their latest scans within the window.
    shown = [g for g in groups if g.shown]
    by_id: dict[str, list[Group]] = defaultdict(list)
    for group in shown:
        assert group.latest is not None
        if _real_id(group.latest.machine_key):
            by_id[group.latest.machine_key].append(group)
    for members in by_id.values():
        newest = max(g.latest.when for g in members if g.latest is not None)
        since = newest - timedelta(days=DUPLICATE_WINDOW_DAYS)
        recent = [g for g in members if g.latest is not None and g.latest.when >= since]
        if len(recent) > 1:
            for group in recent:
                group.duplicate = True
    names: dict[str, int] = defaultdict(int)
    for group in shown:
        if group.latest is not None and group.latest.hostname:
            names[group.latest.hostname] += 1
    for group in groups:
        latest = group.latest
        assert latest is not None
        if latest.hostname is None:
            group.display = group.key
        elif names[latest.hostname] > 1:
            group.display = f"{latest.hostname} ({group.key})"
        else:
            group.display = latest.hostname
        earlier = sorted(
            {s.machine_key for s in group.scans if _real_id(s.machine_key)} - {latest.machine_key}
        )
        if earlier:
            how = "GPU UUIDs" if group.tokens["uuids"] else "system serial"
            group.note = (
                f"machine id changed (re-installed?): linked by its {how} to the earlier "
                f"{', '.join(earlier[:3])}"
            )


# --------------------------------------------------------------------------------------------
# The database side


def load_scans(fleet: Fleet) -> list[Scan]:
    rows = fleet.con.execute(
        """SELECT s.scan_id, s.machine_key, s.hostname, s.system_serial, s.effective_utc,
                  s.ingested_utc, g.uuids
           FROM scans s LEFT JOIN (
               SELECT scan_id, list(DISTINCT uuid) AS uuids FROM gpus
               WHERE uuid IS NOT NULL GROUP BY scan_id
           ) g USING (scan_id)"""
    ).fetchall()
    epoch = datetime(1970, 1, 1)
    return [
        Scan(
            sid,
            key or f"scan:{sid}",
            name,
            usable_serial(serial),
            frozenset(u.lower() for u in uuids or ()),
            when or epoch,
            ingested or epoch,
        )
        for sid, key, name, serial, when, ingested, uuids in rows
    ]


@dataclass
class Tombstone:
    host_key: str
    upto: datetime
    uuids: frozenset[str]
    serials: frozenset[str]
    pairs: frozenset[tuple[str, str]]

    def matches(self, scan: Scan) -> bool:
        if scan.when > self.upto:
            return False
        if scan.uuids:
            return 2 * len(scan.uuids & self.uuids) >= len(scan.uuids)
        if scan.serial:
            return scan.serial in self.serials
        return (scan.machine_key, scan.hostname or "") in self.pairs


class _TombIndex:
    """Tombstones by what they match, so that each scan is checked against a few only."""

    def __init__(self, tombs: list[Tombstone]) -> None:
        self.by: dict[Any, list[Tombstone]] = defaultdict(list)
        for tomb in tombs:
            for token in (*tomb.uuids, *tomb.serials, *tomb.pairs):
                self.by[token].append(tomb)

    def matches(self, scan: Scan) -> bool:
        if scan.uuids:
            tokens: Iterable[Any] = scan.uuids
        elif scan.serial:
            tokens = (scan.serial,)
        else:
            tokens = ((scan.machine_key, scan.hostname or ""),)
        return any(t.matches(scan) for token in tokens for t in self.by.get(token, ()))


def _tombstones(fleet: Fleet) -> list[Tombstone]:
    out = []
    for key, upto, tokens in fleet.con.execute(
        "SELECT host_key, upto_utc, tokens FROM forgotten"
    ).fetchall():
        data = json.loads(tokens or "{}")
        out.append(
            Tombstone(
                key,
                upto,
                frozenset(data.get("uuids") or ()),
                frozenset(data.get("serials") or ()),
                frozenset((p[0], p[1]) for p in data.get("pairs") or ()),
            )
        )
    return out


def _delete_scans(fleet: Fleet, scan_ids: list[str]) -> None:
    if not scan_ids:
        return
    for table in ("gpus", "findings", "measurements", "scans"):
        fleet.con.execute(
            f"DELETE FROM {table} WHERE scan_id IN (SELECT unnest($1::VARCHAR[]))", [scan_ids]
        )


def retention_days(fleet: Fleet) -> int:
    """The retention setting (``fleet ingest --retention-days``); 0: hosts are kept forever."""
    value = fleet.scalar("SELECT value FROM fleet_meta WHERE key = 'retention_days'")
    return int(value) if value and str(value).isdigit() else 0


def set_retention_days(fleet: Fleet, days: int) -> None:
    fleet.con.execute(
        "INSERT OR REPLACE INTO fleet_meta VALUES ('retention_days', ?)", [str(int(days))]
    )


def bury(fleet: Fleet, groups: list[Group], now: datetime, reason: str) -> None:
    """Delete these hosts' scans, keeping a tombstone that keeps the same scans out later."""
    rows = []
    for group in groups:
        assert group.latest is not None
        rows.append(
            (
                group.key,
                group.latest.hostname,
                now,
                max(s.when for s in group.scans),
                reason,
                json.dumps(group.tokens, separators=(",", ":")),
            )
        )
    if rows:
        fleet.con.executemany("INSERT INTO forgotten VALUES (?, ?, ?, ?, ?, ?)", rows)
    _delete_scans(fleet, [s.scan_id for g in groups for s in g.scans])


@dataclass
class Resolved:
    groups: list[Group]
    forgotten_scans: int = 0
    """Scans of forgotten hosts taken out again (an old file read once more)."""
    retired: list[Group] = field(default_factory=list)
    """Hosts dropped by the retention setting this time."""


def resolve(fleet: Fleet, now: datetime) -> Resolved:
    """Recompute which host every scan belongs to (inside the caller's transaction): scans of
    forgotten hosts are deleted again, hosts past the retention are forgotten, then
    ``scan_hosts`` and the clone findings are rewritten."""
    scans = load_scans(fleet)
    tombs = _tombstones(fleet)
    gone: list[str] = []
    if tombs:
        index = _TombIndex(tombs)
        kept = []
        for scan in scans:
            if index.matches(scan):
                gone.append(scan.scan_id)
            else:
                kept.append(scan)
        scans = kept
        _delete_scans(fleet, gone)
    groups = group_scans(scans)
    name_groups(groups)
    retired: list[Group] = []
    days = retention_days(fleet)
    if days > 0:
        limit = now - timedelta(days=days)
        retired = [g for g in groups if g.latest is not None and g.latest.when < limit]
        if retired:
            bury(fleet, retired, now, f"retention: not scanned in {days} days")
            dropped = {id(g) for g in retired}
            groups = [g for g in groups if id(g) not in dropped]
            name_groups(groups)
    _write(fleet, groups)
    return Resolved(groups, len(gone), retired)


def _write(fleet: Fleet, groups: list[Group]) -> None:
    con = fleet.con
    con.execute("DELETE FROM scan_hosts")
    columns: list[list[Any]] = [[] for _ in range(7)]
    findings: list[str] = []
    for group in groups:
        for scan in group.scans:
            latest = scan is group.latest
            for column, value in zip(
                columns,
                (
                    scan.scan_id,
                    group.key,
                    latest,
                    group.shown,
                    group.duplicate,
                    group.display,
                    group.note,
                ),
                strict=True,
            ):
                column.append(value)
        if group.duplicate and group.shown and group.latest is not None:
            findings.append(group.latest.scan_id)
    if columns[0]:
        con.execute(
            "INSERT INTO scan_hosts SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[]), "
            "unnest($3::BOOLEAN[]), unnest($4::BOOLEAN[]), unnest($5::BOOLEAN[]), "
            "unnest($6::VARCHAR[]), unnest($7::VARCHAR[])",
            columns,
        )
    con.execute("DELETE FROM findings WHERE id = ?", [CLONE_FINDING])
    if findings:
        con.execute(
            "INSERT INTO findings (scan_id, id, severity, title) "
            "SELECT unnest($1::VARCHAR[]), ?, 'warning', ?",
            [findings, CLONE_FINDING, CLONE_TITLE],
        )


# --------------------------------------------------------------------------------------------
# fleet forget


@dataclass
class Forgotten:
    host_key: str
    hostname: str | None
    scans: int
    last_scan_utc: datetime


def find_hosts(groups: list[Group], names: list[str]) -> tuple[list[Group], list[str]]:
    """The shown hosts ``names`` name (host key, machine id, host name or display name), and
    the names that name none; a name that fits several hosts is an error (ValueError)."""
    shown = [g for g in groups if g.shown]
    chosen: dict[int, Group] = {}
    unknown: list[str] = []
    for name in names:
        exact = [g for g in shown if g.key == name]
        if not exact:
            exact = [
                g
                for g in shown
                if g.latest is not None
                and (name in (g.latest.machine_key, g.display) or name == g.latest.hostname)
            ]
        if not exact:
            unknown.append(name)
        elif len(exact) > 1:
            keys = ", ".join(sorted(g.key for g in exact)[:5])
            raise ValueError(f"{name!r} names {len(exact)} hosts: give one host key ({keys})")
        else:
            chosen[id(exact[0])] = exact[0]
    return list(chosen.values()), unknown


def forget(
    fleet: Fleet, now: datetime, *, names: list[str], older_than_days: int | None, dry_run: bool
) -> tuple[list[Forgotten], list[str]]:
    """Forget the hosts named (and, with ``older_than_days``, every host not scanned for that
    long): their scans deleted, a tombstone kept. The hosts, and the names that matched none
    (then nothing is forgotten)."""
    groups = group_scans(load_scans(fleet))
    name_groups(groups)
    chosen, unknown = find_hosts(groups, names)
    if unknown:
        return [], unknown
    if older_than_days is not None:
        limit = now - timedelta(days=older_than_days)
        have = {id(g) for g in chosen}
        chosen += [
            g
            for g in groups
            if g.shown and g.latest is not None and g.latest.when < limit and id(g) not in have
        ]
    out = [
        Forgotten(g.key, g.latest.hostname if g.latest else None, len(g.scans), g.latest.when)
        for g in chosen
        if g.latest is not None
    ]
    if dry_run or not chosen:
        return out, []
    con = fleet.con
    con.execute("BEGIN TRANSACTION")
    try:
        bury(fleet, chosen, now, "fleet forget")
        resolve(fleet, now)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return out, []
