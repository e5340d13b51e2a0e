"""``scan --torch-python``: the torch facts read by another interpreter (a conda environment's
python, a wrapper that runs python in a container), with fake interpreters that answer, hang,
fail or print junk, and once with a real one."""

from __future__ import annotations

import ast
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.isolation import kill_all_children, run_command
from hwadvisor.model.bench import BenchStatus
from hwadvisor.model.profile import ProbeStatus, TorchDevice, TorchInfo
from hwadvisor.pipeline import ScanOptions, is_degraded, run_scan
from hwadvisor.probes import torch_facts
from hwadvisor.probes.torch_stack import (
    TorchReport,
    collect_torch,
    parse_script_output,
    run_torch_python,
    script_source,
)
from tests.fakes import fake_torch


def fake_python(tmp_path: Path, body: str, name: str = "python") -> str:
    """An executable that stands for an interpreter: a shell script with ``body``."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def canned(tmp_path: Path, result: dict[str, Any]) -> str:
    """A fake interpreter that prints ``result`` as the probe's line, after some noise."""
    line = tmp_path / "line.txt"
    line.write_text(torch_facts.MARKER + json.dumps(result) + "\n", encoding="utf-8")
    return fake_python(
        tmp_path, f"echo 'conda: activating ml'\necho 'a warning' >&2\ncat '{line}'\necho bye"
    )


def two_gpu_report() -> dict[str, Any]:
    return collect_torch(fake_torch.cuda_two_devices()).model_dump(mode="json")


def scan(tmp_path: Path, python: str, timeout: float = 20.0, bench: bool = False) -> Any:
    options = ScanOptions(out_dir=tmp_path / "out", bench=bench)
    options.torch_python = python
    options.timeouts_s["torch"] = timeout
    return run_scan(options)


# --------------------------------------------------------------------------------------------
# The script itself


def test_the_script_is_python_38_and_imports_no_third_party_package() -> None:
    source = script_source()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported <= set(sys.stdlib_module_names) | {"torch", "__future__"}, imported
    assert len(source.encode()) < 100_000  # one argument of -c: below Linux's 128 KiB per string


def test_the_fact_lists_match_the_model() -> None:
    def facts(model: Any) -> list[str]:
        sample = model.model_construct()
        return [n for n in model.model_fields if hasattr(getattr(sample, n, None), "reason")]

    assert list(torch_facts.TORCH_FACTS) == facts(TorchInfo)
    assert list(torch_facts.DEVICE_FACTS) == facts(TorchDevice)


def test_a_real_interpreter_with_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    result = run_torch_python(sys.executable, 120)
    assert result.status == "ok", result.error
    report = TorchReport.model_validate(result.value)
    import torch

    assert report.torch.installed and report.torch.version.value == torch.__version__


def test_a_real_interpreter_without_torch() -> None:
    # -S: no site-packages, so no torch; -I: no user site, no PYTHON* variables.
    result = run_torch_python(f"{sys.executable} -I -S", 60)
    assert result.status == "ok", result.error
    info = TorchReport.model_validate(result.value).torch
    assert info.installed is False
    assert info.version.reason == "torch is not installed"


# --------------------------------------------------------------------------------------------
# Fake interpreters


def test_canned_answer_among_noise(tmp_path: Path) -> None:
    report = two_gpu_report()
    python = canned(tmp_path, {"format": 1, "ok": True, "python": "3.9.18", "report": report})
    profile = scan(tmp_path, python)
    run = {r.name: r for r in profile.diagnostics.probes}["torch"]
    assert run.status == ProbeStatus.OK and run.message == f"read with {python!r}"
    info = profile.frameworks.torch
    assert info.version.value == "2.5.1+cu124" and info.device_count.value == 2
    assert not is_degraded(profile)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("echo 'Traceback: boom' >&2; exit 1", "exit status 1: Traceback: boom"),
        ("echo 'not json at all'", "no result line in its output (it printed: 'not json at all')"),
        ("true", "no result line in its output (it printed nothing)"),
        (f"echo '{torch_facts.MARKER}{{broken'", "its result line is not JSON"),
        (f"echo '{torch_facts.MARKER}[1, 2]'", "is not a torch report this hwadvisor reads"),
        (
            f"echo '{torch_facts.MARKER}"
            + '{"format": 1, "ok": false, "error": "MemoryError: x"}\'',
            "the probe failed there: MemoryError: x",
        ),
        (
            f"echo '{torch_facts.MARKER}" + '{"format": 1, "ok": true, "report": {"torch": 5}}\'',
            "malformed report: 1 validation errors",
        ),
        (f"echo '{torch_facts.MARKER}" + '{"format": 99, "ok": true}\'', "is not a torch report"),
    ],
)
def test_failing_or_junk_interpreters_leave_torch_unknown(
    tmp_path: Path, body: str, expected: str
) -> None:
    python = fake_python(tmp_path, body)
    profile = scan(tmp_path, python)
    run = {r.name: r for r in profile.diagnostics.probes}["torch"]
    assert run.status == ProbeStatus.FAILED
    assert run.message == f"--torch-python {python!r}: {expected}" or expected in (
        run.message or ""
    )
    assert run.message is not None and run.message.startswith(f"--torch-python {python!r}: ")
    info = profile.frameworks.torch
    # Neither installed nor not installed: every fact unknown with the reason, no source.
    assert info.version.value is None and info.version.reason == run.message
    assert info.version.source is None
    assert "torch-not-installed" not in {f.id for f in profile.findings}
    assert is_degraded(profile)


def test_a_missing_interpreter(tmp_path: Path) -> None:
    missing = str(tmp_path / "no" / "python")
    result = run_torch_python(missing, 5)
    assert result.status == "failed"
    assert (
        result.error
        == f"--torch-python {missing!r}: cannot run {missing!r}: No such file or directory"
    )


def test_a_hanging_interpreter_is_stopped_with_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    # The "interpreter" starts a grandchild that would outlive it, then hangs.
    python = fake_python(tmp_path, f"sleep 300 & echo $! > '{pidfile}'\nsleep 300")
    started = time.monotonic()
    profile = scan(tmp_path, python, timeout=1.0)
    assert time.monotonic() - started < 1.0 + 2 * 2.0 + 5.0
    run = {r.name: r for r in profile.diagnostics.probes}["torch"]
    assert run.status == ProbeStatus.TIMEOUT
    assert "did not finish within 1 s" in (run.message or "")
    assert is_degraded(profile)
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), "the interpreter's child outlived the time limit"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"  # a zombie is dead
    except (FileNotFoundError, IndexError):
        return False


def test_ctrl_c_stops_the_other_interpreter(tmp_path: Path) -> None:
    python = fake_python(tmp_path, "sleep 300")
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run_command([python], timeout_s=60)))
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    kill_all_children()
    thread.join(timeout=5)
    assert not thread.is_alive() and time.monotonic() - started < 3
    assert result[0].returncode is not None and result[0].returncode < 0


def test_output_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hwadvisor import isolation

    monkeypatch.setattr(isolation, "MAX_COMMAND_OUTPUT", 1000)
    python = fake_python(tmp_path, "head -c 200000 /dev/zero | tr '\\0' x")
    done = run_command([python], timeout_s=20)
    assert done.status == "ok" and len(done.stdout) == 1000


def test_a_wrapper_with_arguments(tmp_path: Path) -> None:
    """A command line, as for a container: the wrapper gets `-c SOURCE` after its own words."""
    report = two_gpu_report()
    line = tmp_path / "line.txt"
    line.write_text(torch_facts.MARKER + json.dumps({"format": 1, "ok": True, "report": report}))
    wrapper = fake_python(
        tmp_path,
        f'[ "$1" = exec ] && [ "$2" = "-i" ] && [ "$3" = "trainer" ] && [ "$4" = python ] '
        f'&& [ "$5" = "-c" ] && cat \'{line}\'',
        name="docker",
    )
    result = run_torch_python(f"{wrapper} exec -i trainer python", 20)
    assert result.status == "ok", result.error


def test_benchmarks_are_skipped_when_this_python_has_no_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    report = two_gpu_report()
    python = canned(tmp_path, {"format": 1, "ok": True, "report": report})
    profile = scan(tmp_path, python, bench=True)
    assert profile.benchmarks is not None
    assert profile.benchmarks.status == BenchStatus.SKIPPED
    assert "--torch-python" in (profile.benchmarks.message or "")
    assert not is_degraded(profile)


def test_parse_keeps_the_last_result_line() -> None:
    report = two_gpu_report()
    first = {"format": 1, "ok": False, "error": "old"}
    last = {"format": 1, "ok": True, "report": report}
    out = f"{torch_facts.MARKER}{json.dumps(first)}\nnoise\n{torch_facts.MARKER}{json.dumps(last)}"
    assert parse_script_output(out.encode()) == report


# --------------------------------------------------------------------------------------------
# The command line


def test_cli_missing_interpreter_exits_3_with_unknown_torch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nowhere" / "python")
    code = main(["scan", "--no-bench", "--json", "-", "--torch-python", missing])
    assert code == ExitStatus.DEGRADED
    out, err = capsys.readouterr()
    torch = json.loads(out)["frameworks"]["torch"]
    assert torch["version"]["value"] is None
    assert "cannot run" in torch["version"]["reason"]
    assert "Traceback" not in err


def test_cli_reads_the_environment_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = two_gpu_report()
    monkeypatch.setenv(
        "HWADVISOR_TORCH_PYTHON", canned(tmp_path, {"format": 1, "ok": True, "report": report})
    )
    code = main(["scan", "--no-bench", "--json", "-", "-q"])
    out, _ = capsys.readouterr()
    assert json.loads(out)["frameworks"]["torch"]["version"]["value"] == "2.5.1+cu124"
    assert code in (ExitStatus.OK, ExitStatus.DEGRADED)  # NVML may be missing here


@pytest.mark.parametrize("value", ["", "   ", "'unbalanced"])
def test_cli_refuses_a_command_line_that_is_not_one(value: str) -> None:
    assert main(["scan", "--torch-python", value]) == ExitStatus.USAGE


def test_real_interpreter_through_the_cli_when_torch_is_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    code = main(["scan", "--no-bench", "--json", "-", "-q", "--torch-python", sys.executable])
    out, _ = capsys.readouterr()
    assert json.loads(out)["frameworks"]["torch"]["installed"] is True
    assert code in (ExitStatus.OK, ExitStatus.DEGRADED)
    assert os.environ.get("HWADVISOR_TORCH_PYTHON") is None
