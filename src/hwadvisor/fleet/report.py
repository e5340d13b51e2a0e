"""``fleet report``: the fleet on page one (charts of GPU models, capability by scenario and
findings; what needs attention), then one row per host. HTML, and PDF through WeasyPrint."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hwadvisor import __version__
from hwadvisor.fleet.store import Fleet
from hwadvisor.render.report import Written

#: The PDF lists at most this many hosts (the HTML lists all; the CSV export has every fact).
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


def _hosts(fleet: Fleet, limit: int | None) -> list[dict[str, Any]]:
    sql = (
        "SELECT host_key, hostname, effective_utc, cpu_model, cpu_usable_cpus, "
        "memory_total_bytes, gpu_models, driver_version, torch_version, capability_scenario, "
        "findings_error, findings_warning, duplicate_id, clock_note FROM hosts "
        "ORDER BY capability_scenario DESC, gpu_models NULLS LAST, hostname, host_key"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return fleet.query(sql)


def render_fleet_html(
    fleet: Fleet,
    data: dict[str, Any],
    *,
    host_limit: int | None = None,
    paper: str = "A4",
    salt: str | None = None,
) -> str:
    """The fleet page; with ``salt``, host names, machine ids and UUIDs are replaced by the
    same tokens the single-host reports use (see :mod:`hwadvisor.redact`)."""
    from hwadvisor.render.html import environment, render_template

    charts = [
        _bar_chart(
            "Capability by scenario",
            [
                (SCENARIO_TITLES.get(int(k), k) if k.isdigit() else k, n)
                for k, n in sorted(data["by_capability"])
            ],
            "hosts",
        ),
        _bar_chart("GPU models", [(k, n) for k, n in data["by_gpu_model"]], "GPUs"),
        _bar_chart("Findings", [(f"{f['title']}", f["hosts"]) for f in data["findings"]], "hosts"),
    ]
    hosts = _hosts(fleet, host_limit)
    if salt is not None:
        from hwadvisor.redact import redact_rows

        data, hosts = redact_rows(data, salt), redact_rows(hosts, salt)
    outlier_keys = {o["host_key"] for o in data["outliers"]}
    stale_keys = {s["host_key"] for s in data["stale"]}
    context = {
        "data": data,
        "charts": charts,
        "hosts": hosts,
        "hosts_cut": data["hosts"] - len(hosts),
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
) -> Written:
    """Write ``folder/fleet.html`` and ``.pdf`` (never over an existing file: ``fleet-2`` ...).

    As for one host's report: the PDF, the file that leaves the building, is redacted unless
    ``redact`` is false; ``redact=True`` redacts the HTML too."""
    from hwadvisor.errors import OutputError
    from hwadvisor.redact import resolve_salt
    from hwadvisor.render.jsonio import write_new_file
    from hwadvisor.render.report import _free_stem

    done = Written()
    redact_html, redact_pdf = bool(redact), redact is not False and "pdf" in formats
    salt: str | None = None
    if redact_html or redact_pdf:
        salt, why = resolve_salt()
        if why:
            done.warnings.append(why)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot be created: {exc.strerror or exc}") from exc
    stem = _free_stem(folder, stem, formats)
    if "html" in formats:
        html = render_fleet_html(fleet, data, salt=salt if redact_html else None)
        done.files.append(write_new_file(folder / f"{stem}.html", html))
    if "pdf" in formats:
        from hwadvisor.render.pdf import PdfUnavailable, render_pdf

        html = render_fleet_html(
            fleet, data, host_limit=PDF_HOST_ROWS, salt=salt if redact_pdf else None
        )
        try:
            pdf = render_pdf(html)
        except PdfUnavailable as exc:
            done.warnings.append(f"no PDF: {exc}")
        else:
            done.files.append(write_new_file(folder / f"{stem}.pdf", pdf))
    return done
