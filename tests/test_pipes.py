"""Output to a reader that leaves (``| head``) or to a closed stdout (``>&-``): exit 0 when the
reader left, a clear error when data was asked for on a closed stdout; never exit 1 (a bug)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
EIGHT = str(FIXTURES / "reports" / "eight-gpu.json")


def _hwadvisor(*args: str) -> list[str]:
    return [sys.executable, "-m", "hwadvisor", *args]


@pytest.mark.parametrize(
    "args",
    [
        ["advise", "-p", EIGHT, "-w", "resnet50-imagenet"],
        ["advise", "-p", EIGHT, "-w", "resnet50-imagenet", "--json", "-"],
        ["diff", EIGHT, EIGHT],
        ["import", EIGHT, "--json", "-"],
        ["schema"],
        ["workloads"],
        ["--help"],
    ],
)
def test_a_reader_that_leaves_is_no_error(args: list[str]) -> None:
    proc = subprocess.Popen(
        _hwadvisor(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| true`: the reader leaves before anything is written

    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "error" not in err.lower()


def test_closed_stdout_is_no_bug() -> None:
    summary = subprocess.run(
        _hwadvisor("advise", "-p", EIGHT, "-w", "resnet50-imagenet"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        pass_fds=(),
        preexec_fn=lambda: __import__("os").close(1),
    )
    assert summary.returncode == 0, summary.stderr
    data = subprocess.run(
        _hwadvisor("advise", "-p", EIGHT, "-w", "resnet50-imagenet", "--json", "-"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=lambda: __import__("os").close(1),
    )
    assert data.returncode == 4
    assert "standard output is closed" in data.stderr and "internal error" not in data.stderr
