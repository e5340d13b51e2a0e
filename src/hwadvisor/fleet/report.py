"""``fleet report``: what needs attention first (findings by severity, then by how many hosts,
each with its hosts named; outliers; stale hosts), then the fleet in charts, then one row per
host, the hosts with problems first. HTML, and PDF through WeasyPrint laid out in a helper
process (so that Ctrl-C and SIGTERM stop it at once)."""

from __future__ import annotations

import json
import re
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwadvisor import __version__
from hwadvisor.fleet.store import Fleet
from hwadvisor.render.report import Written

if TYPE_CHECKING:
    from hwadvisor.redact import WordSecrets
    from hwadvisor.render.pdf import PdfWorker

#: The PDF lists every host with a problem and at most this many others (the HTML lists all;
#: the CSV export has every fact).
PDF_HOST_ROWS = 2000

SCENARIO_TITLES = {
    1: "1 · CPU is enough",
    2: "2 · one reasonable GPU",
    3: "3 · workstation / cloud GPUs",
    4: "4 · multi-GPU / cluster node",
}


def _bar_chart(title: str, rows: list[tuple[str, int]], unit: str) -> dict[str, Any]:
    """A horizontal bar chart as an SVG data URI (or why it is not drawn), drawn as the host
    report's charts are: each name above its bar, the plot the chart's full width, the report's
    font size, so that it stays legible on a phone. At most 12 rows: the rest are one row."""
    from hwadvisor.render import svg

    if not rows:
        return {"title": title, "uri": None, "why_not": "nothing to show"}
    shown = rows[:12]
    if len(rows) > 12:
        shown = [*shown[:11], (f"{len(rows) - 11} others", sum(n for _, n in rows[11:]))]
    axis = svg.linear_axis(max(n for _, n in shown) * 1.1, title=unit, integer=True)
    panel = svg.Panel(
        tuple(svg.Row(label, (svg.Bar(n, "#2b6cb0", text=f"{n:,}"),)) for label, n in shown),
        axis,
    )
    return {"title": title, "uri": svg.data_uri(svg.bar_chart([panel])), "why_not": None}


def _hosts(fleet: Fleet) -> list[dict[str, Any]]:
    return fleet.query(
        "SELECT host_key, hostname, effective_utc, cpu_model, cpu_usable_cpus, "
        "memory_total_bytes, gpu_models, driver_version, torch_version, capability_scenario, "
        "findings_error, findings_warning, duplicate_id, clock_note FROM hosts "
        "ORDER BY hostname, host_key"
    )


def _problems(host: dict[str, Any], outliers: set[str], stale: set[str]) -> tuple[int, ...]:
    """A host's sort key, worst first: errors, then warnings, then an outlier device, then
    stale, a shared machine id or a wrong clock; hosts with none of these (information only)
    last. The first number is 3 for a healthy host."""
    errors, warnings = host["findings_error"] or 0, host["findings_warning"] or 0
    if errors:
        rank = 0
    elif warnings or host["host_key"] in outliers:
        rank = 1
    elif host["host_key"] in stale or host["duplicate_id"] or host["clock_note"]:
        rank = 2
    else:
        rank = 3
    return (rank, -errors, -warnings)


def sorted_hosts(
    fleet: Fleet, data: dict[str, Any], healthy_limit: int | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Every host, those with problems first (see :func:`_problems`), each group by name; with
    ``healthy_limit``, every host with a problem and at most that many healthy ones. Returns
    the rows and how many healthy hosts were left out."""
    outliers = {o["host_key"] for o in data["outliers"]}
    stale = {s["host_key"] for s in data["stale"]}
    rows = []
    for host in _hosts(fleet):
        key = _problems(host, outliers, stale)
        rows.append({**host, "flagged": key[0] < 3, "_key": key})
    rows.sort(key=lambda r: r.pop("_key"))  # stable: by name within a group
    if healthy_limit is None:
        return rows, 0
    flagged = [r for r in rows if r["flagged"]]
    healthy = [r for r in rows if not r["flagged"]]
    return flagged + healthy[: max(healthy_limit, 0)], max(len(healthy) - healthy_limit, 0)


#: A serial number's value in a stored profile (indented or compact JSON).
_SERIAL_RE = re.compile(rb'"serial"\s*:\s*\{\s*"value"\s*:\s*"((?:[^"\\]|\\.)*)"')


def fleet_secrets(fleet: Fleet) -> WordSecrets:
    """The fleet's identifying values to find in free text when redacting (finding titles,
    file names, notes): every host name any scan gave (with its short name and domains), every
    machine id, and the system and GPU serial numbers of the hosts' latest profiles."""
    from hwadvisor.redact import WordSecrets, fleet_secret_values

    names = [r[0] for r in fleet.con.execute("SELECT DISTINCT hostname FROM scans").fetchall()]
    ids = [r[0] for r in fleet.con.execute("SELECT DISTINCT machine_id FROM scans").fetchall()]
    serials: set[str] = set()
    cursor = fleet.con.execute("SELECT doc FROM scans WHERE scan_id IN (SELECT scan_id FROM hosts)")
    while batch := cursor.fetchmany(500):
        for (doc,) in batch:
            try:
                text = zlib.decompress(doc)
            except (zlib.error, TypeError):
                continue
            for raw in _SERIAL_RE.findall(text):
                try:
                    serials.add(json.loads(b'"' + raw + b'"'))
                except ValueError:
                    continue
    return WordSecrets(fleet_secret_values(names, serial=sorted(serials), machine_id=ids))


def render_fleet_html(
    fleet: Fleet,
    data: dict[str, Any],
    *,
    host_limit: int | None = None,
    paper: str = "A4",
    salt: str | None = None,
    secrets: WordSecrets | None = None,
) -> str:
    """The fleet page; with ``salt``, host names, machine ids and UUIDs are replaced by the
    same tokens the single-host reports use (see :mod:`hwadvisor.redact`), in the tables and in
    free text (finding titles, file names, chart labels) alike. ``host_limit`` caps the hosts
    without a problem only: every host with one is listed."""
    from hwadvisor.render.html import environment, render_template

    hosts, healthy_cut = sorted_hosts(fleet, data, host_limit)
    if salt is not None:
        from hwadvisor.redact import redact_rows

        known = secrets if secrets is not None else fleet_secrets(fleet)
        data = redact_rows(data, salt, secrets=known)
        hosts = redact_rows(hosts, salt, secrets=known)
    # Drawn from what is shown: redacted labels when the page is redacted.
    charts = [
        _bar_chart(
            "Findings",
            [(f"{f['severity']}: {f['title']}", f["hosts"]) for f in data["findings"]],
            "hosts",
        ),
        _bar_chart(
            "Capability by scenario",
            [
                (SCENARIO_TITLES.get(int(k), k) if k.isdigit() else k, n)
                for k, n in sorted(data["by_capability"])
            ],
            "hosts",
        ),
        _bar_chart("GPU models", [(k, n) for k, n in data["by_gpu_model"]], "GPUs"),
    ]
    outlier_keys = {o["host_key"] for o in data["outliers"]}
    stale_keys = {s["host_key"] for s in data["stale"]}
    flagged = sum(1 for h in hosts if h["flagged"])
    context = {
        "data": data,
        "charts": charts,
        "hosts": hosts,
        "flagged_hosts": flagged,
        "healthy_cut": healthy_cut,
        "redacted": salt is not None,
        "outlier_keys": outlier_keys,
        "stale_keys": stale_keys,
        "scenario_titles": SCENARIO_TITLES,
        "paper": paper,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "tool_version": __version__,
    }
    return render_template(environment(), "fleet.html.j2", context)


def write_fleet_report(
    fleet: Fleet,
    data: dict[str, Any],
    formats: list[str],
    folder: Path,
    stem: str = "fleet",
    redact: bool | None = None,
    worker: PdfWorker | None = None,
) -> Written:
    """Write ``folder/fleet.html`` and ``.pdf`` (never over an existing file: ``fleet-2`` ...).

    As for one host's report: the PDF, the file that leaves the building, is redacted unless
    ``redact`` is false; ``redact=True`` redacts the HTML too. The PDF is laid out by
    ``worker`` (a helper process: see :func:`pdf_helper`) where one is given."""
    from hwadvisor.errors import OutputError
    from hwadvisor.redact import resolve_salt
    from hwadvisor.render.report import StemFiles

    done = Written()
    redact_html, redact_pdf = bool(redact), redact is not False and "pdf" in formats
    salt: str | None = None
    secrets = None
    if redact_html or redact_pdf:
        salt, why = resolve_salt()
        if why:
            done.warnings.append(why)
        secrets = fleet_secrets(fleet)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot be created: {exc.strerror or exc}") from exc
    files = StemFiles(folder, stem, formats)
    pdf_page: str | None = None
    if "pdf" in formats:
        # Drawn first, so that the helper lays it out while the HTML is drawn and written.
        pdf_page = render_fleet_html(
            fleet,
            data,
            host_limit=PDF_HOST_ROWS,
            salt=salt if redact_pdf else None,
            secrets=secrets,
        )
        if worker is not None:
            worker.submit(pdf_page)
    if "html" in formats:
        html = render_fleet_html(fleet, data, salt=salt if redact_html else None, secrets=secrets)
        files.write("html", html)
    if pdf_page is not None:
        from hwadvisor.render.pdf import PdfUnavailable, render_pdf

        try:
            pdf = worker.result() if worker is not None else render_pdf(pdf_page)
        except PdfUnavailable as exc:
            done.warnings.append(f"no PDF: {exc}")
        else:
            files.write("pdf", pdf)
    done.files.extend(files.files)
    return done


def pdf_helper(formats: list[str]) -> PdfWorker | None:
    """A helper process for the PDF, forked now (before the database is opened: it then holds
    no database thread or lock): WeasyPrint loads there while the queries run here, and a
    layout of thousands of rows never holds up Ctrl-C or SIGTERM, which stop it at once. None
    when no PDF is asked for; where no helper can be forked the PDF is laid out here."""
    if "pdf" not in formats:
        return None
    from hwadvisor.render.pdf import PdfWorker

    worker = PdfWorker(isolate=True)
    worker.start()
    return worker
