"""The ``hwadvisor`` command: parse options, call the pipeline, print. Exit codes are set here only.

Heavy modules (pydantic models, the pipeline, rich tables) are imported inside the commands so
that ``hwadvisor --help`` stays instant.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from hwadvisor import __version__
from hwadvisor.cliopts import (
    AssumeCpuOpt,
    BaseBitsOpt,
    CatalogFilterArg,
    CheckpointingOpt,
    ContextOpt,
    DeadlineOpt,
    EngineOpt,
    EvalOpt,
    KvCacheOpt,
    KwhOpt,
    LabelOpt,
    LoraRankOpt,
    MaxTtftOpt,
    MethodOpt,
    MicroBatchOpt,
    OptimizerOpt,
    PromptTokensOpt,
    QuantOpt,
    QuietOpt,
    ReplyTokensOpt,
    TableJsonOpt,
    TargetTokOpt,
    TorchPythonOpt,
    UsersOpt,
    VocabOpt,
    refuse_serve_options,
    scan_labels,
    serve_options,
)
from hwadvisor.errors import HwAdvisorError, Interrupted, UsageError
from hwadvisor.exitcodes import ExitStatus, epilog

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console, RenderableType
    from rich.progress import Progress, Task

    from hwadvisor.model.profile import Profile
    from hwadvisor.pipeline import ProbeEvent


#: The exit codes of a command that reads inputs and writes files, and can end degraded (3).
_WRITES_DEGRADED = [
    ExitStatus.USAGE,
    ExitStatus.DEGRADED,
    ExitStatus.IO_ERROR,
    ExitStatus.INPUT_ERROR,
]


def _plain_help(command: object) -> None:
    """Help without type placeholders: an option that takes a value shows its metavar (``DIR``,
    ``SECONDS``), a flag shows nothing, an argument its metavar alone (``FILE...``), never
    ``<bool>``, ``<str>`` or ``<path>``. Applied to every command and group below ``command``."""
    from typer.core import TyperArgument, TyperGroup, TyperOption

    for param in getattr(command, "params", []):
        if type(param) is TyperArgument:
            param.__class__ = _Argument
        elif isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag or param.count else (param.name or "value").upper()
    help_text = getattr(command, "help", None)
    if help_text and not getattr(command, "short_help", None):
        # The command list shows the first sentence whole, wrapped, never cut with "...".
        words = " ".join(help_text.split("\n\n")[0].split())
        command.short_help = words.split(". ")[0].removesuffix(".") + "."  # type: ignore[attr-defined]
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _plain_help(sub)


class _Argument(typer.core.TyperArgument):
    """An argument shown by its metavar alone, without a type placeholder."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        # ``FILE...`` or ``[FILE]``, not typer's ``{FILE...}...``.
        name = self.metavar or self.name or "value"
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return [name if self.required else f"[{name}]"]


class _RootGroup(typer.core.TyperGroup):
    """The ``hwadvisor`` group, whose commands' help is made plain once the tree is built."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _plain_help(self)


app = typer.Typer(
    name="hwadvisor",
    cls=_RootGroup,
    # Plain help: it wraps to the terminal, reads the same through a pipe, and leaves the
    # option descriptions most of the width (rich's panels leave them a third at 80 columns).
    rich_markup_mode=None,
    help="Is this machine enough for my deep-learning work? Detect, measure, advise.",
    epilog=epilog(
        [
            "hwadvisor scan                         # this machine: summary and report",
            "hwadvisor scan --workload llm-7b-lora  # and is it enough for that work?",
            "hwadvisor scan --json - | jq .gpus     # the profile on stdout, for scripts",
            "hwadvisor advise -p box.json -w resnet50-imagenet",
            "hwadvisor COMMAND --help               # each command's options, examples",
        ],
        _WRITES_DEGRADED,
    ),
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hwadvisor {__version__}")
        raise typer.Exit(ExitStatus.OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show the traceback of an unexpected error (give it before the command).",
        ),
    ] = False,
) -> None:
    """Detect this machine's hardware and deep-learning stack, measure it, and say what it can
    do. Each command has --help with examples."""


def _stderr() -> Console:
    from hwadvisor.render.terminal import console

    return console(stderr=True, soft_wrap=True)


def _note(text: str) -> None:
    """One plain line on stderr, without the terminal library: a command that answers in JSON
    starts faster without it. A stderr that cannot be written loses the note only."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _progress_callback(console: Console) -> tuple[Progress, Callable[[ProbeEvent], None]]:
    """A live display of the probes on stderr: the display and the pipeline's callback."""
    from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class StatusColumn(SpinnerColumn):
        """A spinner while the probe runs, then its mark."""

        def render(self, task: Task) -> RenderableType:
            if task.finished:
                return Text.from_markup(task.fields.get("mark", "[green]✓"))
            return super().render(task)

    progress = Progress(
        StatusColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, TaskID] = {}
    marks = {  # status -> (mark, suffix)
        "ok": ("[green]✓", ""),
        "partial": ("[yellow]✓", " [yellow](partial)"),
        "skipped": ("[dim]–", " [dim](skipped)"),
        "failed": ("[red]✗", " [red](failed)"),
        "timeout": ("[red]✗", " [red](timed out)"),
    }

    def on_event(event: ProbeEvent) -> None:
        from rich.markup import escape

        # Benchmark cases (ids like "cpu.matmul.fp32") sit under "Microbenchmarks".
        title = ("  " if "." in event.name else "") + escape(event.title)
        if event.status is None:
            tasks[event.name] = progress.add_task(title, total=1)
            return
        task = tasks.get(event.name)
        if task is None:  # skipped probes never start
            if event.status.value != "skipped":
                return
            task = progress.add_task(title, total=1)
        mark, suffix = marks.get(event.status.value, ("?", ""))
        progress.update(task, completed=1, mark=mark, description=f"{title}{suffix}")

    return progress, on_event


def _file_stem(profile: Profile) -> str:
    from hwadvisor.render.report import file_stem

    return file_stem(profile)


@app.command(
    epilog=epilog(
        [
            "hwadvisor scan                        # summary; JSON, HTML, PDF in reports/",
            "hwadvisor scan --no-bench -f json     # detect only, JSON file only",
            "hwadvisor scan --json - | jq .gpus    # the profile on stdout, for scripts",
            "hwadvisor scan -q -o /srv/profiles    # for cron: silent unless it fails",
            "hwadvisor scan --workload llm-7b-lora # ... and is it enough for that work?",
        ],
        _WRITES_DEGRADED,
    )
)
def scan(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            help="Folder for the files (created if missing).",
            file_okay=False,
        ),
    ] = Path("reports"),
    json_out: Annotated[
        Optional[str],
        typer.Option(
            "--json",
            metavar="PATH|-",
            help="Write the JSON profile to PATH exactly (refused if it exists; no HTML or "
            "PDF then), or '-' for stdout only: no summary, no file; progress and messages "
            "go to stderr.",
        ),
    ] = None,
    probe_timeout: Annotated[
        Optional[float],
        typer.Option(
            "--probe-timeout",
            callback=lambda value: _seconds_between(value, 1.0, 3600.0),
            metavar="SECONDS",
            help="Time limit for each isolated probe (default: by probe, 10 to 60 seconds).",
        ),
    ] = None,
    no_bench: Annotated[
        bool, typer.Option("--no-bench", help="Detect only; skip the microbenchmarks.")
    ] = False,
    budget: Annotated[
        Optional[float],
        typer.Option(
            "--budget",
            callback=lambda value: _seconds_between(value, 0.5, 3600.0),
            metavar="SECONDS",
            help="Measurement time to share among the benchmark cases "
            "(default: about 5.5 s for the CPU + 15 s per GPU).",
        ),
    ] = None,
    workload: WorkloadOpt = None,
    deadline: DeadlineOpt = None,
    assume_gpu: AssumeGpuOpt = None,
    gpus: GpusOpt = 1,
    rules: RulesOpt = None,
    prices: PricesOpt = None,
    kwh_price: KwhOpt = None,
    formats: FormatOpt = "json,html,pdf",
    paper: PaperOpt = "A4",
    template_dir: TemplateDirOpt = None,
    redact: RedactOpt = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print nothing unless something goes wrong: no progress, summary or file "
            "names; a failure, or what made the scan degraded (exit 3), goes to stderr.",
        ),
    ] = False,
    torch_python: TorchPythonOpt = None,
    label: LabelOpt = None,
) -> None:
    """Detect and measure this machine; write its profile and report.

    Detects the CPU, memory, GPUs, drivers and the PyTorch stack, then measures what the
    machine does (matmul, convolution, memory bandwidth, transfers, a training step), prints a
    summary and writes the profile as JSON, HTML and PDF into --out. With --workload it also
    says whether the machine is enough for that work. Nothing is ever overwritten.

    In a container, set HWADVISOR_HOST_ROOT to where the node's root filesystem is mounted
    (e.g. /host): the node's OS name and machine-id are read there."""
    from hwadvisor.render.report import parse_formats, parse_paper

    how = _Output(
        json_out=json_out,
        out=out,
        formats=parse_formats(formats),
        paper=parse_paper(paper),
        template_dir=template_dir,
        redact=redact,
        quiet=quiet,
    )
    from hwadvisor.pipeline import ScanOptions, run_scan

    err = _stderr()
    # Bad advice options fail now, not after the scan.
    request = _advice_request(
        workload, None, assume_gpu, gpus, rules, prices, deadline, kwh_price, need_workload=False
    )
    labels = scan_labels(label)
    options = ScanOptions(out_dir=out, bench=not no_bench, budget_s=budget)
    options.torch_python = torch_python
    if probe_timeout is not None:
        options.timeouts_s = dict.fromkeys(options.timeouts_s, probe_timeout)

    show_progress = not quiet and err.is_terminal
    try:
        if show_progress:
            progress, on_event = _progress_callback(err)
            with progress:
                profile = run_scan(options, on_event)
        else:
            profile = run_scan(options)
    except KeyboardInterrupt as exc:
        raise Interrupted("interrupted; no partial file was written") from exc
    profile.host.labels = labels
    presets = None
    if request.workload is not None:
        profile.advice = request.run(profile)
    elif not quiet and json_out != "-":
        presets = request.presets(profile)
    _emit(profile, how, err, presets=presets)


@dataclass
class _Output:
    """Where and how a profile's files are written (scan, import)."""

    json_out: str | None = None
    out: Path = Path("reports")
    formats: list[str] = field(default_factory=lambda: ["json", "html", "pdf"])
    paper: str = "A4"
    template_dir: Path | None = None
    redact: bool | None = None
    quiet: bool = False


def _emit(
    profile: Profile,
    how: _Output,
    err: Console,
    stem: str | None = None,
    presets: list[Any] | None = None,
) -> None:
    """Write the profile (stdout, or JSON/HTML/PDF files) and print the summary; exit 3 when a
    probe or a benchmark case failed, or a requested PDF could not be made. Quiet: only what
    made the run degraded is printed (stderr)."""
    from hwadvisor.errors import OutputError
    from hwadvisor.pipeline import is_degraded
    from hwadvisor.redact import default_salt, redact_profile, salt_warning
    from hwadvisor.render.jsonio import to_json, write_new_file
    from hwadvisor.render.report import write_reports
    from hwadvisor.render.terminal import console as terminal_console

    degraded = is_degraded(profile)
    if how.redact and how.json_out is not None and (why := salt_warning()):
        err.print(f"[yellow]{_escape(why)}[/yellow]")
        degraded = True
    if how.json_out == "-":
        shown = redact_profile(profile, default_salt()) if how.redact else profile
        sys.stdout.write(to_json(shown))
        sys.stdout.flush()
    elif how.json_out is not None:
        # --json PATH: that file, exactly, and nothing else (a script reads PATH next).
        target = Path(how.json_out)
        if target.exists() or target.is_symlink():
            raise OutputError(
                f"{target} already exists; hwadvisor never overwrites a file: "
                "choose another name or folder"
            )
        shown = redact_profile(profile, default_salt()) if how.redact else profile
        write_new_file(target, to_json(shown))
        if not how.quiet:
            from hwadvisor.render.console import render_summary

            render_summary(profile, terminal_console(), presets)
            err.print(f"Profile written to [bold]{_escape(str(target))}[/bold]")
    else:
        folder, name = how.out, stem or _file_stem(profile)
        formats = how.formats
        written = write_reports(
            profile,
            folder=folder,
            stem=name,
            formats=formats,
            paper=how.paper,
            template_dir=how.template_dir,
            redact=how.redact,
        )
        if not how.quiet:
            from hwadvisor.render.console import render_summary

            render_summary(profile, terminal_console(), presets)
        for path in written.files if not how.quiet else ():
            what = "Profile" if path.suffix == ".json" else "Report"
            err.print(f"{what} written to [bold]{_escape(str(path))}[/bold]")
        for warning in written.warnings:
            err.print(f"[yellow]{_escape(warning)}[/yellow]", soft_wrap=True)  # one line
        degraded = degraded or bool(written.warnings)
    if is_degraded(profile):
        err.print(
            "[yellow]Some probes failed or timed out; the profile says which "
            "(diagnostics.probes).[/yellow]"
        )
    if degraded:
        raise typer.Exit(ExitStatus.DEGRADED)


FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        metavar="LIST",
        help="Files to write: a comma-separated list of json, html, pdf.",
    ),
]
PaperOpt = Annotated[
    str, typer.Option("--paper", metavar="A4|LETTER", help="Page size of the PDF: A4 or Letter.")
]
TemplateDirOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--template-dir",
        metavar="DIR",
        file_okay=False,
        exists=True,
        help="Your own copy of the report templates (logo, header text).",
    ),
]
RedactOpt = Annotated[
    Optional[bool],
    typer.Option(
        "--redact/--no-redact",
        help="Replace hostnames, user names, serials, UUIDs, MAC/IP addresses and home "
        "paths with stable hashes. Default: only the PDF is redacted.",
    ),
]


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


WorkloadOpt = Annotated[
    Optional[str],
    typer.Option(
        "--workload",
        "-w",
        metavar="NAME",
        help="Advise for this workload preset (see `hwadvisor workloads`).",
    ),
]
AssumeGpuOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--assume-gpu",
        metavar="NAME",
        help="Also estimate on this GPU from the catalog (repeatable), e.g. 'RTX 4090' or "
        "'2x RTX 4090'.",
    ),
]
GpusOpt = Annotated[
    int,
    typer.Option(
        "--gpus",
        metavar="N",
        min=1,
        max=1024,
        help="How many of each --assume-gpu (or a count in its name: '8x H200').",
    ),
]
RulesOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--rules",
        metavar="FILE",
        help="Your own rules file (TOML), instead of the built-in one.",
    ),
]
PricesOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--prices",
        metavar="FILE",
        help="Purchase and hourly prices (TOML): adds costs and buy-vs-rent break-even.",
    ),
]


class _AdviceRequest:
    """A validated advice request: the workload, rules, prices, assumed GPUs and deadline."""

    def __init__(
        self,
        workload: Any,
        rules: Any,
        prices: Any,
        assume: list[Any],
        deadline_hours: float | None = None,
    ) -> None:
        self.workload, self.rules, self.prices, self.assume = workload, rules, prices, assume
        self.deadline_hours = deadline_hours

    def run(self, profile: Profile) -> Any:
        from hwadvisor.advise import advise

        return advise(
            profile,
            self.workload,
            rules=self.rules,
            prices=self.prices,
            assume=self.assume,
            deadline_hours=self.deadline_hours,
        )

    def presets(self, profile: Profile) -> list[Any]:
        """This request's settings applied to every preset (``scan`` without a workload)."""
        from hwadvisor.advise import advise
        from hwadvisor.workloads import load_workloads

        return [
            advise(
                profile,
                w,
                rules=self.rules,
                prices=self.prices,
                assume=self.assume,
                deadline_hours=self.deadline_hours,
            )
            for w in load_workloads()
        ]


def _advice_request(
    workload: str | None,
    custom: dict[str, Any] | None,
    assume_gpu: list[str] | None,
    gpus: int,
    rules: Path | None,
    prices: Path | None,
    deadline: float | None = None,
    kwh_price: float | None = None,
    *,
    need_workload: bool = True,
    training: Any = None,
) -> _AdviceRequest:
    from hwadvisor.advise import (
        builtin_prices,
        check_prices,
        load_prices,
        load_rules,
        resolve_gpu,
        split_count,
    )
    from hwadvisor.workloads import WorkloadError, custom_workload, get_workload

    chosen = None
    try:
        if custom:
            chosen = custom_workload(**custom)
        elif workload:
            chosen = get_workload(workload)
        elif need_workload:
            raise UsageError(
                "name a workload: --workload NAME (see `hwadvisor workloads`), "
                "or describe one with --params and --flops-per-sample/--tokens"
            )
        if training is not None and training.given:
            if chosen is None:
                raise UsageError("--method and the other training options need a workload")
            from hwadvisor.methods import with_training

            chosen = with_training(chosen, training)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from exc
    counted = [split_count(name, gpus) for name in assume_gpu or []]  # "8x H100", or --gpus
    assume = [(resolve_gpu(name), count) for name, count in counted]
    ladder = load_rules(rules)
    priced = load_prices(prices) if prices else builtin_prices()
    if prices:
        rungs = ladder.candidates
        check_prices(priced, [c.title for c in rungs] + [c.role for c in rungs])
    return _AdviceRequest(chosen, ladder, priced.with_kwh(kwh_price), assume, deadline)


def _seconds_between(value: float | None, low: float, high: float) -> float | None:
    """A time option: a finite number of seconds from ``low`` to ``high`` (NaN compares false
    with everything, so it is named for what it is, not as "must be ≤ 3600")."""
    if value is None:
        return None
    if not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number of seconds, got {value!r}")
    if not low <= value <= high:
        raise typer.BadParameter(f"must be between {low:g} and {high:g} seconds, got {value:g}")
    return value


def _finite_number(option: str, value: float | None) -> float | None:
    """``value`` unless it is NaN or infinite (a usage error, exit 2)."""
    if value is not None and not math.isfinite(value):
        raise UsageError(f"{option} must be a finite number, got {value!r}")
    return value


def _whole(option: str, value: float) -> int:
    """A count given as a float (1e9 is easier to type): finite, and a whole number."""
    checked = _finite_number(option, value)
    assert checked is not None
    if checked != int(checked):
        raise UsageError(f"{option} must be a whole number, got {value!r}")
    return int(checked)


@app.command(
    epilog=epilog(
        [
            "hwadvisor advise -p box.json -w resnet50-imagenet",
            "hwadvisor advise -p collect_env.txt -w bert-base-finetune --json -",
            'hwadvisor advise -p box.json -w llm-7b-lora --assume-gpu "RTX 4090" --gpus 2',
            "hwadvisor advise -w resnet50-imagenet --deadline 3d  # the newest scan",
            "hwadvisor advise -p box.json --params 3e8 --tokens 2e10 --precision bf16",
            "hwadvisor workloads                   # the presets -w takes",
        ],
        [ExitStatus.USAGE, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    )
)
def advise(
    profile_path: Annotated[
        Optional[Path],
        typer.Option(
            "--profile",
            "-p",
            metavar="FILE",
            help="A saved profile, or any file `hwadvisor import` reads (collect_env output, "
            "nvidia-smi -q -x, an nvidia-smi table ...): the format is detected. Default: "
            "the newest profile in reports/, else this machine detected without benchmarks.",
        ),
    ] = None,
    workload: WorkloadOpt = None,
    deadline: DeadlineOpt = None,
    params: Annotated[
        Optional[float],
        typer.Option("--params", metavar="N", help="Custom workload: model parameters."),
    ] = None,
    flops_per_sample: Annotated[
        Optional[float],
        typer.Option("--flops-per-sample", metavar="F", help="Custom: training FLOPs per sample."),
    ] = None,
    samples: Annotated[
        Optional[int],
        typer.Option("--samples", metavar="N", help="Custom: samples per epoch."),
    ] = None,
    tokens: Annotated[
        Optional[float],
        typer.Option("--tokens", metavar="N", help="Custom: training tokens (6·N·D FLOPs)."),
    ] = None,
    epochs: Annotated[float, typer.Option("--epochs", metavar="N", help="Custom: epochs.")] = 1.0,
    batch_size: Annotated[
        int, typer.Option("--batch-size", metavar="N", help="Custom: batch size.")
    ] = 32,
    precision: Annotated[
        str,
        typer.Option("--precision", metavar="PRECISION", help="Custom: fp32, tf32, bf16 or fp16."),
    ] = "bf16",
    seq_len: Annotated[
        Optional[int],
        typer.Option("--seq-len", metavar="N", help="Custom transformer: tokens per sequence."),
    ] = None,
    layers: Annotated[
        Optional[int],
        typer.Option(
            "--layers",
            metavar="N",
            help="Custom transformer shape (with --hidden, --heads and --seq-len): sizes the "
            "activations and adds the attention FLOPs.",
        ),
    ] = None,
    hidden: Annotated[
        Optional[int], typer.Option("--hidden", metavar="N", help="Custom: hidden size.")
    ] = None,
    heads: Annotated[
        Optional[int], typer.Option("--heads", metavar="N", help="Custom: attention heads.")
    ] = None,
    flash_attention: Annotated[
        bool,
        typer.Option(
            "--flash-attention",
            help="Custom: the attention scores are never stored (FlashAttention, fused SDPA).",
        ),
    ] = False,
    activation_bytes: Annotated[
        Optional[float],
        typer.Option(
            "--activation-bytes",
            metavar="B",
            help="Custom: activation memory per sample in bytes, where the shape is not given.",
        ),
    ] = None,
    method: MethodOpt = None,
    lora_rank: LoraRankOpt = None,
    base_bits: BaseBitsOpt = None,
    optimizer: OptimizerOpt = None,
    checkpointing: CheckpointingOpt = None,
    vocab_size: VocabOpt = None,
    micro_batch: MicroBatchOpt = None,
    eval_fraction: EvalOpt = None,
    assume_gpu: AssumeGpuOpt = None,
    gpus: GpusOpt = 1,
    rules: RulesOpt = None,
    prices: PricesOpt = None,
    kwh_price: KwhOpt = None,
    serve: Annotated[
        Optional[str],
        typer.Option(
            "--serve",
            metavar="MODEL",
            help="Size inference instead of training: a model of the catalog (`llama-3.1-8b`, "
            "`qwen3-30b-a3b`, a Hugging Face id), a local config.json, GGUF or safetensors "
            "file (its header only), or a preset: llama3-8b-chat, llama3-70b-serve, "
            "gpt-oss-20b-local, qwen3-30b-a3b-local.",
        ),
    ] = None,
    quant: QuantOpt = None,
    context: ContextOpt = None,
    engine: EngineOpt = None,
    users: UsersOpt = None,
    target_tok_s: TargetTokOpt = None,
    max_ttft: MaxTtftOpt = None,
    prompt_tokens: PromptTokensOpt = None,
    reply_tokens: ReplyTokensOpt = None,
    kv_cache: KvCacheOpt = None,
    assume_cpu: AssumeCpuOpt = None,
    json_out: Annotated[
        Optional[str],
        typer.Option(
            "--json",
            metavar="PATH|-",
            help="Write the advice as JSON to PATH or stdout ('-') instead of the summary.",
        ),
    ] = None,
) -> None:
    """Say whether a machine is enough for a workload, and what to buy or rent.

    Prints the class of hardware the workload needs within the deadline (a CPU, one GPU, one
    machine of up to 8 GPUs, several machines), whether this machine is enough, the cheapest
    option of that class with its price and the cost of one run rented and owned, why that
    class and not the one below, the time to train here and on every option, and what would
    change the answer. Give a preset (--workload) or describe your own (--params with
    --flops-per-sample and --samples, or --tokens). Without --profile: the newest scan in
    reports/. Touches no hardware and needs no torch."""
    from hwadvisor.render.jsonio import to_json, write_new_file

    given = serve_options(
        quant=quant,
        context=context,
        engine=engine,
        users=users,
        target_tok_s=target_tok_s,
        max_ttft_s=max_ttft,
        prompt_tokens=prompt_tokens,
        reply_tokens=reply_tokens,
        kv_cache=kv_cache,
        assume_cpu=assume_cpu,
    )
    if serve is not None:
        _serve(serve, profile_path, json_out, assume_gpu, gpus, given, prices, kwh_price)
        return
    refuse_serve_options(given)
    custom = None
    if params is not None:
        custom = {
            "parameters": _whole("--params", params),
            "flops_per_sample": _finite_number("--flops-per-sample", flops_per_sample),
            "samples": samples,
            "tokens": None if tokens is None else _whole("--tokens", tokens),
            "epochs": _finite_number("--epochs", epochs),
            "batch_size": batch_size,
            "precision": precision,
            "sequence_length": seq_len,
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "flash_attention": flash_attention,
        }
        per_sample = _finite_number("--activation-bytes", activation_bytes)
        if per_sample is not None:
            key = "activation_bytes_per_sample" if tokens is None else "activation_bytes_per_token"
            custom[key] = per_sample if tokens is None else per_sample / (seq_len or 1)
    elif any(v is not None for v in (layers, hidden, heads, seq_len, activation_bytes)):
        raise UsageError(
            "--layers/--hidden/--heads/--seq-len/--activation-bytes describe a "
            "custom workload: give --params too"
        )
    from hwadvisor.methods import TrainingOptions

    training = TrainingOptions(
        method=method,
        lora_rank=lora_rank,
        base_bits=base_bits,
        optimizer=optimizer,
        checkpointing=checkpointing,
        micro_batch=micro_batch,
        eval_fraction=_finite_number("--eval-fraction", eval_fraction),
        vocab_size=vocab_size,
    )
    request = _advice_request(
        workload, custom, assume_gpu, gpus, rules, prices, deadline, kwh_price, training=training
    )
    profile = _read_any(profile_path) if profile_path is not None else _default_profile()
    result = request.run(profile)
    if json_out == "-":
        sys.stdout.write(to_json(result))
    elif json_out is not None:
        written = write_new_file(Path(json_out), to_json(result))
        _stderr().print(f"Advice written to [bold]{_escape(str(written))}[/bold]")
    else:
        from hwadvisor.render.console import render_advice
        from hwadvisor.render.terminal import console as terminal_console

        render_advice(result, terminal_console(), profile=profile)


def _read_any(path: Path) -> Profile:
    """A saved profile, or any file ``hwadvisor import`` reads. A saved profile is parsed
    directly: the importers (and their readiness rules) load only for other formats, which
    keeps `advise` quick to start."""
    from hwadvisor.model.load import looks_like_profile, parse_profile, read_text_file

    text = read_text_file(path)
    if looks_like_profile(text):
        return parse_profile(text, str(path))
    from hwadvisor.importers.detect import import_text

    return import_text(text, str(path))


def _model_name(value: str) -> str:
    """``--serve``'s value: an option there (``--serve --help``) means the model was left out."""
    if value.startswith("-"):
        raise UsageError(
            f"--serve needs a model before {value}: for example --serve llama-3.1-8b "
            "(`hwadvisor advise --help` lists the options)"
        )
    return value


def _slug(name: str) -> str:
    """A model's name as a file-name part: letters, digits, '.', '-' and '_' only."""
    import re as _re

    return _re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "model"


def _serve(
    model: str,
    profile_path: Path | None,
    json_out: str | None,
    assume_gpu: list[str] | None,
    gpus: int,
    given: dict[str, Any],
    prices_path: Path | None = None,
    kwh_price: float | None = None,
) -> None:
    """``advise --serve``: the inference answer, printed or written as JSON (with the user's
    ``--prices`` and ``--kwh-price`` where given)."""
    import datetime as _dt

    from hwadvisor.advise.pricing import builtin_prices, load_prices
    from hwadvisor.advise.serving import build_request, check_request, serve_advice
    from hwadvisor.model.facts import plain_json
    from hwadvisor.model.schema_version import SCHEMA_VERSION
    from hwadvisor.render.jsonio import write_new_file

    request = build_request(
        _model_name(model), **given, assume_gpu=tuple(assume_gpu or ()), gpus=gpus
    )
    checked = check_request(request)  # a model it cannot size is said before any machine is read
    profile: Profile | None
    if profile_path is not None:
        profile = _read_any(profile_path)
    elif assume_gpu or request.assume_cpu:
        # A what-if: the assumed GPU (or CPU) is the question. A saved scan adds this machine beside
        # it; detecting it now (seconds) would only add an unmeasured line.
        profile = _saved_profile(Path("reports"))
        if profile is None:
            _note(
                "No profile in reports: the answer leaves this machine out "
                "(`hwadvisor scan` or -p FILE puts it beside the assumed hardware)"
            )
    else:
        profile = _default_profile()
    prices = (load_prices(prices_path) if prices_path else builtin_prices()).with_kwh(kwh_price)
    answer = serve_advice(profile, request, prices, checked=checked)
    if json_out is not None:
        document = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "hwadvisor", "version": __version__},
            "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "inference": plain_json(answer),
        }
        text = json.dumps(document, indent=2, allow_nan=False) + "\n"
        if json_out == "-":
            sys.stdout.write(text)
        else:
            written = write_new_file(Path(json_out), text)
            _stderr().print(f"Advice written to [bold]{_escape(str(written))}[/bold]")
        return
    from hwadvisor.render.serve_console import render_serve
    from hwadvisor.render.terminal import console as terminal_console

    render_serve(answer, terminal_console())


def _default_profile(folder: Path = Path("reports")) -> Profile:
    """The newest profile ``scan`` left in ``folder`` (said on stderr), else this machine
    detected now without benchmarks."""
    found = _saved_profile(folder)
    if found is not None:
        return found
    from hwadvisor.pipeline import ScanOptions, run_scan

    _stderr().print(
        f"No profile in {_escape(str(folder))}: detecting this machine without benchmarks "
        "(hwadvisor scan measures it)"
    )
    return run_scan(ScanOptions(out_dir=folder, bench=False))


def _saved_profile(folder: Path) -> Profile | None:
    """The newest profile ``scan`` left in ``folder`` (said on stderr), or ``None``."""
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not paths:
        return None  # and the profile's models are not loaded
    from hwadvisor.errors import InputError
    from hwadvisor.model.load import load_profile

    newest: tuple[str, Path, Profile] | None = None
    for path in paths:
        try:
            found = load_profile(path)
        except InputError:
            continue  # not a profile (or unreadable): another file of the folder
        if found.imported is None and (newest is None or found.created_utc > newest[0]):
            newest = (found.created_utc, path, found)
    if newest is None:
        return None
    _stderr().print(
        f"Using {_escape(str(newest[1]))} (the newest profile in {_escape(str(folder))})"
    )
    return newest[2]


@app.command(
    name="import",
    epilog=epilog(
        [
            "hwadvisor import bug-report.txt        # reports/bug-report-imported.json",
            "hwadvisor import collect_env.txt nvidia-smi-q.txt lscpu.txt  # one machine",
            "nvidia-smi -q -x > smi.xml && hwadvisor import smi.xml --json -",
            "hwadvisor import bug-report.txt -f json,html,pdf   # and the report",
        ],
        _WRITES_DEGRADED,
    ),
)
def import_(
    sources: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...",
            help="What another tool printed about the machine: collect_env, nvidia-smi (-q, -q -x, "
            "the table, --query-gpu CSV, topo -m, -L), rocm-smi, amd-smi, gpustat, lscpu, "
            "/proc/cpuinfo, system_profiler, or a saved profile. Several files describing one "
            "machine are merged.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="DIR", help="Folder for the profile.", file_okay=False),
    ] = Path("reports"),
    json_out: Annotated[
        Optional[str],
        typer.Option(
            "--json",
            metavar="PATH|-",
            help="Write the profile to PATH exactly (refused if it exists), or '-' for stdout.",
        ),
    ] = None,
    formats: FormatOpt = "json",
    paper: PaperOpt = "A4",
    redact: RedactOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Turn other tools' output about a machine into a profile.

    Reads what collect_env, nvidia-smi, rocm-smi, lscpu and others printed. The profile has the
    same schema as a scan's: what the files cannot tell is null with a reason, and each fact
    names the file it came from. Each file's format is detected from its content; several
    files describing one machine are merged."""
    from hwadvisor.importers.detect import import_files
    from hwadvisor.render.report import parse_formats, parse_paper

    how = _Output(
        json_out=json_out,
        out=out,
        formats=parse_formats(formats),
        paper=parse_paper(paper),
        redact=redact,
        quiet=quiet,
    )
    profile = import_files(sources)
    source = sources[0]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", source.stem).strip("._") or "imported"
    _emit(profile, how, _stderr(), stem=f"{stem}-imported")


@app.command(
    epilog=epilog(
        [
            "hwadvisor report reports/box-20261121T100203Z.json   # .html, .pdf beside it",
            "hwadvisor report box.json -f pdf --paper Letter -o out/",
            "hwadvisor report box.json --template-dir my-templates/",
            "hwadvisor report box.json --serve llama-3.1-8b --engine vllm --users 8",
        ],
        _WRITES_DEGRADED,
    )
)
def report(
    source: Annotated[
        Path,
        typer.Argument(metavar="FILE.json", help="A saved profile (any schema version)."),
    ],
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            file_okay=False,
            help="Folder for the reports (default: next to FILE.json).",
        ),
    ] = None,
    formats: FormatOpt = "html,pdf",
    paper: PaperOpt = "A4",
    template_dir: TemplateDirOpt = None,
    redact: RedactOpt = None,
    quiet: QuietOpt = False,
    serve: Annotated[
        Optional[str],
        typer.Option(
            "--serve",
            metavar="MODEL",
            help="Open the report with the inference answer for MODEL (as `advise --serve`): "
            "what serves it, how fast, for how many users, the memory plan and prices.",
        ),
    ] = None,
    quant: QuantOpt = None,
    context: ContextOpt = None,
    engine: EngineOpt = None,
    users: UsersOpt = None,
    target_tok_s: TargetTokOpt = None,
    max_ttft: MaxTtftOpt = None,
    prompt_tokens: PromptTokensOpt = None,
    reply_tokens: ReplyTokensOpt = None,
    kv_cache: KvCacheOpt = None,
    prices: PricesOpt = None,
    kwh_price: KwhOpt = None,
) -> None:
    """Write a saved profile's report again, as HTML and PDF.

    Takes a profile of any schema version and touches no hardware; the same JSON always gives
    the same HTML. With --serve MODEL the first page answers whether this machine serves the
    model and what to buy or rent to serve it (files named FILE-serve-MODEL)."""
    from hwadvisor.model.load import parse_profile, read_text_file
    from hwadvisor.render.report import parse_formats, parse_paper, write_reports

    given = serve_options(
        quant=quant,
        context=context,
        engine=engine,
        users=users,
        target_tok_s=target_tok_s,
        max_ttft_s=max_ttft,
        prompt_tokens=prompt_tokens,
        reply_tokens=reply_tokens,
        kv_cache=kv_cache,
    )
    chosen = parse_formats(formats)
    request = checked = None
    if serve is not None:
        from hwadvisor.advise.serving import build_request, check_request, serve_advice

        request = build_request(_model_name(serve), **given)
        checked = check_request(request)
    else:
        refuse_serve_options(given)
        if prices is not None or kwh_price is not None:
            raise UsageError(
                "--prices and --kwh-price price the serving page: give --serve MODEL too "
                "(a saved profile's own advice keeps the prices it was made with)"
            )
    text = read_text_file(source)
    profile = parse_profile(text, str(source))
    serving = None
    stem = source.stem
    if request is not None:
        from hwadvisor.advise.pricing import builtin_prices, load_prices

        priced = (load_prices(prices) if prices else builtin_prices()).with_kwh(kwh_price)
        serving = serve_advice(profile, request, priced, checked=checked)
        stem = f"{source.stem}-serve-{_slug(serving.model)}"
    written = write_reports(
        profile,
        folder=out or source.parent,
        stem=stem,
        serving=serving,
        formats=chosen,
        paper=parse_paper(paper),
        template_dir=template_dir,
        redact=redact,
        source_text=text,
    )
    err = _stderr()
    for path in written.files if not quiet else ():
        err.print(f"Report written to [bold]{_escape(str(path))}[/bold]")
    for warning in written.warnings:
        err.print(f"[yellow]{_escape(warning)}[/yellow]", soft_wrap=True)  # one line
    if written.warnings:
        raise typer.Exit(ExitStatus.DEGRADED)


@app.command(
    "calibrate-serve",
    epilog=epilog(
        [
            "hwadvisor calibrate-serve bench.md               # llama-bench: measured vs predicted",
            "hwadvisor calibrate-serve vllm.log server.log     # vLLM / llama.cpp memory records",
            "hwadvisor calibrate-serve run.log -p box.json     # the run was on this scanned box",
            "hwadvisor calibrate-serve bench.csv --out mine.toml  # rows for your own calibration",
        ],
        [ExitStatus.INPUT_ERROR, ExitStatus.IO_ERROR],
    ),
)
def calibrate_serve(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...",
            help="Saved output of llama-bench (table, CSV, JSON), llama.cpp or Ollama logs, "
            "llama-fit-params or vLLM start-up logs.",
            show_default=False,
        ),
    ],
    profile: Annotated[
        Optional[Path],
        typer.Option(
            "--profile",
            "-p",
            metavar="FILE.json",
            dir_okay=False,
            help="The scanned machine the runs were on: its measured figures for records that "
            "name no device.",
        ),
    ] = None,
    json_out: Annotated[
        Optional[str],
        typer.Option("--json", metavar="PATH|-", help="The records as JSON, to PATH or '-'."),
    ] = None,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            metavar="FILE.toml",
            dir_okay=False,
            help="Also write the records as calibration rows ([[speed]], [[memory]]); never "
            "overwrites a file.",
        ),
    ] = None,
) -> None:
    """Read what inference tools printed; compare measured speeds with the serving model.

    Each file is recognised by its content; one that is not is skipped with the reason. Each
    measured speed is compared (measured/predicted) with the serving model's estimate for the
    same model, quant and engine on the GPU named in the output (catalog peak figures) or the
    --profile machine (measured figures)."""
    from hwadvisor import calibrate_serve as cs
    from hwadvisor.errors import InputError
    from hwadvisor.render.jsonio import write_new_file

    results = cs.read_files(files)
    if not any(r.parsed for r in results):
        reasons = "; ".join(f"{r.path}: {r.error}" for r in results)
        raise InputError(f"no file could be read: {reasons}")
    machine: list[cs.Hardware] = []
    if profile is not None:
        from hwadvisor.model.load import load_profile

        machine = cs.machine_from_profile(load_profile(profile))
    comparisons = [cs.compare(rec, machine) for r in results if r.parsed for rec in r.parsed.speed]
    if json_out == "-":
        sys.stdout.write(cs.to_json(results, comparisons))
    else:
        if json_out is not None:
            write_new_file(Path(json_out), cs.to_json(results, comparisons))
        sys.stdout.write(cs.render_text(results, comparisons))
    if out is not None:
        write_new_file(out, cs.to_calibration_toml(results, comparisons))
        _stderr().print(f"Calibration rows written to [bold]{_escape(str(out))}[/bold]")


@app.command(
    epilog=epilog(
        [
            "hwadvisor diff before.json after.json",
            "hwadvisor diff before.json after.json --json - | jq .benchmarks",
            "hwadvisor diff a.json b.json --html diff.html --pdf diff.pdf",
        ],
        _WRITES_DEGRADED,
    )
)
def diff(
    before: Annotated[
        Path, typer.Argument(metavar="A.json", help="The earlier profile.", show_default=False)
    ],
    after: Annotated[
        Path, typer.Argument(metavar="B.json", help="The later profile.", show_default=False)
    ],
    json_out: Annotated[
        Optional[str],
        typer.Option("--json", metavar="PATH|-", help="The comparison as JSON, to PATH or '-'."),
    ] = None,
    html: Annotated[
        Optional[Path],
        typer.Option(
            "--html", metavar="PATH", dir_okay=False, help="Also write the comparison as HTML."
        ),
    ] = None,
    pdf: Annotated[
        Optional[Path],
        typer.Option(
            "--pdf", metavar="PATH", dir_okay=False, help="Also write the comparison as PDF."
        ),
    ] = None,
    redact: RedactOpt = None,
) -> None:
    """Compare two profiles: what changed, and by how much.

    Shows what changed in hardware, firmware and software stack, each benchmark's ratio, and
    whether the scenario verdict changed. Volatile readings (free memory, temperatures) are
    ignored."""
    from hwadvisor.diff import diff_profiles
    from hwadvisor.model.load import load_profile
    from hwadvisor.redact import default_salt, redact_label, redact_profiles, salt_warning
    from hwadvisor.render.diff_console import render_diff
    from hwadvisor.render.jsonio import to_json, write_new_file
    from hwadvisor.render.terminal import console as terminal_console

    a, b = load_profile(before), load_profile(after)

    def compared(redacted: bool) -> Any:
        if not redacted:
            return diff_profiles(a, b, a_label=before.name, b_label=after.name)
        salt = default_salt()
        ra, rb = redact_profiles([a, b], salt)
        return diff_profiles(
            ra,
            rb,
            a_label=redact_label(before.name, [a, b], salt),
            b_label=redact_label(after.name, [a, b], salt),
        )

    # As for reports: --redact redacts every output, --no-redact none, and by default the PDF,
    # the file that leaves the building.
    result = compared(bool(redact))
    warn = salt_warning() if (redact or (redact is None and pdf is not None)) else None
    if warn:
        _stderr().print(f"[yellow]{_escape(warn)}[/yellow]")
    if json_out == "-":
        sys.stdout.write(to_json(result))
    else:
        if json_out is not None:
            write_new_file(Path(json_out), to_json(result))
        render_diff(result, terminal_console())
    if html is not None or pdf is not None:
        from hwadvisor.diff import render_diff_html
        from hwadvisor.render.html import environment

        env = environment()
        # The shared page layout: paper, running header date and tool version.
        env.globals.update(paper="A4", date=result.b_created[:10], tool_version=__version__)
        if html is not None:
            write_new_file(html, render_diff_html(result, env))
        if pdf is not None:
            from hwadvisor.render.pdf import render_pdf

            shown = result if redact is not None else compared(True)
            write_new_file(pdf, render_pdf(render_diff_html(shown, env)))
    if warn:
        raise typer.Exit(ExitStatus.DEGRADED)


@app.command(
    epilog=epilog(["hwadvisor workloads", "hwadvisor advise -p box.json -w resnet50-imagenet"], [])
)
def workloads() -> None:
    """List the workload presets, with their assumptions.

    These are the names that --workload takes (scan, advise, fleet advise)."""
    from rich.table import Table

    from hwadvisor.render.terminal import console as terminal_console
    from hwadvisor.workloads import load_workloads

    table = Table("name", "kind", "what", "precision", box=None)
    for w in load_workloads():
        table.add_row(w.name, w.kind, w.description, w.precision)
    terminal_console().print(table)


@app.command(
    epilog=epilog(
        [
            "hwadvisor gpus                        # the whole GPU catalog",
            "hwadvisor gpus 4090                   # every row with 4090 in its name",
            "hwadvisor gpus h100 --json            # as JSON, for scripts",
        ],
        [ExitStatus.USAGE],
    )
)
def gpus(
    name_filter: CatalogFilterArg = None,
    as_json: TableJsonOpt = False,
) -> None:
    """List the GPU catalog: the names --assume-gpu takes, with memory, peaks and price.

    Each row: the catalog name, its class (consumer, workstation, datacenter), memory, the
    dense tensor peak (bf16, else fp16) and fp32 in TFLOP/s, memory bandwidth, and the card's
    price from the built-in price catalog with its date."""
    from hwadvisor.advise import builtin_prices
    from hwadvisor.advise.names import gpu_rows
    from hwadvisor.render.terminal import console as terminal_console
    from hwadvisor.units import money

    rows = gpu_rows(name_filter)
    if not rows:
        raise UsageError(
            f"no GPU in the catalog matches {name_filter!r}; `hwadvisor gpus` lists them all"
        )
    prices = builtin_prices()
    if as_json:
        out = []
        for r in rows:
            card = prices.cards.get(r.name)
            out.append(
                {
                    **r.as_dict(),
                    "price": card.price if card else None,
                    "price_date": card.date if card else None,
                    "sold_in": card.sold_in if card else None,
                    "currency": prices.currency,
                }
            )
        typer.echo(json.dumps(out, indent=1))
        return
    from rich.table import Table

    table = Table(
        "name", "class", "memory", "tensor", "fp32", "bandwidth", "price", box=None, pad_edge=False
    )
    for r in rows:
        card = prices.cards.get(r.name)
        table.add_row(
            r.name,
            r.gpu_class or "—",
            f"{r.memory_gb:g} GB" if r.memory_gb else "—",
            f"{r.tensor_tflops:,.0f}" if r.tensor_tflops else "—",
            f"{r.fp32_tflops:,.1f}" if r.fp32_tflops else "—",
            f"{r.bandwidth_gbs:,.0f} GB/s" if r.bandwidth_gbs else "—",
            f"{money(card.price, prices.currency)}"
            + (f" ×{card.sold_in}" if card.sold_in > 1 else "")
            + f" ({card.date[:7]})"
            if card
            else "—",
        )
    console = terminal_console()
    console.print(table)
    lots = sorted({card.sold_in for r in rows if (card := prices.cards.get(r.name))} - {1})
    console.print(
        "tensor and fp32: dense TFLOP/s; price: a card's street price from the price catalog"
        + "".join(f"; ×{n}: sold only {n} at a time" for n in lots),
        style="dim",
    )


@app.command(
    epilog=epilog(
        [
            "hwadvisor cpus                        # the whole CPU catalog",
            "hwadvisor cpus epyc                   # every row with EPYC in its name",
            "hwadvisor cpus 7950x --json           # as JSON, for scripts",
        ],
        [ExitStatus.USAGE],
    )
)
def cpus(
    name_filter: CatalogFilterArg = None,
    as_json: TableJsonOpt = False,
) -> None:
    """List the CPU catalog: the names --assume-cpu takes, with cores, memory and peaks.

    Each row: the name, its cores, the fastest memory the vendor supports and its bus, the
    peak memory bandwidth (what decode on a CPU reads at), the cores' FP32 peak in TFLOP/s,
    and the RAM assumed where a name gives none."""
    import dataclasses

    from hwadvisor.catalog.cpus import all_cpus, find_cpu
    from hwadvisor.render.terminal import console as terminal_console

    rows = list(all_cpus())
    if name_filter:
        words = [w for w in name_filter.casefold().split() if w]
        rows = [r for r in rows if all(w in r.name.casefold() for w in words)]
        named = find_cpu(name_filter)
        if named is not None and named not in rows:
            rows = [named]
    if not rows:
        raise UsageError(
            f"no CPU in the catalog matches {name_filter!r}; `hwadvisor cpus` lists them all"
        )
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=1))
        return
    from rich.table import Table

    table = Table("name", "cores", "memory", "bandwidth", "fp32", "RAM", box=None, pad_edge=False)
    for r in rows:
        table.add_row(
            r.name,
            str(r.cores),
            f"{r.memory}, {r.bus_bits}-bit",
            f"{r.bandwidth_gbs:,.1f} GB/s",
            f"{r.fp32_tflops:,.2f}",
            f"{r.memory_gb:g} GB",
        )
    console = terminal_console()
    console.print(table)
    console.print(
        "bandwidth: peak, the bus times the fastest memory the vendor supports; fp32: TFLOP/s; "
        "RAM: assumed where --assume-cpu names none",
        style="dim",
    )


@app.command(epilog=epilog(["hwadvisor schema > profile.schema.json"], [ExitStatus.IO_ERROR]))
def schema() -> None:
    """Print the JSON Schema of the profile that scan writes.

    The schema is JSON Schema draft 2020-12."""
    from hwadvisor.model.jsonschema import profile_schema

    typer.echo(json.dumps(profile_schema(), indent=2))


def _register_groups() -> None:
    # Command groups live in their own modules (imported here, light: typer only).
    from hwadvisor.export_cli import export_app
    from hwadvisor.fleet.cli import fleet_app

    app.add_typer(fleet_app, name="fleet")
    app.add_typer(export_app, name="export")


_register_groups()


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` names (``advise``, ``fleet`` …), where they name
    one first (after ``--debug``): typer builds every command's options from its signature
    before it parses one (20 ms for all of them, 5 for ``advise``). Anything else (``--help``,
    ``--version``, a mistyped name, which is answered with the nearest names, shell completion)
    gets the whole app."""
    words = [a for a in args if a != "--debug"]
    if not words or words[0].startswith("-") or os.environ.get("_HWADVISOR_COMPLETE"):
        return app
    name = words[0]
    from typer.main import get_command_name

    commands = [
        info
        for info in app.registered_commands
        if info.callback is not None
        and (info.name or get_command_name(info.callback.__name__)) == name
    ]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        return app
    one = copy.copy(app)  # the same settings and root options, its lists replaced, not changed
    one.registered_commands = commands
    one.registered_groups = groups
    return one


def _error(message: str) -> None:
    typer.echo(f"hwadvisor: error: {message}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command and turn every outcome into a documented exit status.

    Usage errors are reported by typer itself (exit 2). Our own errors carry their exit status;
    anything else is a bug: one line, and the traceback only with ``--debug``.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        if "-" in args:
            _error("standard output is closed: nothing can be written to '-'")
            return int(ExitStatus.IO_ERROR)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process
    from hwadvisor.launch import stop_helper
    from hwadvisor.signals import Stopped, installed

    try:
        with installed(), _finally(stop_helper):
            _app_for(args)(args=args, prog_name="hwadvisor", standalone_mode=True)
    except Stopped as exc:
        _error(f"stopped by {exc.name}; no partial file was written")
        return 128 + exc.signum
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return int(ExitStatus.OK)
        if _reader_left(exc):
            return int(ExitStatus.OK)
        return code if isinstance(code, int) else int(ExitStatus.ERROR)
    except KeyboardInterrupt:
        return _interrupted()
    except HwAdvisorError as exc:
        if debug:
            traceback.print_exc()
        _error(str(exc))
        return int(exc.exit_status)
    except BrokenPipeError:
        # `hwadvisor scan --json - | head`: the reader left; not an error of ours.
        _quiet_broken_pipe()
        return int(ExitStatus.OK)
    except Exception as exc:  # noqa: BLE001 - the one place where a bug becomes a message
        if (why := _write_failed(exc)) is not None:
            _error(why)
            return int(ExitStatus.IO_ERROR)
        stopped = _database_interrupted(exc)
        if stopped is not None:
            # DuckDB answers Ctrl-C or SIGTERM inside a statement with its own exception.
            if stopped == ExitStatus.INTERRUPTED:
                return _interrupted()
            from hwadvisor.signals import Stopped

            _error(f"stopped by {Stopped(stopped - 128).name}; no partial file was written")
            return stopped
        if debug:
            traceback.print_exc()
        _error(f"internal error ({type(exc).__name__}: {exc}); rerun with --debug and report it")
        return int(ExitStatus.ERROR)
    return int(ExitStatus.OK)


def _database_interrupted(exc: BaseException) -> int | None:
    """The exit status where ``exc`` is DuckDB's "Query interrupted": 128 + the stop signal
    that interrupted it where one is in the chain (SIGTERM: 143) or was acted on last (DuckDB
    may raise a plain RuntimeError in place of the handler's exception), else 130 (Ctrl-C);
    None for any other error."""
    from hwadvisor import signals
    from hwadvisor.signals import Stopped

    interrupted = False
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Stopped):
            return 128 + seen.signum
        kind = type(seen)
        interrupted |= kind.__name__ == "InterruptException" and "duckdb" in kind.__module__
        interrupted |= isinstance(seen, RuntimeError) and str(seen) == "Query interrupted"
        seen = seen.__cause__ or seen.__context__
    if not interrupted:
        return None
    return 128 + signals.last_stop if signals.last_stop else int(ExitStatus.INTERRUPTED)


#: Errors of a write that no retry here mends: a full disk or quota, a file too large, a device
#: error (``> /dev/full``, a full disk behind a redirect, a dying disk).
_WRITE_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name)
)


def _write_failed(exc: BaseException) -> str | None:
    """The one-line message where ``exc`` is a failed write (most often of standard output:
    ``hwadvisor fleet summary > /dev/full``); None for anything else. Files hwadvisor writes
    say so in their own words (OutputError); what reaches here is stdout, or a write nobody
    wrapped, and is still the disk's fault, not a bug."""
    if not isinstance(exc, OSError) or exc.errno not in _WRITE_ERRNOS:
        return None
    why = exc.strerror or str(exc)
    if exc.filename is None and _stdout_cannot_take_more():
        _quiet_broken_pipe()  # the interpreter's last flush must not fail again
        return (
            f"cannot write to standard output: {why}: redirect it where there is room "
            "(or free some), and run it again"
        )
    where = os.fsdecode(exc.filename) if exc.filename else "the output"
    return f"cannot write {where}: {why}: free some space or write elsewhere, and run it again"


def _stdout_cannot_take_more() -> bool:
    """Whether standard output is ``/dev/full`` or a file on a full filesystem."""
    import stat

    try:
        fd = sys.stdout.fileno()
        info = os.fstat(fd)
        if stat.S_ISCHR(info.st_mode):
            return hasattr(os, "major") and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (
                1,
                7,
            )  # Linux's /dev/full
        if stat.S_ISREG(info.st_mode) and hasattr(os, "fstatvfs"):
            return os.fstatvfs(fd).f_bavail == 0
    except (OSError, ValueError, AttributeError):
        return False
    return False


def _reader_left(exc: BaseException) -> bool:
    """Whether ``exc`` comes from writing to a pipe whose reader left (``| head``): click turns
    that into exit 1; for us it is no error at all."""
    seen = exc.__context__
    while seen is not None:
        if isinstance(seen, BrokenPipeError) or (
            isinstance(seen, OSError) and seen.errno == errno.EPIPE
        ):
            _quiet_broken_pipe()
            return True
        seen = seen.__context__
    return False


def _quiet_broken_pipe() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _interrupted() -> int:
    from hwadvisor.isolation import kill_all_children

    kill_all_children()
    _error("interrupted")
    return int(ExitStatus.INTERRUPTED)


@contextlib.contextmanager
def _finally(action: Callable[[], None]) -> Iterator[None]:
    try:
        yield
    finally:
        action()


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


__all__ = ["app", "main", "run"]
