"""The HTML report: a self-contained page (inline CSS, charts as ``data:`` images) for a person
approving a purchase, printable to PDF.

Autoescaping is on for every template and no probed string is ever marked safe; charts are
embedded as base64 SVG images, so a device named ``<script>`` stays text. The output depends on
the profile alone (dates come from ``created_utc``), so the same profile gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hwadvisor.errors import InputError
from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import Benchmarks, BenchStatus, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import GpuInfo, Profile
from hwadvisor.model.serve import InferenceAdvice
from hwadvisor.present.answer import (
    answer,
    deadline_text,
    estimate_rows,
    machine_figures,
    scenario_titles,
)
from hwadvisor.present.serve import serve_context
from hwadvisor.render.charts import all_charts
from hwadvisor.render.summaries import (
    gpu_health,
    network_line,
    rule_evidence,
    system_line,
)
from hwadvisor.units import format_rate, human_bytes, human_duration, short_plan

PAPERS = ("A4", "Letter")
PACKAGE_TEMPLATES = "hwadvisor.templates"


def _packaged_source(name: str) -> tuple[str, str | None, Callable[[], bool]] | None:
    """Read a bundled template through importlib.resources (works from a wheel or a checkout)."""
    resource = files(PACKAGE_TEMPLATES).joinpath(name)
    if not resource.is_file():
        return None
    return resource.read_text(encoding="utf-8"), None, lambda: True


def _directory_source(
    folder: Path,
) -> Callable[[str], tuple[str, str | None, Callable[[], bool]] | None]:
    """A loader for an organization's template folder that reads through the one input reader
    (regular files, a size cap: a named pipe in the folder cannot hang a report)."""
    from jinja2.loaders import split_template_path

    from hwadvisor.inputfile import read_input

    def load(name: str) -> tuple[str, str | None, Callable[[], bool]] | None:
        path = folder.joinpath(*split_template_path(name))  # refuses "../" escapes
        if not path.exists():
            return None
        return read_input(path), str(path), lambda: True

    return load


_BUNDLED_ENV: list[Any] = []


def environment(template_dir: Path | None = None) -> Any:
    """The Jinja2 environment: ``template_dir`` first (an organization's copy), then the bundle.

    Sandboxed: a template reads the profile and calls the filters it is given, and nothing else
    (no attribute walk to ``__globals__``, no method that changes data), so a template folder
    handed around an organization cannot run code."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    loaders: list[jinja2.BaseLoader] = []
    if template_dir is not None:
        loaders.append(jinja2.FunctionLoader(_directory_source(template_dir)))
    loaders.append(jinja2.FunctionLoader(_packaged_source))
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "j2", "htm", "xml"),
            default_for_string=True,
            default=True,
        ),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["duration"] = human_duration
    env.filters["bytes"] = lambda n: "—" if n is None else human_bytes(n)
    env.filters["rate"] = format_rate
    env.filters["fact"] = brief_fact
    env.filters["plan"] = short_plan
    env.filters["gpu_health"] = gpu_health
    env.filters["evidence"] = rule_evidence
    return env


def _report_environment(template_dir: Path | None) -> Any:
    """:func:`environment`, the bundled one built once per process (its templates compile once
    for a report's HTML and its PDF); an organization's folder is read afresh each time."""
    if template_dir is not None:
        return environment(template_dir)
    if not _BUNDLED_ENV:
        _BUNDLED_ENV.append(environment())
    return _BUNDLED_ENV[0]


def show_fact(f: Fact[Any], fmt: Callable[[Any], str] = str) -> str:
    """A fact as text: the value, or "unknown (reason)"."""
    if f.value is None:
        return f"unknown ({f.reason})" if f.reason else "unknown"
    if isinstance(f.value, bool):
        return "yes" if f.value else "no"
    if isinstance(f.value, list):
        return ", ".join(str(v) for v in f.value) or "none"
    return fmt(f.value)


def brief_fact(f: Fact[Any]) -> str:
    """A fact in running text: its value, or just "unknown" (the appendix gives the reasons)."""
    return "unknown" if f.value is None else show_fact(f)


def _label(m: Measurement) -> str:
    return " ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x)


def _threads(count: int | None) -> str:
    return "? threads" if count is None else f"{count} thread{'s' if count != 1 else ''}"


def key_measurements(profile: Profile) -> list[dict[str, str]]:
    """The figures that justify the verdict, as the advice built them (the memory figure is a
    tile of page one already); without advice, the machine's own."""
    advice = profile.advice
    if advice is not None and advice.key_figures:
        figures = [f for f in advice.key_figures if not f.label.startswith("training memory")]
    else:
        figures = machine_figures(profile)
    return [{"label": f.label, "value": f.text, "detail": f.detail} for f in figures][:5]


def _known(*parts: Any) -> list[str]:
    return [str(p) for p in parts if p is not None and p != "" and p != []]


def _range(indices: list[int]) -> str:
    """[0, 1, 2, 5] → "0–2, 5"."""
    out: list[str] = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}–{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(out)


def _pcie(g: GpuInfo) -> str | None:
    """``gen 4 x16`` (with the maximum where it differs); None when nothing is known."""
    now = " ".join(
        _known(
            f"gen {g.pcie_generation.value}" if g.pcie_generation.value is not None else None,
            f"x{g.pcie_width.value}" if g.pcie_width.value is not None else None,
        )
    )
    top = " ".join(
        _known(
            f"gen {g.pcie_generation_max.value}"
            if g.pcie_generation_max.value is not None
            else None,
            f"x{g.pcie_width_max.value}" if g.pcie_width_max.value is not None else None,
        )
    )
    if now and top and top != now:
        return f"{now} (max {top})"
    return now or (f"max {top}" if top else None)


#: The GPU table's columns after the name: (key, heading).
GPU_COLUMNS = (
    ("memory", "memory"),
    ("capability", "compute capability"),
    ("power", "power limit"),
    ("pcie", "PCIe link"),
    ("health", "VBIOS, memory health"),
)


def gpu_table(profile: Profile) -> dict[str, Any]:
    """The GPUs with identical ones folded into one row ("8 × NVIDIA A100"); a GPU that differs
    gets its own row. A column nobody reported is left out and named once in ``not_reported``."""
    cells: list[tuple[GpuInfo, dict[str, str | None]]] = []
    for g in profile.gpus:
        vram = g.vram_total_bytes.value
        health = gpu_health(g)
        cells.append(
            (
                g,
                {
                    "name": g.name.value or "unknown GPU",
                    "backend": g.backend,
                    "memory": human_bytes(vram) if vram is not None else None,
                    "capability": (
                        str(g.compute_capability.value)
                        if g.compute_capability.value is not None
                        else None
                    ),
                    "power": (
                        f"{g.power_limit_watts.value:.0f} W"
                        if g.power_limit_watts.value is not None
                        else None
                    ),
                    "pcie": _pcie(g),
                    "health": None if health == "VBIOS unknown" else health,
                },
            )
        )
    shown = [
        (key, head)
        for key, head in GPU_COLUMNS
        if any(c[key] is not None for g, c in cells if not g.lost)
    ]
    rows: list[dict[str, Any]] = []
    for g, c in cells:
        if g.lost:
            rows.append({"indices": [g.index], "lost": True, "cells": c})
            continue
        same = next(
            (r for r in rows if not r["lost"] and r["cells"] == c),
            None,
        )
        if same is None:
            rows.append({"indices": [g.index], "lost": False, "cells": c})
        else:
            same["indices"].append(g.index)
    for r in rows:
        r["count"] = len(r["indices"])
        r["where"] = _range(sorted(r["indices"]))
        r["values"] = [r["cells"][key] or "—" for key, _ in shown]
    missing = [head for key, head in GPU_COLUMNS if (key, head) not in shown]
    return {
        "rows": rows,
        "headings": [head for _, head in shown],
        "not_reported": missing if profile.gpus else [],
    }


def gpu_summary(profile: Profile) -> str:
    """``8 × NVIDIA A100-SXM4-40GB (40.0 GiB each)``; "none" without a GPU."""
    parts = []
    for r in gpu_table(profile)["rows"]:
        if r["lost"]:
            parts.append("1 lost GPU")
            continue
        c = r["cells"]
        mem = f" ({c['memory']}{' each' if r['count'] > 1 else ''})" if c["memory"] else ""
        parts.append(f"{r['count']} × {c['name']}{mem}")
    return "; ".join(parts) or "none"


def no_gpu_line(profile: Profile) -> str:
    """What the report says when no GPU was found. The driver is named only when a GPU is on the
    PCI bus without one; a machine with no GPU is not told to install a GPU driver."""
    on_bus = profile.platform.pci_display_devices
    nvidia = [d for d in on_bus if d.vendor == "nvidia"]
    if nvidia and profile.nvml.message:
        return (
            f"No usable GPU: {len(nvidia)} NVIDIA device(s) on the PCI bus, but "
            f"{profile.nvml.message}"
        )
    return "No GPU found."


def machine_table(profile: Profile) -> dict[str, Any]:
    """The machine's rows, each made of the parts that are known; a row with nothing known is
    left out and named once in ``not_reported``."""
    c = profile.cpu
    mem = profile.memory
    plat = profile.platform
    cores = ", ".join(
        _known(
            f"{c.physical_cores.value} physical" if c.physical_cores.value is not None else None,
            f"{c.logical_cores.value} logical" if c.logical_cores.value is not None else None,
            f"{c.usable_cpus.value} usable" if c.usable_cpus.value is not None else None,
            f"{c.sockets.value} socket(s)" if c.sockets.value is not None else None,
            f"{c.numa_nodes.value} NUMA node(s)" if c.numa_nodes.value is not None else None,
        )
    )
    arch = " / ".join(_known(c.architecture.value, c.microarchitecture.value))
    cpu = " ".join(
        _known(
            c.model_name.value,
            None
            if c.vendor.value
            and c.model_name.value
            and c.vendor.value.lower() in c.model_name.value.lower()
            else f"({c.vendor.value})"
            if c.vendor.value and c.model_name.value
            else c.vendor.value,
        )
    )
    if arch:
        cpu = f"{cpu}, {arch}" if cpu else arch
    memory = ", ".join(
        _known(
            f"{human_bytes(mem.total_bytes.value)} total"
            if mem.total_bytes.value is not None
            else None,
            f"{human_bytes(mem.available_bytes.value)} available"
            if mem.available_bytes.value is not None
            else None,
        )
    )
    os_parts = _known(
        plat.distribution.value,
        f"kernel {plat.kernel.value}" if plat.kernel.value else None,
        f"container: {show_fact(plat.container)}" if plat.container.value is not None else None,
    )
    python = " ".join(_known(plat.python_version.value, plat.python_implementation.value))
    isa = show_fact(c.isa_features) if c.isa_features.value is not None else ""
    candidates = [
        ("host", profile.host.hostname.value or ""),
        ("system", system_line(profile.system) or ""),
        ("CPU", cpu),
        ("cores", cores),
        ("DL instructions", isa),
        ("memory", memory),
        ("OS", ", ".join(os_parts)),
        ("Python", python),
        ("network", network_line(profile.network) or ""),
    ]
    return {
        "rows": [(k, v) for k, v in candidates if v],
        "not_reported": [k for k, v in candidates if not v],
    }


def framework_table(profile: Profile) -> dict[str, Any]:
    """PyTorch and its CUDA libraries, known parts only (see :func:`machine_table`)."""
    t = profile.frameworks.torch
    if not t.installed:
        return {"rows": [("PyTorch", brief_fact(t.version))], "not_reported": []}
    version = " ".join(
        _known(t.version.value, f"({t.build.value} build)" if t.build.value else None)
    )
    libs = ", ".join(
        _known(
            f"CUDA runtime {t.cuda_runtime_version.value}"
            if t.cuda_runtime_version.value
            else None,
            f"cuDNN {t.cudnn_version.value}" if t.cudnn_version.value else None,
            f"NCCL {t.nccl_version.value}" if t.nccl_version.value else None,
        )
    )
    kernels = ", ".join(
        _known(
            t.cpu_capability.value,
            f"{t.num_threads.value} threads" if t.num_threads.value is not None else None,
        )
    )
    candidates = [
        ("PyTorch", version),
        ("libraries", libs),
        (
            "CUDA available",
            show_fact(t.cuda_available) if t.cuda_available.value is not None else "",
        ),
        ("CPU kernels", kernels),
    ]
    return {
        "rows": [(k, v) for k, v in candidates if v],
        "not_reported": [k for k, v in candidates if not v],
    }


def _walk_facts(model: BaseModel, prefix: str) -> Iterator[tuple[str, Fact[Any]]]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        path = f"{prefix}.{name}" if prefix else name
        if isinstance(value, Fact):
            yield path, value
        elif isinstance(value, BaseModel):
            yield from _walk_facts(value, path)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _walk_facts(item, f"{path}[{i}]")


_INDEXED = re.compile(r"^(.*?)\[(\d+)\]\.(.*)$")


def raw_facts(profile: Profile) -> list[dict[str, str]]:
    """Every fact of the profile (benchmarks and advice excluded: they have their own tables).

    Identical facts of several devices (8 GPUs of one model) are one row, ``gpus[0-7].name``:
    an 8-GPU appendix stays a few pages, not twenty.
    """
    rows: list[dict[str, str]] = []
    groups: dict[str, list[dict[str, str]]] = {}
    for path, f in _walk_facts(profile, ""):
        if path.startswith(("benchmarks", "advice")):
            continue
        row = {
            "path": path,
            "value": show_fact(f) if f.value is not None else "—",
            "source": f.source.value if f.source is not None else "—",
            "reason": f.reason or "",
        }
        match = _INDEXED.match(path)
        if match is None:
            rows.append(row)
            continue
        key = f"{match.group(1)}[*].{match.group(3)}"
        if key not in groups:
            groups[key] = []
            rows.append({"path": key, "value": "", "source": "", "reason": ""})  # placeholder
        groups[key].append({**row, "index": match.group(2)})
    out = []
    for row in rows:
        members = groups.get(row["path"])
        if members is None:
            out.append(row)
            continue
        first = members[0]
        same = all(
            (m["value"], m["source"], m["reason"])
            == (first["value"], first["source"], first["reason"])
            for m in members
        )
        if same and len(members) > 1:
            span = f"{members[0]['index']}-{members[-1]['index']}"
            out.append({**first, "path": row["path"].replace("[*]", f"[{span}]")})
        else:
            out.extend({k: v for k, v in m.items() if k != "index"} for m in members)
    return out


def appendix_facts(profile: Profile) -> dict[str, Any]:
    """The appendix: known facts as table rows, and the unknown ones named once per reason
    ("not in collect_env output: cpu.vendor, cpu.model_name, …") instead of a row each. A sparse
    imported profile stays a page, and the PDF renders in a fraction of the time."""
    known: list[dict[str, str]] = []
    unknown: dict[str, list[str]] = {}
    for row in raw_facts(profile):
        if row["value"] == "—":
            unknown.setdefault(row["reason"] or "no reason given", []).append(row["path"])
        else:
            known.append(row)
    return {
        "known": known,
        "unknown": [{"reason": r, "paths": ", ".join(paths)} for r, paths in unknown.items()],
    }


#: From this many GPUs on, each case is one row with the spread across GPUs (an 8-GPU table
#: stays readable, and the PDF short); every GPU's figure is in the JSON.
GROUP_GPUS_FROM = 3


def _grouped(bench: Benchmarks) -> list[tuple[Measurement, str | None]]:
    """The measurements, GPU cases of many GPUs folded into one row: the median GPU's figure,
    with a note giving the range and the device list."""
    gpu_devices = sorted({m.device for m in bench.measurements if m.device.startswith("cuda")})
    if len(gpu_devices) < GROUP_GPUS_FROM:
        return [(m, None) for m in bench.measurements]
    out: list[tuple[Measurement, str | None]] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for m in bench.measurements:
        if not m.device.startswith("cuda"):
            out.append((m, None))
            continue
        key = (m.case, m.precision, m.variant)
        if key in seen:
            continue
        seen.add(key)
        same = [
            x
            for x in bench.measurements
            if (x.case, x.precision, x.variant) == key and x.device.startswith("cuda")
        ]
        ok = sorted(
            (x for x in same if x.status == BenchStatus.OK and x.best is not None),
            key=lambda x: x.best or 0.0,
        )
        if not ok:
            out.append((same[0], f"on {len(same)} GPUs"))
            continue
        middle = ok[len(ok) // 2]
        note = (
            f"{len(ok)} of {len(same)} GPUs; best from {format_rate(ok[0].best, m.unit)} "
            f"to {format_rate(ok[-1].best, m.unit)}; row shows the median GPU"
        )
        out.append((middle.model_copy(update={"device": f"cuda:0-{len(gpu_devices) - 1}"}), note))
    return out


def busy_warning(bench: Benchmarks | None, advice: Advice | None = None) -> str | None:
    """Page one's warning when figures were taken on a busy or disturbed machine; what the
    estimates made of them is what the advice says it did (set aside, or scaled from the free
    cores), and nothing about estimates where there are none."""
    if bench is None:
        return None
    disturbed = [m for m in bench.measurements if m.disturbances]
    if not disturbed:
        return None
    cpu = [m for m in disturbed if m.device == "cpu"]
    parts = []
    if cpu:
        load = bench.load
        if load is not None and load.other_cpus_before is not None and load.cpus:
            held = f"other processes kept {load.other_cpus_before:.1f} of {load.cpus} CPUs busy"
        else:
            held = "other processes were using the CPUs"
        threads = min((m.threads for m in cpu if m.threads), default=None)
        parts.append(
            f"{held} while it was measured"
            + (
                f" (measured with {threads} of {load.usable_cpus} threads)"
                if load and threads and load.usable_cpus and threads < load.usable_cpus
                else ""
            )
        )
    gpu = sorted(
        {d.value.replace("_", " ") for m in disturbed if m.device != "cpu" for d in m.disturbances}
    )
    if gpu:
        parts.append(f"the GPU figures were disturbed ({', '.join(gpu)})")
    caveats = " ".join(advice.caveats) if advice is not None else ""
    uses = []
    if "scaled to" in caveats:
        uses.append("the estimates scale the figures from the free cores to all the CPUs")
    if "set aside" in caveats:
        uses.append(
            "figures set aside are shown but not used: those estimates rest on catalog figures"
        )
    if advice is None:
        use = "The figures are shown as measured."
    elif uses:
        use = "; ".join(uses).capitalize() + "."
    else:
        use = "The estimates did not need those figures."
    return (
        "The machine was busy: "
        + "; ".join(parts)
        + f". {use} For figures of its own, stop other jobs and scan again (hwadvisor scan)."
    )


def measurement_rows(bench: Benchmarks | None) -> list[dict[str, str]]:
    """The measurements table: one row of strings per case, notes kept with their row."""
    if bench is None:
        return []
    rows = []
    for m, group_note in _grouped(bench):
        ok = m.status == BenchStatus.OK
        spread = f" ±{m.spread * 100:.0f} %" if m.spread is not None else ""
        if m.efficiency is not None:
            eff = f"{m.efficiency:.0%} of {format_rate(m.peak, m.unit)}"
        else:
            eff = "—"
        notes = [n for n in (m.message, m.efficiency_note if m.efficiency is None else None) if n]
        if group_note:
            notes.insert(0, group_note)
        if m.disturbance_note and m.free_cores_only:
            notes.append(f"scaled to all CPUs by the advice: {m.disturbance_note}")
        elif m.disturbance_note:
            notes.append(f"not used by the advice: {m.disturbance_note}")
        elif m.confidence.value == "low":
            notes.append("low confidence: not used by the advice")
        rows.append(
            {
                "device": m.device,
                "case": _label(m),
                "status": m.status.value,
                "best": format_rate(m.best, m.unit) if ok else m.status.value,
                "median": f"{format_rate(m.median, m.unit)}{spread}" if ok else "",
                "efficiency": eff,
                "efficiency_pct": (
                    f"{min(max(m.efficiency, 0.0), 1.0) * 100:.0f}"
                    if m.efficiency is not None
                    else ""
                ),
                "notes": "; ".join(notes),
            }
        )
    return rows


_CHART_CACHE: dict[str, Any] = {}


def _charts(profile: Profile) -> Any:
    """The charts, drawn once per content: a report's HTML and its (redacted) PDF share them,
    and charts carry no identifying data."""
    key = (profile.benchmarks.model_dump_json() if profile.benchmarks else "") + (
        profile.advice.model_dump_json() if profile.advice else ""
    )
    if key not in _CHART_CACHE:
        _CHART_CACHE.clear()  # one report at a time: keep memory flat
        _CHART_CACHE[key] = all_charts(profile.benchmarks, profile.advice)
    return _CHART_CACHE[key]


def render_html(
    profile: Profile,
    *,
    source_sha256: str,
    paper: str = "A4",
    template_dir: Path | None = None,
    serving: InferenceAdvice | None = None,
) -> str:
    """The report for ``profile`` as one self-contained HTML document; with ``serving`` (the
    inference answer for one model) that answer is its first page.

    ``source_sha256`` is the digest of the profile file the report was made from (printed in the
    appendix); ``paper`` is ``A4`` or ``Letter``; ``template_dir`` holds an organization's
    templates or CSS, looked up before the bundled ones.
    """
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, not {paper!r}")
    env = _report_environment(template_dir)
    advice = profile.advice
    context = {
        "p": profile,
        "advice": advice,
        "paper": paper,
        "date": profile.created_utc[:10],
        "created_utc": profile.created_utc,
        "tool_version": profile.tool.version,
        "schema_version": profile.schema_version,
        "source_sha256": source_sha256,
        "answer": answer(advice) if advice is not None else None,
        "estimate_rows": estimate_rows(advice) if advice is not None else [],
        "key_measurements": key_measurements(profile),
        "busy_warning": busy_warning(profile.benchmarks, advice),
        "imported_from": imported_from(profile),
        "measurements": measurement_rows(profile.benchmarks),
        "charts": _charts(profile),
        "facts": appendix_facts(profile),
        "deadline": deadline_text(advice) if advice is not None else "",
        "scenario_titles": scenario_titles(),
        "machine": machine_table(profile),
        "frameworks": framework_table(profile),
        "gpu_table": gpu_table(profile),
        "gpu_summary": gpu_summary(profile),
        "no_gpu_line": no_gpu_line(profile),
        "serving": serve_context(serving) if serving is not None else None,
    }
    return render_template(env, "report.html.j2", context)


def render_template(env: Any, name: str, context: dict[str, Any]) -> str:
    """Render ``name``; a broken template (an organization's copy) is one input-error line
    naming its file and line, never an internal error."""
    import jinja2
    from jinja2.exceptions import SecurityError

    try:
        text: str = env.get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        where = f"{exc.filename or exc.name or name}:{exc.lineno}"
        raise InputError(f"template {where}: syntax error: {exc.message}") from exc
    except SecurityError as exc:
        raise InputError(
            f"template {_template_line(exc, name)}: not allowed in a template: {exc}"
        ) from exc
    except jinja2.TemplateError as exc:
        raise InputError(f"template {_template_line(exc, name)}: {exc}") from exc
    return text


def _template_line(exc: BaseException, name: str) -> str:
    """``file:line`` of the innermost template frame of ``exc`` (Jinja rewrites tracebacks so
    that template code shows with its own file and line)."""
    where = name
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith((".j2", ".html", ".htm", ".css")) or filename.startswith("<template"):
            where = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def imported_from(profile: Profile) -> str | None:
    """For an imported profile, the files and formats it was read from (no hardware was
    probed or measured); None for a scan."""
    if profile.imported is None:
        return None
    files = ", ".join(f"{Path(f.file).name} ({f.format})" for f in profile.imported.files)
    return f"Imported from {files}: nothing was probed or measured on the machine."
