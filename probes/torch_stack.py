"""The framework stack as PyTorch sees it: build, CUDA/ROCm/MPS/XPU availability, devices.

The collector is :mod:`hwadvisor.probes.torch_facts` (standard library and torch only). It runs
in one of two ways:

- :func:`torch_child`, in a spawned child process of hwadvisor's own interpreter: reading device
  properties initialises CUDA, which must never happen in the scanning process;
- :func:`run_torch_python`, in *another* interpreter (``scan --torch-python``: a conda
  environment's python, or a wrapper that runs python in a container), which needs torch but not
  hwadvisor: the collector's source is handed to it with ``-c``, under the same time limit and
  process isolation, and its one result line is parsed here.
"""

from __future__ import annotations

import json
import shlex
from importlib import resources
from typing import Any

from pydantic import Field, ValidationError

from hwadvisor.isolation import ChildResult, run_command
from hwadvisor.model.facts import StrictModel, unknown
from hwadvisor.model.profile import GpuInfo, TorchInfo
from hwadvisor.probes import torch_facts
from hwadvisor.probes.torch_facts import (
    DEVICE_FACTS,
    TORCH_FACTS,
    cudnn_version_string,
    nccl_version_string,
    pci_bus_id,
)

__all__ = [
    "DEVICE_FACTS",
    "TORCH_FACTS",
    "TorchReport",
    "collect_torch",
    "cudnn_version_string",
    "nccl_version_string",
    "parse_script_output",
    "pci_bus_id",
    "run_torch_python",
    "torch_child",
    "unknown_torch",
]

#: The environment variable that stands for ``scan --torch-python``.
TORCH_PYTHON_ENV = "HWADVISOR_TORCH_PYTHON"


class TorchReport(StrictModel):
    """What the torch probe returns: torch's view, and the non-NVIDIA GPUs only torch reports."""

    torch: TorchInfo = Field(default_factory=TorchInfo)
    accelerators: list[GpuInfo] = Field(default_factory=list)
    """ROCm (amd), MPS (apple) and XPU (intel) devices. NVIDIA devices come from NVML instead."""


def collect_torch(torch_module: Any | None = None) -> TorchReport:
    """Read torch's build, backends and devices. ``None`` imports the real torch (here, lazily)."""
    return TorchReport.model_validate(torch_facts.collect(torch_module))


def torch_child() -> dict[str, Any]:
    """Entry point for the isolated child process."""
    return collect_torch().model_dump(mode="json")


def unknown_torch(reason: str) -> TorchInfo:
    """Every torch fact unknown with ``reason``, attributed to no source: the probe did not
    answer, so the profile says neither "installed" nor "not installed"."""
    return TorchInfo.model_validate({name: unknown(reason) for name in TORCH_FACTS})


# --------------------------------------------------------------------------------------------
# Another interpreter


def script_source() -> str:
    """The collector's source, as the other interpreter runs it (``python -c SOURCE``)."""
    return (resources.files("hwadvisor.probes") / "torch_facts.py").read_text(encoding="utf-8")


def interpreter_argv(python: str) -> list[str]:
    """``python`` as a command: a path, or a command line such as ``conda run -n ml python`` or
    ``docker exec -i trainer python`` (split as a POSIX shell would, never run by a shell).
    :class:`ValueError` when it is empty or unbalanced."""
    argv = shlex.split(python)
    if not argv:
        raise ValueError("empty --torch-python")
    return argv


def parse_script_output(stdout: bytes) -> dict[str, Any]:
    """The report of the collector's result line in ``stdout``: the last line that starts with
    the marker (other lines, what the interpreter or its wrapper printed, are ignored).
    :class:`ValueError` with a one-line reason when there is none or it is not a report."""
    text = stdout.decode("utf-8", errors="replace")
    lines = [line for line in text.splitlines() if line.startswith(torch_facts.MARKER)]
    if not lines:
        shown = " ".join(text.split())[:120]
        raise ValueError(
            "no result line in its output"
            + (f" (it printed: {shown!r})" if shown else " (it printed nothing)")
        )
    try:
        result = json.loads(lines[-1][len(torch_facts.MARKER) :])
    except json.JSONDecodeError as exc:
        raise ValueError(f"its result line is not JSON ({exc.msg})") from None
    if not isinstance(result, dict) or result.get("format") != torch_facts.FORMAT:
        raise ValueError("its result line is not a torch report this hwadvisor reads")
    if not result.get("ok"):
        raise ValueError(f"the probe failed there: {result.get('error') or 'no reason given'}")
    report = result.get("report")
    if not isinstance(report, dict):
        raise ValueError("its result line holds no report")
    try:
        TorchReport.model_validate(report)
    except ValidationError as exc:
        raise ValueError(f"malformed report: {exc.error_count()} validation errors") from None
    return report


def run_torch_python(python: str, timeout_s: float) -> ChildResult:
    """The torch report from another interpreter, as a child's result: ``ok`` with the report's
    JSON, or ``failed``/``timeout`` with a one-line reason naming the interpreter."""
    try:
        argv = interpreter_argv(python)
    except ValueError as exc:
        return ChildResult("failed", error=f"--torch-python {python!r}: {exc}")
    done = run_command([*argv, "-c", script_source()], timeout_s=timeout_s)
    where = f"--torch-python {python!r}"
    if done.status != "ok":
        return ChildResult(done.status, error=f"{where}: {done.error}", seconds=done.seconds)
    try:
        report = parse_script_output(done.stdout)
    except ValueError as exc:
        why = str(exc)
        if done.returncode:
            tail = " ".join(done.stderr_tail.split())[-200:]
            why = f"exit status {done.returncode}" + (f": {tail}" if tail else f"; {why}")
        return ChildResult(
            "failed", error=f"{where}: {why}", seconds=done.seconds, stderr_tail=done.stderr_tail
        )
    return ChildResult("ok", value=report, seconds=done.seconds, stderr_tail=done.stderr_tail)
