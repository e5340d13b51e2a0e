"""The terminal's GPU table: an imported GPU that knows neither its PCIe link nor its power says
"unknown" once per cell, not "gen unknown/unknown xunknown/unknown" wrapped over four lines."""

from __future__ import annotations

import io

from rich.console import Console

from hwadvisor.importers.detect import import_text
from hwadvisor.render.console import render_summary

NAMES_ONLY = """\
PyTorch version: 2.1.2+cu121
CUDA used to build PyTorch: 12.1
Is CUDA available: True
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB
Nvidia driver version: 535.104.05
"""


def _render(text: str) -> str:
    out = io.StringIO()
    render_summary(import_text(text, "ce.txt"), Console(file=out, width=80, color_system=None))
    return out.getvalue()


def test_unknown_link_and_power_read_as_one_word() -> None:
    shown = _render(NAMES_ONLY)
    assert "xunknown" not in shown and "gen unknown" not in shown
    gpu_rows = [line for line in shown.splitlines() if "80.0 GiB" in line]
    assert len(gpu_rows) == 2
    for row in gpu_rows:
        assert row.split()[-2:] == ["unknown", "unknown"]
