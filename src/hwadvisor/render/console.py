"""The terminal summary of a profile, for a person, not for a parser: the verdict and the few
figures behind it first, then the machine, the stack, the measurements and the details.

Every probed string is passed to rich as a ``Text`` (never as markup), so a device named
``[red]x[/red]`` or ``<script>`` is shown as it is. Tables fit 80 columns without splitting a
value: figures stay on one line (:class:`Flow`), long notes become numbered footnotes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement as Measure
from rich.table import Table
from rich.text import Text

from hwadvisor.model.advice import Advice, KeyFigure
from hwadvisor.model.bench import BenchStatus, Confidence, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import Finding, GpuInfo, NvmlStatus, ProbeStatus, Profile, Severity
from hwadvisor.present.answer import (
    CLASS_WORDS,
    answer,
    deadline_text,
    estimate_rows,
    machine_figures,
    recommendation_text,
    scenario_titles,
    verdict_of,
)
from hwadvisor.render.summaries import (
    network_line,
    rule_evidence,
    system_line,
)
from hwadvisor.units import (
    NONE,
    fact_text,
    format_rate,
    human_bytes,
    human_duration,
    money,
)

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}

#: Below this width the tables drop or merge columns.
WIDE = 100

# --------------------------------------------------------------------------------------------
# Running text that never splits a value

_UNITS = (
    r"%|°C|W|MHz|GHz|ms|min|s|h|days?|years?|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB|"
    r"[KMGTP]?FLOP/s|[KMGT]?B/s|Gb/s|samples/s|TFLOPS|GFLOPS"
)
#: A figure with its unit, or a range of them: "26.7 h", "671 days–5.1 years", "5–13.3 h",
#: "≤ 24 h", "±2%", "×4", "batch 1".
VALUE = re.compile(
    rf"(?:[≤≥<>~≈±×] ?|batch |n ≈ )?\d[\d,.]*(?: ?(?:{_UNITS}))?"
    rf"(?:–\d[\d,.]*(?: ?(?:{_UNITS}))?)?(?![\w/])"
)


def _tokens(plain: str, whole: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Words as (start, end) offsets with their trailing blanks: a line may break after one.
    A figure with its unit, and each ``whole`` span, is one word."""
    keep = [False] * (len(plain) + 1)
    for start, end in [*((m.start(), m.end()) for m in VALUE.finditer(plain)), *whole]:
        for i in range(start, end):
            keep[i] = True
    tokens: list[tuple[int, int]] = []
    start = i = 0
    while i < len(plain):
        if plain[i] == " " and not keep[i]:
            while i < len(plain) and plain[i] == " " and not keep[i]:
                i += 1
            tokens.append((start, i))
            start = i
        else:
            i += 1
    if start < len(plain):
        tokens.append((start, len(plain)))
    return tokens


def _paragraphs(plain: str) -> list[tuple[int, str]]:
    out = []
    start = 0
    for part in plain.split("\n"):
        out.append((start, part))
        start += len(part) + 1
    return out


def _fit(text: str, room: int) -> int:
    n = 0
    while n < len(text) and cell_len(text[: n + 1]) <= room:
        n += 1
    return max(1, n)


def _breaks(part: str, whole: list[tuple[int, int]], width: int, indent: int) -> list[int]:
    """Offsets where new lines start, greedily: as many words on a line as fit."""
    breaks: list[int] = []
    used, room = 0, width
    for start, end in _tokens(part, whole):
        size = cell_len(part[start:end].rstrip())
        if used and used + size > room:
            breaks.append(start)
            used, room = 0, max(1, width - indent)
        if not used and size > room:  # wider than a line: folded where it must be
            cut = start
            while cell_len(part[cut:end].rstrip()) > room:
                cut += _fit(part[cut:end], room)
                breaks.append(cut)
                room = max(1, width - indent)
            used = cell_len(part[cut:end])
            continue
        used += cell_len(part[start:end])
    return breaks


class Flow:
    """``text`` wrapped to the width it is given, between words only: a figure with its unit
    ("26.7 h", "16.1–41.7 h", "9.5 GiB") and each ``whole`` span (offsets into the text) stay
    on one line. Lines after the first start with ``indent`` spaces."""

    def __init__(
        self, text: Text | str, *, indent: int = 0, whole: Iterable[tuple[int, int]] = ()
    ) -> None:
        self.text = text if isinstance(text, Text) else Text(text)
        self.indent = indent
        self.whole = list(whole)

    def lines(self, width: int) -> list[Text]:
        lines: list[Text] = []
        for offset, part in _paragraphs(self.text.plain):
            whole = [
                (s - offset, e - offset)
                for s, e in self.whole
                if offset <= s and e <= offset + len(part)
            ]
            edges = [0, *_breaks(part, whole, width, self.indent), len(part)]
            for n, (a, b) in enumerate(itertools.pairwise(edges)):
                line = self.text[offset + a : offset + b]
                line.rstrip()
                lines.append(Text(" " * self.indent) + line if n else line)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        out = Text("\n").join(self.lines(max(1, options.max_width)))
        out.no_wrap = True
        out.overflow = "fold"
        yield out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measure:
        widest = longest = 1
        for offset, part in _paragraphs(self.text.plain):
            whole = [
                (s - offset, e - offset)
                for s, e in self.whole
                if offset <= s < offset + len(part) + 1
            ]
            widest = max(widest, cell_len(part))
            for a, b in _tokens(part, whole):
                longest = max(longest, cell_len(part[a:b].rstrip()))
        return Measure(min(longest + self.indent, widest), widest).clamp(
            max_width=options.max_width
        )


def _flow(*parts: str | tuple[str, str] | Text, indent: int = 0, whole: bool = False) -> Flow:
    """A Flow from pieces (``whole``: every piece is kept on one line)."""
    text = Text()
    spans = []
    for part in parts:
        start = len(text)
        if isinstance(part, tuple):
            text.append(part[0], style=part[1])
        else:
            text.append(part)
        piece = text.plain[start:]
        if whole and piece.strip():  # the words, not the blanks around them: a break may come there
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
    return Flow(text, indent=indent, whole=spans)


def _bullets(lines: Iterable[str], style: str = "") -> list[RenderableType]:
    return [Flow(Text("• " + _named(line), style=style), indent=2) for line in lines]


# --------------------------------------------------------------------------------------------
# Facts, said briefly


def show(f: Fact[Any], fmt: Callable[[Any], str] = str, *, why: bool = False) -> Text:
    """A fact's value, or a dim "unknown" (with the reason when ``why``)."""
    text = fact_text(f, fmt, why=why)
    return Text(text, style="dim") if f.value is None else Text(text)


@dataclass
class Unknown:
    """A row none of whose facts is known; rows that share a reason are said once."""

    reason: str | None


Row = tuple[str, "Text | Unknown"]


def _parts(*items: tuple[Fact[Any], Callable[[Any], str], str], sep: str = ", ") -> Text | Unknown:
    """Known parts of a row, each through its template ("{} base"); an unknown part is named
    briefly ("max unknown") when it has a name; Unknown when no part is known."""
    if not any(f.known for f, _, _ in items):
        return Unknown(next((f.reason for f, _, _ in items if f.reason), None))
    out = []
    for f, fmt, template in items:
        if f.known:
            out.append(template.format(fact_text(f, fmt)))
        elif template.strip() != "{}":
            out.append(template.replace("{}", "").strip() + " unknown")
    return Text(sep.join(out))


def _titled(title: str, *, style: str = "bold", header: bool = True) -> Table:
    """A section's table: its title flush left, a rule under the header, no outer padding."""
    return Table(
        title=title,
        title_justify="left",
        title_style=style,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_header=header,
    )


def _kv_table(title: str, rows: Iterable[Row]) -> RenderableType:
    """A titled key–value table; rows that are unknown for the same reason become one "not
    known" row, and a table with nothing known one line."""
    rows = list(rows)
    known = [(k, v) for k, v in rows if isinstance(v, Text)]
    by_reason: dict[str | None, list[str]] = {}
    for key, value in rows:
        if isinstance(value, Unknown):
            by_reason.setdefault(value.reason, []).append(key)
    if not known and len(by_reason) == 1:
        reason = next(iter(by_reason)) or "not reported"
        line = Text.assemble((title, "bold"), ": ", (f"unknown ({reason})", "dim"))
        return Group(Flow(line), Text(""))
    table = _titled(title, header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    for key, value in rows:
        if isinstance(value, Text):
            table.add_row(key, Flow(value))
        elif len(by_reason.get(value.reason, [])) == 1:
            why = f"unknown ({value.reason})" if value.reason else "unknown"
            table.add_row(key, Flow(Text(why, style="dim")))
    for shared_reason, keys in by_reason.items():
        if len(keys) > 1:
            listed = ", ".join(keys) + (f" ({shared_reason})" if shared_reason else "")
            table.add_row("not known", Flow(Text(listed, style="dim")))
    return table


def _mhz(v: Any) -> str:
    return f"{float(v):,.0f} MHz"


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cpu_table(p: Profile) -> RenderableType:
    c = p.cpu
    cores = _parts(
        (c.physical_cores, str, "{} physical"),
        (c.logical_cores, str, "{} logical"),
        (c.usable_cpus, str, "{} usable"),
    )
    if isinstance(cores, Text) and c.performance_cores.value is not None:
        cores.append(f" ({c.performance_cores.value} P + {c.efficiency_cores.value} E)")
    # The vendor only where the model name does not already say it ("AMD EPYC", not
    # "AMD EPYC (AMD)"; "Neoverse-N1 (ARM)").
    vendor = c.vendor.value if c.vendor.known else None
    said = vendor is not None and vendor.lower() in (c.model_name.value or "").lower()
    model: Text | Unknown = (
        Text.assemble(show(c.model_name), f" ({vendor})" if vendor and not said else "")
        if c.model_name.known
        else _parts((c.vendor, str, "{}"))
    )
    virtual: Text | Unknown
    if not c.virtualized.known:
        virtual = Unknown(c.virtualized.reason)
    elif not c.virtualized.value:
        virtual = Text("no")
    elif c.hypervisor.value is None:
        virtual = Text.assemble("yes ", ("(hypervisor not named)", "dim"))
    else:
        virtual = Text(f"yes ({c.hypervisor.value})")
    isa: Text | Unknown = (
        show(c.isa_features) if c.isa_features.known else Unknown(c.isa_features.reason)
    )
    return _kv_table(
        "CPU",
        [
            ("model", model),
            ("architecture", _parts((c.architecture, str, "{}"), (c.microarchitecture, str, "{}"))),
            ("cores", cores),
            (
                "sockets / NUMA",
                _parts(
                    (c.sockets, lambda n: _plural(n, "socket"), "{}"),
                    (c.numa_nodes, lambda n: _plural(n, "NUMA node"), "{}"),
                ),
            ),
            (
                "frequency",
                _parts(
                    (c.base_frequency_mhz, _mhz, "{} base"), (c.max_frequency_mhz, _mhz, "{} max")
                ),
            ),
            ("DL instructions", isa),
            (
                "caches",
                _parts(
                    (c.l2_cache_bytes, human_bytes, "L2 {}"),
                    (c.l3_cache_bytes, human_bytes, "L3 {}"),
                ),
            ),
            ("virtualised", virtual),
        ],
    )


def _single(f: Fact[Any], fmt: Callable[[Any], str] = str) -> Text | Unknown:
    return show(f, fmt) if f.known else Unknown(f.reason)


def _system_table(p: Profile) -> RenderableType:
    m, s, pl = p.memory, p.storage, p.platform
    memory = _parts(
        (m.total_bytes, human_bytes, "{} total"), (m.available_bytes, human_bytes, "{} available")
    )
    if isinstance(memory, Text) and m.cgroup_limit_bytes.value is not None:
        memory.append(f", container limit {human_bytes(m.cgroup_limit_bytes.value)}")
    board = system_line(p.system)
    links = network_line(p.network)
    os_row = (
        Text.assemble(
            show(pl.distribution), f" (kernel {pl.kernel.value})" if pl.kernel.known else ""
        )
        if pl.distribution.known
        else _parts((pl.os, str, "{}"), (pl.kernel, str, "kernel {}"), sep=" ")
    )
    disk = (
        Text.assemble(
            show(s.free_bytes, human_bytes), f" at {s.path.value}" if s.path.known else ""
        )
        if s.free_bytes.known
        else Unknown(s.free_bytes.reason)
    )
    network: Text | Unknown
    if links:
        network = Text(links)
    elif p.network.reason:
        network = Unknown(p.network.reason)
    else:
        network = Text("no physical interface found", style="dim")
    rows: list[Row] = [
        ("host", _single(p.host.hostname)),
        ("system", Text(board) if board else Unknown(p.system.product.reason)),
        ("OS", os_row),
        (
            "Python",
            _parts((pl.python_version, str, "{}"), (pl.python_implementation, str, "{}"), sep=" "),
        ),
        ("container", _single(pl.container)),
        ("memory", memory),
        ("swap", _single(m.swap_total_bytes, human_bytes)),
        ("disk free", disk),
        ("network", network),
    ]
    if pl.wsl.value:
        rows.append(("WSL", Text("yes")))
    if pl.rosetta.value:
        rows.append(("Rosetta", Text("Python runs translated (x86_64 on Apple silicon)")))
    for key, value in pl.visibility_env.items():
        rows.append((key, Text(repr(value))))
    return _kv_table("Machine", rows)


# --------------------------------------------------------------------------------------------
# GPUs: identical ones folded into one row


def _span(indices: list[int]) -> str:
    """[0, 1, 2, 3, 5] → "0–3, 5"."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def _pcie(g: GpuInfo) -> str:
    """ "4.0 x16", or "3.0 x8 (max 4.0 x16)" for a link below its best; "" when unknown."""

    def link(gen: Fact[Any], width: Fact[Any]) -> str:
        parts = []
        if gen.known:
            parts.append(f"gen {gen.value}")
        if width.known:
            parts.append(f"x{width.value}")
        return " ".join(parts)

    now = link(g.pcie_generation, g.pcie_width)
    best = link(g.pcie_generation_max, g.pcie_width_max)
    if now and best and best != now:
        return f"{now} (max {best})"
    return now or best


def _gpu_cells(g: GpuInfo) -> dict[str, str]:
    vram, power, capability = (
        g.vram_total_bytes.value,
        g.power_limit_watts.value,
        g.compute_capability.value,
    )
    return {
        "name": g.name.value or "unknown GPU",
        "backend": g.backend,
        "memory": human_bytes(vram) if vram is not None else "",
        "capability": str(capability) if capability is not None else "",
        "power": f"{float(power):.0f} W" if power is not None else "",
        "pcie": _pcie(g),
    }


_GPU_COLUMNS = (
    ("memory", "memory"),
    ("capability", "capability"),
    ("power", "power limit"),
    ("temp", "temp"),
    ("pcie", "PCIe link"),
)


def _gpu_table(p: Profile) -> RenderableType:
    if not p.gpus:
        return _kv_table("GPUs", [("none found", Text(_no_gpu_note(p), style="dim"))])
    groups: list[tuple[dict[str, str], list[GpuInfo]]] = []
    for g in p.gpus:
        cells = _gpu_cells(g)
        same = next(
            (gr for gr in groups if not g.lost and gr[0] == cells and not gr[1][0].lost), None
        )
        if same is None:
            groups.append((cells, [g]))
        else:
            same[1].append(g)
    rows = []
    for cells, members in groups:
        temps = sorted(t for g in members if (t := g.temperature_c.value) is not None)
        temp = ""
        if temps:
            temp = f"{temps[0]} °C" if temps[0] == temps[-1] else f"{temps[0]}–{temps[-1]} °C"
        rows.append((cells, members, {**cells, "temp": temp}))
    shown = [(key, head) for key, head in _GPU_COLUMNS if any(r[2][key] for r in rows)]
    missing = [head for key, head in _GPU_COLUMNS if (key, head) not in shown]
    backends = {g.backend for g in p.gpus}
    table = _titled("GPUs")
    table.add_column("#", no_wrap=True)
    table.add_column("GPU")
    for _, head in shown:
        table.add_column(head, no_wrap=True)
    for cells, members, values in rows:
        where = _span([g.index for g in members])
        if members[0].lost:
            table.add_row(
                where, Text("GPU lost (fell off the bus)", style="bold red"), *["" for _ in shown]
            )
            continue
        count = f"{len(members)} × " if len(members) > 1 else ""
        name = Text(count + cells["name"])
        if len(backends) > 1:
            name.append(f" ({cells['backend']})", style="dim")
        table.add_row(
            where,
            Flow(name),
            *[Text(values[key] or NONE, style="" if values[key] else "dim") for key, _ in shown],
        )
    notes: list[Text] = []
    nv = p.nvml
    if nv.driver_version.value is not None:
        cuda = f", CUDA {nv.cuda_driver_version.value}" if nv.cuda_driver_version.known else ""
        notes.append(Text(f"NVIDIA driver {nv.driver_version.value}{cuda}"))
    if missing:
        notes.append(Text(f"not known for these GPUs: {', '.join(missing)}", style="dim"))
    if not notes:
        return table
    return Group(table, *[Flow(n) for n in notes], Text(""))


def _no_gpu_note(p: Profile) -> str:
    """Why there is no GPU: no hardware, or hardware the drivers do not show."""
    on_bus = [f"{d.vendor} {d.device_id}" for d in p.platform.pci_display_devices]
    evidence = bool(on_bus) or bool(p.platform.nvidia_device_nodes.value)
    if p.nvml.status in (NvmlStatus.LIBRARY_NOT_FOUND, NvmlStatus.NOT_INSTALLED) and not evidence:
        return "no GPU on the PCI bus and no NVIDIA driver"
    bus = f"PCI display devices: {', '.join(on_bus)}; " if on_bus else ""
    return f"{bus}NVML: {p.nvml.message or p.nvml.status.value}"


# --------------------------------------------------------------------------------------------
# The framework stack


def _is_mac(p: Profile) -> bool | None:
    os_name = (p.platform.os.value or "").lower()
    if not os_name:
        return None
    return os_name in ("darwin", "macos", "mac os x") or os_name.startswith("mac")


def _stack_table(p: Profile) -> RenderableType:
    t = p.frameworks.torch
    if not t.installed:
        return _kv_table("Framework stack", [("PyTorch", _single(t.version))])
    version: Text | Unknown = (
        Text.assemble(show(t.version), f" ({t.build.value} build)" if t.build.known else "")
        if t.version.known
        else Unknown(t.version.reason)
    )
    rows: list[Row] = [
        ("PyTorch", version),
        (
            "CPU kernels",
            _parts(
                (t.cpu_capability, str, "{}"), (t.num_threads, lambda n: _plural(n, "thread"), "{}")
            ),
        ),
    ]
    if t.build.value == "cuda":
        rows += [
            (
                "CUDA / cuDNN / NCCL",
                _parts(
                    (t.cuda_runtime_version, str, "CUDA {}"),
                    (t.cudnn_version, str, "cuDNN {}"),
                    (t.nccl_version, str, "NCCL {}"),
                ),
            ),
            (
                "CUDA available",
                Text.assemble(
                    show(t.cuda_available),
                    f" ({_plural(t.device_count.value, 'device')})" if t.device_count.known else "",
                )
                if t.cuda_available.known
                else Unknown(t.cuda_available.reason),
            ),
            ("arch list", _single(t.arch_list)),
        ]
    elif t.build.value == "rocm":
        rows.append(("ROCm/HIP", _single(t.hip_version)))
        rows.append(("GPU available", _single(t.cuda_available)))
    mac = _is_mac(p)
    # MPS exists on macOS only; XPU where an Intel GPU can be: shown where they can be there.
    if mac or (mac is None and (t.mps_built.value or t.mps_available.value)):
        rows.append(
            (
                "MPS (Apple)",
                _parts((t.mps_built, str, "built {}"), (t.mps_available, str, "available {}")),
            )
        )
    if not mac and (
        t.xpu_available.value or t.build.value == "xpu" or any(g.backend == "xpu" for g in p.gpus)
    ):
        rows.append(("XPU (Intel)", _single(t.xpu_available)))
    return _kv_table("Framework stack", rows)


# --------------------------------------------------------------------------------------------
# Findings


_SCENARIO = re.compile(r"\b([Ss])cenario ([1-4])\b(?! of )(?!\s*[(:])")
_TITLES: dict[int, str] = {}


def _scenario_titles() -> dict[int, str]:
    if not _TITLES:
        _TITLES.update(scenario_titles())
    return _TITLES


def _named(text: str) -> str:
    """ "scenario 1" → "scenario 1 (CPU is enough)": a number never goes without its name."""
    if not _SCENARIO.search(text):
        return text
    titles = _scenario_titles()
    return _SCENARIO.sub(
        lambda m: f"{m.group(1)}cenario {m.group(2)}: {titles.get(int(m.group(2)), '?')}", text
    )


def _findings(findings: list[Finding], torch_known: bool = True) -> RenderableType:
    if not findings:
        if not torch_known:
            # An imported nvidia-smi or rocm-smi text says nothing of the software stack.
            return Text("Findings: none in what the text shows (it does not show the stack).")
        return Text("Findings: none — the stack is ready.", style="green")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for f in findings:
        body = Text.assemble(
            (_named(f.title), "bold"), "\n", (_named(f.detail), "dim"), "\n", "fix: ", _named(f.fix)
        )
        grid.add_row(
            Text(f.severity.value, style=_SEVERITY_STYLE[f.severity]), Flow(body, indent=2)
        )
    return Group(Text("Findings", style="bold"), grid, Text(""))


# --------------------------------------------------------------------------------------------
# Benchmarks: one row per case (identical GPUs folded), notes as numbered footnotes


@dataclass
class _Notes:
    """Numbered footnotes, each text once: "[1] no peak figure for this case"."""

    texts: list[str] = field(default_factory=list)

    def number(self, text: str) -> int:
        text = _named(text)
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1

    def mark(self, *texts: str) -> str:
        """ "[1]", or "[1,3]" for several notes on one row; "" for none."""
        numbers = [str(self.number(t)) for t in texts if t]
        return f"[{','.join(numbers)}]" if numbers else ""

    def lines(self) -> list[RenderableType]:
        return [
            Flow(Text(f"[{i}] {t}", style="dim"), indent=len(str(i)) + 3)
            for i, t in enumerate(self.texts, 1)
        ]


def _label(m: Measurement) -> str:
    return " ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x)


def _fold_gpus(measurements: list[Measurement]) -> list[tuple[Measurement, str, int]]:
    """Each measurement with the devices it stands for: the same case on several GPUs is one
    row (the median GPU's figures) labelled "cuda:0–7"."""
    out: list[tuple[Measurement, str, int]] = []
    groups: dict[tuple[Any, ...], list[Measurement]] = {}
    order: list[tuple[Any, ...]] = []
    for m in measurements:
        gpu = m.device.startswith("cuda:") and m.status == BenchStatus.OK and m.best is not None
        key = (m.case, m.precision, m.variant, m.unit) if gpu else (id(m),)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(m)
    for key in order:
        same = groups[key]
        if len(same) == 1:
            out.append((same[0], same[0].device, 1))
            continue
        ranked = sorted(same, key=lambda m: m.best or 0.0)
        middle = ranked[len(ranked) // 2]
        indices = [int(m.device.split(":", 1)[1]) for m in same if m.device[5:].isdigit()]
        where = f"cuda:{_span(indices)}" if len(indices) == len(same) else "GPUs"
        out.append((middle, where, len(same)))
    return out


def _bench_row(
    m: Measurement, where: str, count: int, notes: _Notes, wide: bool, low: list[str]
) -> list[RenderableType]:
    what = _label(m)
    marks: list[str] = []
    note = m.message or (m.efficiency_note if m.efficiency is None else None)
    if note:
        marks.append(note)
    if m.status != BenchStatus.OK:
        style = "dim" if m.status == BenchStatus.SKIPPED else "red"
        row: list[RenderableType] = [
            Text(where),
            Text(" ".join(x for x in (what, notes.mark(*marks)) if x)),
            Text(m.status.value, style=style),
        ]
        return row + [Text("")] * (3 if wide else 2)
    if m.disturbances:
        flag = "the machine was busy" if m.device == "cpu" else "the GPU was disturbed"
        threads = (
            f" (measured with {m.threads} thread{'s' if m.threads != 1 else ''})"
            if m.device == "cpu" and m.threads
            else ""
        )
        marks.append(f"{flag} while this was measured{threads}: likely low")
    elif m.confidence == Confidence.LOW:
        low.append(what)
        marks.append("low confidence: the runs varied or the machine was busy")
    spread = f"±{m.spread * 100:.0f}%" if m.spread is not None else ""
    eff = (
        _flow(f"{m.efficiency:.0%} ", f"of {format_rate(m.peak, m.unit)}", whole=True)
        if m.efficiency is not None
        else Text(NONE, style="dim")
    )
    row = [
        Text(where),
        Flow(Text(" ".join(x for x in (what, notes.mark(*marks)) if x))),
        Text(format_rate(m.best, m.unit), style="bold"),
    ]
    if wide:
        row.append(Text(f"{format_rate(m.median, m.unit)} {spread}".strip()))
    else:
        row.append(Text(spread))
    row.append(eff)
    return row


def _bench(p: Profile, width: int) -> RenderableType | None:
    b = p.benchmarks
    if b is None:
        return None
    if b.status != BenchStatus.OK:
        return _kv_table("Benchmarks", [(b.status.value, Text(b.message or "", style="dim"))])
    threads = f", {_plural(b.threads, 'CPU thread')}" if b.threads else ""
    table = _titled(f"Benchmarks ({human_duration(b.duration_seconds)}{threads})")
    wide = width >= WIDE
    table.add_column("device", no_wrap=True)
    table.add_column("case")
    table.add_column("best", no_wrap=True)
    table.add_column("median ± spread" if wide else "±", no_wrap=True)
    table.add_column("of peak")
    notes = _Notes()
    low: list[str] = []
    for m, where, count in _fold_gpus(b.measurements):
        if count > 1:
            same = [
                x
                for x in b.measurements
                if (x.case, x.precision, x.variant) == (m.case, m.precision, m.variant)
                and x.device.startswith("cuda:")
                and x.best is not None
            ]
            lo, hi = min(x.best or 0.0 for x in same), max(x.best or 0.0 for x in same)
            if hi > lo * 1.02:
                spread_note = (
                    f"{_label(m)}: {count} GPUs, best from {format_rate(lo, m.unit)} to "
                    f"{format_rate(hi, m.unit)}; the row shows the median GPU"
                )
                notes.mark(spread_note)
        table.add_row(*_bench_row(m, where, count, notes, wide, low))
    lines: list[RenderableType] = notes.lines()
    if b.message:
        lines.append(Flow(Text(_named(b.message), style="yellow")))
    for c in b.crossover:
        if c.cpu_faster_below_n is not None:
            line = f"{c.device}: below n ≈ {c.cpu_faster_below_n} the CPU is faster at matmul"
            if c.cpu_faster_below_n_with_transfer is not None:
                line += f" ({c.cpu_faster_below_n_with_transfer} counting the transfers)"
            lines.append(Flow(line))
    for t in b.training_speedup:
        lines.append(
            Flow(
                f"small-CNN training step: {t.device} is {t.speedup:.1f}× the CPU "
                f"({t.gpu_samples_per_s:,.0f} vs {t.cpu_samples_per_s:,.1f} samples/s)"
            )
        )
    if not lines:
        return table
    return Group(table, *lines, Text(""))


def _diagnostics(p: Profile) -> RenderableType | None:
    bad = [r for r in p.diagnostics.probes if r.status in (ProbeStatus.FAILED, ProbeStatus.TIMEOUT)]
    if not bad:
        return None
    table = _titled("Probes that did not complete", style="bold red")
    table.add_column("probe", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("message")
    for run in bad:
        table.add_row(
            run.name, run.status.value, human_duration(run.seconds), Flow(Text(run.message or ""))
        )
    return table


# --------------------------------------------------------------------------------------------
# The verdict first


def _figure_lines(figures: list[KeyFigure]) -> list[RenderableType]:
    """ "GPU matrix multiply (bf16): 215.3 TFLOP/s (cuda:0, 69% of peak)", one line each."""
    if not figures:
        return []
    out: list[RenderableType] = [Text("Key figures", style="bold")]
    for f in figures:
        text = Text.assemble(f"  {f.label}: ", (f.text, "bold"))
        text.append(f" ({f.detail})" if f.detail else "", style="dim")
        out.append(Flow(text, indent=4))
    return out


def _headline(advice: Advice, profile: Profile | None) -> list[RenderableType]:
    """The answer in a few lines: the verdict (and the assumed hardware's), the scenario by its
    name, the recommendation and its costs, why that class, and the figures behind it."""
    a = answer(advice)
    style = {"good": "bold green", "bad": "bold red"}.get(a.tone, "bold yellow")
    out: list[RenderableType] = [Flow(Text(line, style="bold")) for line in a.assumed]
    out += [
        Flow(Text(a.verdict, style=style)),
        Flow(Text("  " + a.description, style="dim"), indent=2),
        Flow(Text(_named(a.scenario)), indent=2),
        Flow(
            Text.assemble((f"{a.recommendation_label}: ", "bold"), (a.recommendation, "bold")),
            indent=2,
        ),
    ]
    # A machine that is enough is not told to buy: the costs wait in the details.
    if a.costs and a.tone != "good":
        out.append(Flow(Text("  " + a.costs), indent=4))
    out.append(Flow(Text(_named(a.why), style="dim"), indent=2))
    if a.wait and a.tone != "good":
        out.append(Flow(Text("  " + a.wait, style="dim"), indent=4))
    out += _bullets(a.reasons[:1])
    out += _bullets(a.checks, style="yellow")
    return out + _figure_lines(advice.key_figures) + [Text("")]


def _preset_table(presets: list[Advice]) -> Table:
    """Without a workload: each preset, whether this machine is enough within the deadline, and
    if not the class and the recommendation."""
    deadline = deadline_text(presets[0]) if presets else ""
    table = _titled(f"Is this machine enough? Each preset within {deadline}")
    table.add_column("workload", no_wrap=True)
    table.add_column("here", no_wrap=True)
    table.add_column("needs", no_wrap=True)
    table.add_column("recommended, or the smallest class that does it", ratio=1)
    for adv in presets:
        verdict = verdict_of(adv)
        style = {"enough": "green", "not enough": "red"}.get(verdict, "yellow")
        rec = adv.recommendation
        what = (
            f"{rec.hardware}, {human_duration(rec.seconds)}"
            if rec is not None
            else recommendation_text(adv)
        )
        table.add_row(
            adv.workload.name,
            Text(verdict, style=style),
            CLASS_WORDS.get(adv.scenario.id, str(adv.scenario.id)),
            Flow(Text(what, style="" if verdict == "not enough" else "dim")),
        )
    return table


def _glance(p: Profile, presets: list[Advice] | None = None) -> list[RenderableType]:
    """Without a workload: the machine in a few lines, and each preset's verdict."""
    c = p.cpu
    cpu = c.model_name.value or "CPU model unknown"
    if c.usable_cpus.known:
        cpu += f", {_plural(c.usable_cpus.value, 'usable CPU')}"
    if (ram := p.memory.total_bytes.value) is not None:
        cpu += f"; {human_bytes(ram)} RAM"
    gpus: dict[str, int] = {}
    for g in p.gpus:
        name = "lost GPU" if g.lost else (g.name.value or "unknown GPU")
        if (vram := g.vram_total_bytes.value) is not None and not g.lost:
            name += f" ({human_bytes(vram)})"
        gpus[name] = gpus.get(name, 0) + 1
    gpu = "; ".join(f"{n} × {name}" if n > 1 else name for name, n in gpus.items()) or "none found"
    t = p.frameworks.torch
    torch = (
        f"{t.version.value}" + (f" ({t.build.value} build)" if t.build.known else "")
        if t.version.known
        else "unknown"
        if t.installed
        else "not installed"
    )
    counts: dict[str, int] = {}
    for f in p.findings:
        counts[f.severity.value] = counts.get(f.severity.value, 0) + 1
    findings = ", ".join(f"{n} {sev}" for sev, n in counts.items()) or "none"
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column()
    for key, value in (("CPU", cpu), ("GPUs", gpu), ("PyTorch", torch), ("findings", findings)):
        grid.add_row("  " + key, Flow(Text(value)))
    host = p.host.hostname.value
    out: list[RenderableType] = [
        Text(f"At a glance{': ' + host if host else ''}", style="bold"),
        grid,
        *_figure_lines(machine_figures(p)),
    ]
    if presets:
        out.append(
            Flow(Text("Whether it is enough for each workload preset: at the end.", style="dim"))
        )
    else:
        out.append(_how_to_ask())
    return [*out, Text("")]


def _how_to_ask() -> Flow:
    return Flow(
        Text(
            "For one workload: hwadvisor advise --workload NAME (the newest profile in "
            "reports/ is used), with --deadline 8h or 3d for another deadline "
            "(hwadvisor workloads lists the names).",
            style="dim",
        ),
        indent=2,
    )


# --------------------------------------------------------------------------------------------
# The details of the advice


def _time_table(advice: Advice, notes: _Notes) -> Table:
    table = _titled(f"Time to train, and cost (deadline {deadline_text(advice)})")
    table.add_column("hardware", ratio=1)
    table.add_column("class", no_wrap=True, justify="right")
    table.add_column("time", no_wrap=True, justify="right")
    table.add_column("fits", no_wrap=True)
    table.add_column("meets", no_wrap=True)
    table.add_column("buy", no_wrap=True, justify="right")
    table.add_column("rent", no_wrap=True, justify="right")
    for row in estimate_rows(advice):
        fits = row.fits
        if row.plan:
            fits += " " + notes.mark(f"{row.hardware}: {row.plan}")
        meets = Text("yes", style="green") if row.meets else Text("no", style="red")
        name = Text(("» " if row.recommended else "") + row.hardware)
        if row.recommended:
            name.stylize("bold")
        table.add_row(
            Flow(name),
            row.scenario_class,
            Text(row.time),
            Text(fits),
            meets,
            Text(row.buy),
            Text(row.rent),
        )
    return table


def _trace_table(advice: Advice) -> Table:
    table = _titled("How the scenario was chosen: the smallest class that holds it in time")
    table.add_column("class", no_wrap=True)
    table.add_column("meets it", no_wrap=True)
    table.add_column("its best option")
    for t in advice.trace:
        meeting = t.evidence.get("meeting")
        meets = bool(meeting) if meeting is not None else t.matched
        table.add_row(
            Text(f"{'» ' if t.matched else ''}{t.scenario}", style="bold" if t.matched else ""),
            Text("yes", style="green") if meets else Text("no", style="dim"),
            Flow(Text(rule_evidence(t), style="" if t.matched else "dim")),
        )
    return table


def _details(advice: Advice) -> list[RenderableType]:
    notes = _Notes()
    out: list[RenderableType] = [_time_table(advice, notes), *notes.lines()]
    if advice.workload.times:
        out.append(Flow(Text(advice.workload.times, style="dim"), indent=2))
    a = answer(advice)
    if a.costs and a.tone == "good":
        # The headline of a machine that is enough leaves the costs out: they are here.
        out.append(Flow(Text(f"{a.recommendation_label}, cost: {a.costs}"), indent=2))
    rec = advice.recommendation
    if rec is not None and (rec.price_date or rec.rent_as):
        rented = f"; rented as {rec.rent_as}" if rec.rent_as else ""
        out.append(
            Flow(
                Text(
                    f"Prices: {advice.prices_source}, from {rec.price_date or 'an unknown date'}"
                    f"{rented}; electricity {money(advice.kwh_price, advice.currency)}/kWh. "
                    "The report names each price's source.",
                    style="dim",
                ),
                indent=2,
            )
        )
    if advice.scale_out is not None:
        out.append(Flow(Text(f"At scale: {advice.scale_out.summary}.", style="bold"), indent=2))
    if advice.what_ifs:
        out += [
            Text(""),
            Text("What would change the answer", style="bold"),
            *_bullets(advice.what_ifs),
        ]
    if advice.caveats:
        out += [Text(""), Text("Caveats", style="bold"), *_bullets(advice.caveats)]
    out += [Text(""), _trace_table(advice)]
    return out


def _recap(advice: Advice) -> RenderableType:
    a = answer(advice)
    style = {"good": "bold green", "bad": "bold red"}.get(a.tone, "bold yellow")
    return Flow(Text(a.recap, style=style), indent=2)


def _print(console: Console, items: Iterable[RenderableType]) -> None:
    for item in items:
        console.print(item)


def render_advice(advice: Advice, console: Console, profile: Profile | None = None) -> None:
    """The answer for one workload: the verdict and the recommendation first, then the time
    and cost on each option, what would change the answer, how the class was chosen, and the
    verdict again in one line."""
    _print(console, _headline(advice, profile))
    _print(console, _details(advice))
    console.print(Text(""))
    console.print(_recap(advice))


def render_summary(profile: Profile, console: Console, presets: list[Advice] | None = None) -> None:
    """Print the human summary of ``profile``: the verdict (or the machine at a glance and each
    preset's verdict) first, the machine and the details after, the verdict again last."""
    if profile.advice is not None:
        _print(console, _headline(profile.advice, profile))
    else:
        _print(console, _glance(profile, presets))
    console.print(_system_table(profile))
    console.print(_cpu_table(profile))
    console.print(_gpu_table(profile))
    console.print(_stack_table(profile))
    bench = _bench(profile, console.width)
    if bench is not None:
        console.print(bench)
    console.print(_findings(profile.findings, profile.frameworks.torch.version.known))
    if profile.advice is not None:
        console.print(Text(f"\nAdvice for {profile.advice.workload.name}", style="bold"))
        _print(console, _details(profile.advice))
    diag = _diagnostics(profile)
    if diag is not None:
        console.print(diag)
    if profile.advice is not None:
        console.print(Text(""))
        console.print(_recap(profile.advice))
    elif presets:
        console.print(Text(""))
        console.print(_preset_table(presets))
        console.print(_how_to_ask())
