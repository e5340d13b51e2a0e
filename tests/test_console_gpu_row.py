"""The terminal's GPU table: identical GPUs are one row ("2 × NVIDIA A100-SXM4-80GB"), and what
no GPU reports (PCIe link, power) is said once under the table, not "gen unknown/unknown
xunknown/unknown" cell by cell."""

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


def test_unknown_link_and_power_are_said_once_and_identical_gpus_folded() -> None:
    shown = _render(NAMES_ONLY)
    assert "xunknown" not in shown and "gen unknown" not in shown
    gpu_rows = [line for line in shown.splitlines() if line.split()[:1] in (["0"], ["1"], ["0–1"])]
    assert len(gpu_rows) == 1
    assert gpu_rows[0].split()[:2] == ["0–1", "2"]
    assert "2 × NVIDIA A100-SXM4-80GB" in gpu_rows[0]
    assert "unknown" not in gpu_rows[0]
    note = next(line for line in shown.splitlines() if line.startswith("not known for these GPUs"))
    assert "power limit" in note and "PCIe link" in note
    assert "capability" not in note  # the catalog knows it


def test_different_gpus_are_not_folded() -> None:
    mixed = NAMES_ONLY.replace("GPU 1: NVIDIA A100-SXM4-80GB", "GPU 1: NVIDIA A100-SXM4-40GB")
    shown = _render(mixed)
    assert any(line.split()[:1] == ["0"] and "80GB" in line for line in shown.splitlines())
    assert any(line.split()[:1] == ["1"] and "40GB" in line for line in shown.splitlines())
    assert " × " not in "".join(line for line in shown.splitlines() if "A100" in line)


def test_an_import_that_does_not_show_the_stack_is_not_called_ready() -> None:
    table = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  NVIDIA A10G         On   | 00000000:00:1E.0 Off |                    0 |
|  0%   25C    P8    16W / 300W |      0MiB / 23028MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""
    shown = _render(table)
    assert "the stack is ready" not in shown
    assert "does not show the stack" in shown


def test_the_report_of_an_import_says_what_it_was_read_from() -> None:
    from hwadvisor.render.html import render_html

    html = render_html(import_text(NAMES_ONLY, "bug-report.txt"), source_sha256="0" * 64)
    assert "Imported from bug-report.txt (collect_env output)" in html
    assert "the scan ran without benchmarks" not in html
