"""Command-line options shared by the top-level commands and the command groups (which cannot
import :mod:`hwadvisor.cli`: it imports them)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Optional

import typer

QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print nothing unless something goes wrong: no summary or file names; a failure, "
        "or what made the output degraded (exit 3), goes to stderr.",
    ),
]

_DURATION = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)?\s*$",
    re.IGNORECASE,
)
_HOURS_PER = {"m": 1 / 60, "h": 1.0, "d": 24.0, "w": 168.0}
#: The longest deadline taken: ten years.
MAX_DEADLINE_HOURS = 87_600.0


def parse_deadline(text: str | None) -> float | None:
    """A deadline as people type it, in hours: "8h", "36", "3d", "90min", "2 weeks" (a bare
    number is hours); :class:`typer.BadParameter` otherwise."""
    if text is None:
        return None
    found = _DURATION.match(text)
    if found is None:
        raise typer.BadParameter(
            f"{text!r} is not a duration: give hours or a number with a unit, e.g. 8h, 36, 3d, "
            "90min, 2w"
        )
    value = float(found.group(1))
    unit = (found.group(2) or "h").lower()
    hours = value * _HOURS_PER["m" if unit.startswith("m") else unit[0]]
    if not math.isfinite(hours) or hours <= 0 or hours > MAX_DEADLINE_HOURS:
        raise typer.BadParameter(f"must be more than 0 and at most ten years, got {text!r}")
    return hours


def _deadline(text: str) -> float:
    hours = parse_deadline(text)
    assert hours is not None
    return hours


DeadlineOpt = Annotated[
    Optional[float],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
    typer.Option(
        "--deadline",
        metavar="TIME",
        parser=_deadline,
        help="How long one training run may take: 8h, 36 (hours), 3d, 2w (default: 24 h, "
        "from the rules file). The scenario is the smallest class of hardware that meets it.",
    ),
]


def parse_kwh(value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or not 0 < value <= 10):
        raise typer.BadParameter(f"must be a price per kWh above 0 and at most 10, got {value!r}")
    return value


KwhOpt = Annotated[
    Optional[float],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
    typer.Option(
        "--kwh-price",
        metavar="PRICE",
        callback=parse_kwh,
        help="Electricity price per kWh for the energy cost of owned hardware (default: the "
        "price catalog's, 0.19 USD: the US residential average).",
    ),
]

# How the job is trained: with a preset (-w) they change it, with --params they describe it.
MethodOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
    typer.Option(
        "--method",
        metavar="full|lora|qlora",
        help="How the model is trained: every weight (full), LoRA adapters on a frozen 16-bit "
        "base, or QLoRA (a 4-bit base). Default: the preset's, else full.",
    ),
]
LoraRankOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--lora-rank", metavar="R", help="LoRA/QLoRA adapter rank (default 16)."),
]
BaseBitsOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--base-bits",
        metavar="16|8|4",
        help="Bits per frozen base weight with --method lora (QLoRA's are 4).",
    ),
]
OptimizerOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--optimizer",
        metavar="NAME",
        help="adamw (default), adamw-8bit, sgd (with momentum) or paged-adamw-8bit (states in "
        "host memory).",
    ),
]
CheckpointingOpt = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option(
        "--checkpointing/--no-checkpointing",
        help="Gradient checkpointing on (recompute activations: less memory, about a third "
        "more compute) or never. Default: turned on only where the job needs it to fit "
        "(transformers; conv presets that have the switch).",
        show_default=False,
    ),
]
VocabOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--vocab-size",
        metavar="N",
        help="Language model vocabulary (its logits take memory). Default 50,257 under 1B "
        "parameters, 32,000 from 1B.",
    ),
]
MicroBatchOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--micro-batch",
        metavar="N",
        help="Samples per GPU per pass, where fewer than --batch-size (the rest is gradient "
        "accumulation).",
    ),
]
EvalOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--eval-fraction",
        metavar="F",
        help="Share of the training time spent evaluating and saving checkpoints (default "
        "0.05, from the rules file).",
    ),
]


# ---- inference sizing (``advise --serve`` and ``fleet advise --serve``) ----
_TOKENS = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*([kKmM]?)\s*")


def parse_tokens(text: str) -> int:
    """A count of tokens as people write a context window: 8192, 32k, 128K, 1M (k = 1,024,
    as model cards count them: 128k is 131,072). Its range is the command's to check (one
    line, as for any other value out of range)."""
    found = _TOKENS.fullmatch(text.replace("_", "").replace(",", ""))
    if found is None:
        raise typer.BadParameter(f"must be a number of tokens (8192, 32k, 128k), got {text!r}")
    scale = {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(2).lower()]
    value = float(found.group(1)) * scale
    if value != int(value) or abs(value) > 2**40:
        raise typer.BadParameter(f"must be a whole number of tokens, got {text!r}")
    return int(value)


QuantOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--quant",
        metavar="Q",
        help="With --serve: the weights' quantization (Q4_K_M, Q8_0, F16, MXFP4, bf16, "
        "fp8, AWQ, ...). Default: Q4_K_M for llama.cpp and Ollama, else bf16.",
    ),
]
ContextOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--context",
        metavar="TOKENS",
        parser=parse_tokens,
        help="With --serve: context length in tokens, 8192 or 32k or 128k (default 8192, or "
        "the model's own window where shorter).",
    ),
]
EngineOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--engine",
        metavar="ENGINE",
        help="With --serve: llama.cpp (default), ollama, vllm, sglang, mlx, transformers, "
        "tensorrt-llm.",
    ),
]
UsersOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--users", metavar="N", help="With --serve: users at once (1)."),
]
TargetTokOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--target-tok-s",
        metavar="X",
        help="With --serve: the decode speed each user must get, tokens/s (10).",
    ),
]
MaxTtftOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--max-ttft",
        metavar="S",
        help="With --serve: the longest wait for a reply's first token, seconds, that still "
        "serves a user (10; a --prompt-tokens prompt computed first).",
    ),
]
PromptTokensOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--prompt-tokens",
        metavar="N",
        parser=parse_tokens,
        help="With --serve: prompt length for the time to first token (512).",
    ),
]
ReplyTokensOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--reply-tokens",
        metavar="N",
        parser=parse_tokens,
        help="With --serve: reply length; the throughput counts each prompt against it (256).",
    ),
]
KvCacheOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--kv-cache",
        metavar="TYPE",
        help="With --serve: the KV cache's precision: f16 (default), fp8, q8_0, q4_0.",
    ),
]


AssumeCpuOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--assume-cpu",
        metavar="NAME",
        help="With --serve: also size on this CPU from the CPU catalog (repeatable), with its "
        "RAM and memory speed where named, e.g. 'Ryzen 9 7950X 64GB DDR5-6000' "
        "(`hwadvisor cpus` lists them).",
    ),
]


CatalogFilterArg = Annotated[
    Optional[str],  # noqa: UP045
    typer.Argument(metavar="[FILTER]", help="Words or a model number the name must have."),
]
TableJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def serve_options(**given: object) -> dict[str, object]:
    """The serving options given on the command line, by ``ServeRequest`` field name (a list
    option as a tuple; an empty one as not given)."""
    return {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in given.items()
        if value is not None and value != []
    }


def refuse_serve_options(given: dict[str, object]) -> None:
    """Serving options without ``--serve``: a usage error naming them (exit 2)."""
    if given:
        from hwadvisor.errors import UsageError

        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{flags} size inference: give --serve MODEL too")


__all__ = [
    "MAX_DEADLINE_HOURS",
    "AssumeCpuOpt",
    "BaseBitsOpt",
    "CatalogFilterArg",
    "CheckpointingOpt",
    "ContextOpt",
    "DeadlineOpt",
    "EngineOpt",
    "EvalOpt",
    "KvCacheOpt",
    "KwhOpt",
    "LoraRankOpt",
    "MaxTtftOpt",
    "MethodOpt",
    "MicroBatchOpt",
    "OptimizerOpt",
    "PromptTokensOpt",
    "QuantOpt",
    "QuietOpt",
    "ReplyTokensOpt",
    "TableJsonOpt",
    "TargetTokOpt",
    "UsersOpt",
    "VocabOpt",
    "parse_deadline",
    "parse_kwh",
    "refuse_serve_options",
    "serve_options",
]


def _command_line(text: str | None) -> str | None:
    """A command line as a shell would split it: an empty or unbalanced one is refused now
    (exit 2), a program that cannot run is found by the scan (exit 3)."""
    if text is None:
        return None
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not a command line: {exc}") from None
    if not words:
        raise typer.BadParameter("give an interpreter, e.g. /opt/conda/envs/ml/bin/python")
    return text


TorchPythonOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
    typer.Option(
        "--torch-python",
        callback=_command_line,
        envvar="HWADVISOR_TORCH_PYTHON",
        metavar="PYTHON",
        help="Read the PyTorch facts with this interpreter instead of hwadvisor's own: a path "
        "(a conda environment's bin/python) or a command line that runs python (e.g. 'docker "
        "exec -i trainer python'; split like a shell would, never run by one). It needs torch, "
        "not hwadvisor: a self-contained probe runs there under the same time limit and is "
        "killed with its process group. If it cannot run or answers nothing usable, the torch "
        "facts are unknown and the scan exits 3. The benchmarks still run with hwadvisor's "
        "own Python (skipped when that has no torch).",
    ),
]


def _check_labels(values: list[str] | None) -> list[str] | None:
    from hwadvisor.model.labels import LabelError, parse_label

    for value in values or []:
        try:
            parse_label(value)
        except LabelError as exc:
            raise typer.BadParameter(str(exc)) from exc
    return values


LabelOpt = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
    typer.Option(
        "--label",
        metavar="KEY=VALUE",
        callback=_check_labels,
        help="Label this machine in its profile (repeatable), e.g. --label site=a --label "
        'rack=r12; added to HWADVISOR_LABELS="site=a,rack=r12". Keys: [a-z0-9_.-], values: '
        "[A-Za-z0-9_.-], up to 63 characters. The fleet exports site, rack and group.",
        show_default=False,
    ),
]


def scan_labels(items: list[str] | None) -> dict[str, str] | None:
    """The labels a scan puts in its profile: ``HWADVISOR_LABELS``, then ``--label``; a bad one
    is a usage error (exit 2), raised before the scan starts."""
    import os

    from hwadvisor.errors import UsageError
    from hwadvisor.model.labels import LabelError, parse_labels

    try:
        return parse_labels(items or [], os.environ) or None
    except LabelError as exc:
        raise UsageError(str(exc)) from exc
