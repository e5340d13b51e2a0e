"""The scan pipeline on this machine, and with probes that hang or misbehave."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hwadvisor.model.profile import NvmlStatus, ProbeStatus
from hwadvisor.pipeline import PROBES, ProbeEvent, ScanOptions, is_degraded, run_scan
from hwadvisor.render.jsonio import to_json

T = "tests.helpers.child_targets"


def test_real_scan_of_this_machine(tmp_path: Path) -> None:
    events: list[ProbeEvent] = []
    profile = run_scan(ScanOptions(out_dir=tmp_path, bench=False), events.append)
    assert not is_degraded(profile), profile.diagnostics
    assert profile.cpu.logical_cores.value is not None and profile.cpu.logical_cores.value >= 1
    assert profile.cpu.usable_cpus.value is not None
    assert profile.memory.total_bytes.value is not None
    # Every probe reports exactly once, whether it ran or was skipped.
    names = [run.name for run in profile.diagnostics.probes]
    assert sorted(names) == sorted(spec.name for spec in PROBES if spec.name != "benchmarks")
    assert profile.benchmarks is None
    finished = [e.name for e in events if e.status is not None]
    assert sorted(finished) == sorted(names)
    json.loads(to_json(profile))


def test_hung_probe_times_out_and_scan_completes(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:sleep_forever"
    options.timeouts_s["nvml"] = 1.0
    start = time.monotonic()
    profile = run_scan(options)
    assert time.monotonic() - start < 1.0 + 2.0 + 3.0  # limit + kill grace + the rest of the scan
    run = {r.name: r for r in profile.diagnostics.probes}["nvml"]
    assert run.status == ProbeStatus.TIMEOUT
    assert profile.nvml.status == NvmlStatus.TIMEOUT
    assert profile.nvml.message and "did not answer" in profile.nvml.message
    assert is_degraded(profile)
    assert profile.cpu.logical_cores.value is not None  # the rest of the scan is intact


def test_crashing_and_malformed_children_are_failures(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["torch"] = f"{T}:boom"
    options.targets["nvml"] = f"{T}:garbage"
    profile = run_scan(options)
    runs = {r.name: r for r in profile.diagnostics.probes}
    assert runs["torch"].status == ProbeStatus.FAILED
    assert "probe exploded" in (runs["torch"].message or "")
    assert runs["nvml"].status == ProbeStatus.FAILED
    assert "malformed" in (runs["nvml"].message or "")
    assert profile.nvml.status == NvmlStatus.ERROR
    assert not profile.frameworks.torch.installed


def test_broken_in_process_probe_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.probes import system

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("bad meminfo")

    monkeypatch.setattr(system, "probe_memory", broken)
    profile = run_scan(ScanOptions(out_dir=tmp_path, bench=False))
    run = {r.name: r for r in profile.diagnostics.probes}["memory"]
    assert run.status == ProbeStatus.FAILED and "bad meminfo" in (run.message or "")
    assert profile.memory.total_bytes.value is None
    assert profile.memory.total_bytes.reason == "not probed"


def test_gpus_with_cpu_only_torch_end_to_end(tmp_path: Path) -> None:
    """NVML sees two GPUs, torch is a CPU-only build: the profile says so, with the fix."""
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:nvml_two_h100"
    options.targets["torch"] = f"{T}:torch_cpu_only"
    profile = run_scan(options)
    assert not is_degraded(profile)
    assert [g.name.value for g in profile.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert profile.nvml.status == NvmlStatus.OK
    assert profile.frameworks.torch.build.value == "cpu"
    finding = {f.id: f for f in profile.findings}["torch-cpu-only"]
    assert finding.severity == "error"
    assert "CUDA" in finding.fix


def test_lost_gpu_marks_the_probe_partial(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:nvml_one_lost"
    profile = run_scan(options)
    run = {r.name: r for r in profile.diagnostics.probes}["nvml"]
    assert run.status == ProbeStatus.PARTIAL and "GPU 1 lost" in (run.message or "")
    assert [g.lost for g in profile.gpus] == [False, True]
    assert not is_degraded(profile)  # the scan did its job; the finding says what is wrong
    assert "gpu-lost" in {f.id for f in profile.findings}


def test_hanging_py_cpuinfo_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where py-cpuinfo is needed and hangs (Rosetta), the CPU facts come from elsewhere."""
    from hwadvisor.probes import cpu

    monkeypatch.setattr(cpu, "needs_cpuinfo", lambda *_a, **_k: True)
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["cpuinfo"] = f"{T}:sleep_forever"
    options.timeouts_s["cpuinfo"] = 1.0
    profile = run_scan(options)
    runs = {r.name: r for r in profile.diagnostics.probes}
    assert runs["cpuinfo"].status == ProbeStatus.TIMEOUT
    assert runs["cpu"].status == ProbeStatus.OK
    assert profile.cpu.logical_cores.value is not None  # procfs/psutil still answered


def test_real_scan_with_a_short_benchmark_budget(tmp_path: Path) -> None:
    events: list[ProbeEvent] = []
    profile = run_scan(ScanOptions(out_dir=tmp_path, budget_s=1.0), events.append)
    bench = profile.benchmarks
    assert bench is not None
    if not profile.frameworks.torch.installed:
        assert bench.status == "skipped"
        return
    cases = {(m.case, m.precision) for m in bench.measurements}
    assert {("matmul", "fp32"), ("conv2d", "fp32"), ("triad", None)} <= cases
    fp32 = next(m for m in bench.measurements if (m.case, m.precision) == ("matmul", "fp32"))
    assert fp32.status == "ok" and fp32.best and fp32.best > 0
    assert fp32.peak_basis  # the CPU peak formula was applied
    assert fp32.efficiency is not None or fp32.efficiency_note
    # Each case showed in the progress display, started then finished.
    case_events = [e for e in events if "." in e.name]
    assert {e.name for e in case_events if e.status is None} == {
        e.name for e in case_events if e.status is not None
    }
    json.loads(to_json(profile))
