"""The terminal summary of a profile: a few rich tables, for a person, not for a parser.

Every probed string is passed to rich as a ``Text`` (never as markup), so a device named
``[red]x[/red]`` or ``<script>`` is shown as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import BenchStatus, Confidence, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import Finding, GpuInfo, NvmlStatus, ProbeStatus, Profile, Severity
from hwadvisor.render.summaries import network_line, system_line
from hwadvisor.units import format_rate, human_bytes, human_duration, short_plan

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def show(f: Fact[Any], fmt: Callable[[Any], str] = str, *, why: bool = False) -> Text:
    """A fact's value, or a dim "unknown" (with the reason when ``why``: rows of one fact)."""
    if f.value is None:
        return Text(f"unknown ({f.reason})" if why and f.reason else "unknown", style="dim")
    if isinstance(f.value, bool):
        return Text("yes" if f.value else "no")
    if isinstance(f.value, list):
        return Text(", ".join(str(v) for v in f.value) or "none")
    return Text(fmt(f.value))


def _kv_table(title: str, rows: Iterable[tuple[str, Text]]) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_header=False,
        pad_edge=False,
    )
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table


def _mhz(v: Any) -> str:
    return f"{float(v):,.0f} MHz"


def _virtualised(virtualized: Fact[bool], hypervisor: Fact[str]) -> Text:
    if not virtualized.value:
        return show(virtualized)
    if hypervisor.value is None:
        return Text.assemble("yes ", ("(hypervisor not named)", "dim"))
    return Text(f"yes ({hypervisor.value})")


def _cpu_table(p: Profile) -> Table:
    c = p.cpu
    cores = Text.assemble(
        show(c.physical_cores),
        " physical, ",
        show(c.logical_cores),
        " logical, ",
        show(c.usable_cpus),
        " usable",
    )
    if c.performance_cores.value is not None:
        cores.append(f" ({c.performance_cores.value} P + {c.efficiency_cores.value} E)")
    caches = Text.assemble(
        "L2 ", show(c.l2_cache_bytes, human_bytes), ", L3 ", show(c.l3_cache_bytes, human_bytes)
    )
    return _kv_table(
        "CPU",
        [
            ("model", Text.assemble(show(c.model_name), " (", show(c.vendor), ")")),
            ("architecture", Text.assemble(show(c.architecture), ", ", show(c.microarchitecture))),
            ("cores", cores),
            ("sockets / NUMA", Text.assemble(show(c.sockets), " / ", show(c.numa_nodes))),
            (
                "frequency",
                Text.assemble(
                    show(c.base_frequency_mhz, _mhz),
                    " base, ",
                    show(c.max_frequency_mhz, _mhz),
                    " max",
                ),
            ),
            ("DL instructions", show(c.isa_features, why=True)),
            ("caches", caches),
            ("virtualised", _virtualised(c.virtualized, c.hypervisor)),
        ],
    )


def _system_table(p: Profile) -> Table:
    m, s, pl = p.memory, p.storage, p.platform
    memory = Text.assemble(
        show(m.total_bytes, human_bytes),
        " total, ",
        show(m.available_bytes, human_bytes),
        " available",
    )
    if m.cgroup_limit_bytes.value is not None:
        memory.append(f", container limit {human_bytes(m.cgroup_limit_bytes.value)}")
    board = system_line(p.system)
    links = network_line(p.network)
    rows = [
        ("host", show(p.host.hostname, why=True)),
        ("system", Text(board) if board else show(p.system.product, why=True)),
        ("OS", Text.assemble(show(pl.distribution), " (kernel ", show(pl.kernel), ")")),
        ("Python", Text.assemble(show(pl.python_version), " ", show(pl.python_implementation))),
        ("container", show(pl.container, why=True)),
        ("memory", memory),
        ("swap", show(m.swap_total_bytes, human_bytes, why=True)),
        ("disk free", Text.assemble(show(s.free_bytes, human_bytes), " at ", show(s.path))),
        ("network", Text(links) if links else _no_links(p)),
    ]
    if pl.wsl.value:
        rows.append(("WSL", Text("yes")))
    if pl.rosetta.value:
        rows.append(("Rosetta", Text("Python runs translated (x86_64 on Apple silicon)")))
    for key, value in pl.visibility_env.items():
        rows.append((key, Text(repr(value))))
    return _kv_table("Machine", rows)


def _no_links(p: Profile) -> Text:
    why = p.network.reason
    return Text(f"unknown ({why})" if why else "no physical interface found", style="dim")


def _gpu_row(g: GpuInfo) -> list[RenderableType]:
    if g.lost:
        return [
            Text(str(g.index)),
            Text("GPU lost (fell off the bus)", style="bold red"),
            Text(""),
            Text(""),
            Text(""),
            Text(""),
        ]
    link = (g.pcie_generation, g.pcie_generation_max, g.pcie_width, g.pcie_width_max)
    # An imported description or a failed probe knows none of them: one word, not four.
    pcie: RenderableType = (
        Text.assemble(
            "gen ",
            show(g.pcie_generation),
            "/",
            show(g.pcie_generation_max),
            " x",
            show(g.pcie_width),
            "/",
            show(g.pcie_width_max),
        )
        if any(f.known for f in link)
        else Text("unknown", style="dim")
    )
    power: RenderableType = (
        Text.assemble(
            show(g.power_limit_watts, lambda w: f"{float(w):.0f} W"),
            " ",
            show(g.temperature_c, lambda t: f"{t} °C"),
        )
        if g.power_limit_watts.known or g.temperature_c.known
        else Text("unknown", style="dim")
    )
    return [
        Text(str(g.index)),
        Text.assemble(show(g.name), f" [{g.backend}]"),
        show(g.vram_total_bytes, human_bytes),
        show(g.compute_capability),
        power,
        pcie,
    ]


def _no_gpu_note(p: Profile) -> str:
    """Why there is no GPU: no hardware, or hardware the drivers do not show."""
    on_bus = [f"{d.vendor} {d.device_id}" for d in p.platform.pci_display_devices]
    evidence = bool(on_bus) or bool(p.platform.nvidia_device_nodes.value)
    if p.nvml.status in (NvmlStatus.LIBRARY_NOT_FOUND, NvmlStatus.NOT_INSTALLED) and not evidence:
        return "no GPU on the PCI bus and no NVIDIA driver"
    bus = f"PCI display devices: {', '.join(on_bus)}; " if on_bus else ""
    return f"{bus}NVML: {p.nvml.message or p.nvml.status.value}"


def _gpu_table(p: Profile) -> RenderableType:
    if not p.gpus:
        return _kv_table("GPUs", [("none found", Text(_no_gpu_note(p), style="dim"))])
    table = Table(title="GPUs", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for column in ("#", "name", "memory", "capability", "power / temp", "PCIe now/max"):
        table.add_column(column, overflow="fold")
    for gpu in p.gpus:
        table.add_row(*_gpu_row(gpu))
    nv = p.nvml
    if nv.driver_version.value is not None:
        table.caption = Text.assemble(
            "NVIDIA driver ", show(nv.driver_version), ", CUDA ", show(nv.cuda_driver_version)
        )
        table.caption_justify = "left"
    return table


def _stack_table(p: Profile) -> Table:
    t = p.frameworks.torch
    if not t.installed:
        return _kv_table("Framework stack", [("PyTorch", show(t.version, why=True))])
    rows = [
        ("PyTorch", Text.assemble(show(t.version, why=True), " (", show(t.build), " build)")),
        (
            "CPU kernels",
            Text.assemble(show(t.cpu_capability), ", ", show(t.num_threads), " threads"),
        ),
    ]
    if t.build.value == "cuda":
        rows += [
            (
                "CUDA runtime / cuDNN / NCCL",
                Text.assemble(
                    show(t.cuda_runtime_version),
                    " / ",
                    show(t.cudnn_version),
                    " / ",
                    show(t.nccl_version),
                ),
            ),
            (
                "CUDA available",
                Text.assemble(
                    show(t.cuda_available, why=True), " (", show(t.device_count), " devices)"
                ),
            ),
            ("arch list", show(t.arch_list, why=True)),
        ]
    elif t.build.value == "rocm":
        rows.append(("ROCm/HIP", show(t.hip_version, why=True)))
        rows.append(("GPU available", show(t.cuda_available, why=True)))
    rows.append(
        (
            "MPS (Apple)",
            Text.assemble("built ", show(t.mps_built), ", available ", show(t.mps_available)),
        )
    )
    rows.append(("XPU (Intel)", show(t.xpu_available, why=True)))
    return _kv_table("Framework stack", rows)


def _findings(findings: list[Finding], torch_known: bool = True) -> RenderableType:
    if not findings:
        if not torch_known:
            # An imported nvidia-smi or rocm-smi text says nothing of the software stack.
            return Text("Findings: none in what the text shows (it does not show the stack).")
        return Text("Findings: none — the stack is ready.", style="green")
    table = Table(title="Findings", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("", no_wrap=True)
    table.add_column("finding", overflow="fold")
    table.add_column("fix", overflow="fold")
    for f in findings:
        table.add_row(
            Text(f.severity.value, style=_SEVERITY_STYLE[f.severity]),
            Text.assemble((f.title, "bold"), "\n", (f.detail, "dim")),
            Text(f.fix),
        )
    return table


def _bench_row(m: Measurement, notes: list[str]) -> list[RenderableType]:
    """One measurement; its message or efficiency note becomes a numbered note under the table."""
    what = Text(" ".join(x for x in (m.case.replace("_", " "), m.precision, m.variant) if x))
    note = m.message or (m.efficiency_note if m.efficiency is None else None)
    if note:
        notes.append(note)
        what.append(f" [{len(notes)}]", style="dim")
    if m.status != BenchStatus.OK:
        style = "dim" if m.status == BenchStatus.SKIPPED else "red"
        return [Text(m.device), what, Text(m.status.value, style=style), Text(""), Text("")]
    spread = f" ±{m.spread * 100:.0f}%" if m.spread is not None else ""
    median = Text(f"{format_rate(m.median, m.unit)}{spread}")
    if m.disturbances:
        flag = "busy" if m.device == "cpu" else "disturbed"
        threads = f", {m.threads} thr" if m.device == "cpu" and m.threads else ""
        median.append(f" ({flag}{threads})", style="yellow")
    elif m.confidence == Confidence.LOW:
        median.append(" (low confidence)", style="yellow")
    if m.efficiency is not None:
        eff = Text(f"{m.efficiency:.0%} of {format_rate(m.peak, m.unit)}")
    else:
        eff = Text("—", style="dim")
    return [Text(m.device), what, Text(format_rate(m.best, m.unit), style="bold"), median, eff]


def _bench(p: Profile) -> RenderableType | None:
    b = p.benchmarks
    if b is None:
        return None
    if b.status != BenchStatus.OK:
        return _kv_table("Benchmarks", [(b.status.value, Text(b.message or "", style="dim"))])
    table = Table(
        title=f"Benchmarks ({b.duration_seconds:.1f} s, {b.threads} CPU threads)",
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
    )
    for column in ("device", "case", "best", "median ± spread", "of peak"):
        table.add_column(column, overflow="fold")
    notes: list[str] = []
    for m in b.measurements:
        table.add_row(*_bench_row(m, notes))
    lines = [Text(f"[{i}] {note}", style="dim") for i, note in enumerate(notes, 1)]
    if b.message:
        lines.append(Text(b.message, style="yellow"))
    for c in b.crossover:
        if c.cpu_faster_below_n is not None:
            line = f"{c.device}: below n ≈ {c.cpu_faster_below_n} the CPU is faster at matmul"
            if c.cpu_faster_below_n_with_transfer is not None:
                line += f" ({c.cpu_faster_below_n_with_transfer} counting the transfers)"
            lines.append(Text(line))
    for t in b.training_speedup:
        lines.append(
            Text(
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
    table = Table(
        title="Probes that did not complete",
        title_justify="left",
        title_style="bold red",
        box=box.SIMPLE_HEAD,
    )
    for column in ("probe", "status", "seconds", "message"):
        table.add_column(column, overflow="fold")
    for run in bad:
        table.add_row(run.name, run.status.value, f"{run.seconds:.1f}", Text(run.message or ""))
    return table


def render_advice(advice: Advice, console: Console) -> None:
    """The answer for one workload: scenario, this machine, the ladder, what-ifs, the trace."""
    s, me = advice.scenario, advice.this_machine
    verdict = Text.assemble(
        (f"Scenario {s.id}: {s.title}", "bold"),
        f"  ({s.confidence} confidence)\n",
        (s.because, "dim"),
        "\n\n",
        (
            "This machine is enough." if me.sufficient else "This machine is not enough.",
            "bold green" if me.sufficient else "bold red",
        ),
        "\n",
        "\n".join(me.reasons),
    )
    console.print(
        Text(f"Advice for {advice.workload.name}: {advice.workload.description}", style="bold")
    )
    console.print(verdict)
    table = Table(
        title="Time to train", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD
    )
    for column in ("hardware", "time (range)", "fits memory", f"≤ {me.limit_hours:g} h"):
        table.add_column(column, overflow="fold")
    priced = advice.currency is not None
    if priced:
        table.add_column(f"cost ({advice.currency})", overflow="fold")
    for e in advice.estimates:
        span = (
            f"{human_duration(e.seconds)} ({human_duration(e.low_seconds)}–"
            f"{human_duration(e.high_seconds)})"
            if e.seconds is not None
            else "—"
        )
        fits = {True: "yes", False: "no", None: "?"}[e.fits_memory]
        if short_plan(e.memory_plan):
            fits += f" ({short_plan(e.memory_plan)})"
        meets = Text("yes", style="green") if e.meets_scenario else Text("no", style="red")
        row: list[RenderableType] = [Text(e.hardware), Text(span), Text(fits), meets]
        if priced:
            parts = []
            if e.run_cost is not None:
                parts.append(f"rent {e.run_cost:,.0f}")
            if e.purchase_cost is not None:
                parts.append(f"buy {e.purchase_cost:,.0f}")
            if e.break_even_hours is not None:
                parts.append(f"buying pays off after {e.break_even_hours:,.0f} h")
            row.append(Text(", ".join(parts) or "—"))
        table.add_row(*row)
    console.print(table)
    if advice.scale_out is not None:
        console.print(Text(f"At scale: {advice.scale_out.summary}.", style="bold"))
    for line in advice.what_ifs:
        console.print(Text(f"• {line}"))
    trace = Table(title="Rule trace", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for column in ("rule", "scenario", "matched", "evidence"):
        trace.add_column(column, overflow="fold")
    for t in advice.trace:
        evidence = ", ".join(f"{k}={v}" for k, v in t.evidence.items())
        trace.add_row(
            Text(t.rule), str(t.scenario), "yes" if t.matched else "no", Text(evidence, style="dim")
        )
    console.print(trace)


def render_summary(profile: Profile, console: Console) -> None:
    """Print the human summary of ``profile``."""
    console.print(_system_table(profile))
    console.print(_cpu_table(profile))
    console.print(_gpu_table(profile))
    console.print(_stack_table(profile))
    bench = _bench(profile)
    if bench is not None:
        console.print(bench)
    console.print(_findings(profile.findings, profile.frameworks.torch.version.known))
    if profile.advice is not None:
        render_advice(profile.advice, console)
    diag = _diagnostics(profile)
    if diag is not None:
        console.print(diag)
