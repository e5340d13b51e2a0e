"""Profile diffs: changed facts, benchmark ratios, verdicts, and their console and HTML views."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from hwadvisor.diff import ProfileDiff, bench_label, diff_profiles, render_diff_html
from hwadvisor.model.advice import Advice, ScenarioInfo, ThisMachine, WorkloadSummary
from hwadvisor.model.bench import Benchmarks, Confidence, Disturbance, Measurement
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import GpuInfo, NvmlStatus, Profile, ToolInfo
from hwadvisor.render.diff_console import render_diff

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = '<script>alert(1)</script> [red]x[/red] & "q"'

BASE_TEMPLATE = """<!doctype html><html><head><title>{% block title %}{% endblock %}</title></head>
<body>{% block content %}{% endblock %}</body></html>"""


def _cpu_profile(**over: object) -> Profile:
    p = Profile(tool=ToolInfo(version="0.3.0"), created_utc="2026-11-21T10:00:00Z")
    p.cpu.model_name = fact("AMD Ryzen 9 7950X", Source.PROCFS)
    p.cpu.physical_cores = fact(16, Source.PROCFS)
    p.cpu.logical_cores = fact(32, Source.PROCFS)
    p.cpu.isa_features = fact(["avx2", "avx512f"], Source.CPUINFO)
    p.memory.total_bytes = fact(64 * 2**30, Source.PSUTIL)
    p.memory.available_bytes = fact(40 * 2**30, Source.PSUTIL)
    p.storage.free_bytes = fact(100 * 2**30, Source.OS)
    p.platform.os = fact("Linux", Source.PLATFORM)
    p.platform.kernel = fact("6.8.0", Source.PLATFORM)
    p.platform.python_version = fact("3.11.9", Source.PLATFORM)
    p.nvml.status = NvmlStatus.NOT_INSTALLED
    t = p.frameworks.torch
    t.installed = True
    t.version = fact("2.1.0+cpu", Source.TORCH)
    t.build = fact("cpu", Source.TORCH)
    t.cuda_available = fact(False, Source.TORCH)
    return p


def _gpu(index: int, name: str, bus: str, **facts: object) -> GpuInfo:
    g = GpuInfo(index=index, vendor="nvidia", backend="cuda")
    g.name = fact(name, Source.NVML)
    g.pci_bus_id = fact(bus, Source.NVML)
    g.vram_total_bytes = fact(24 * 2**30, Source.NVML)
    g.compute_capability = fact("8.9", Source.NVML)
    g.power_limit_watts = fact(450.0, Source.NVML)
    g.temperature_c = fact(40, Source.NVML)
    g.sm_clock_mhz = fact(210, Source.NVML)
    g.utilization_percent = fact(0, Source.NVML)
    g.vram_free_bytes = fact(23 * 2**30, Source.NVML)
    for key, value in facts.items():
        setattr(g, key, fact(value, Source.NVML))
    return g


def _gpu_profile() -> Profile:
    p = _cpu_profile()
    p.created_utc = "2026-12-01T09:00:00Z"
    p.nvml.status = NvmlStatus.OK
    p.nvml.driver_version = fact("550.54", Source.NVML)
    p.nvml.cuda_driver_version = fact("12.4", Source.NVML)
    p.gpus = [_gpu(0, "NVIDIA GeForce RTX 4090", "00000000:01:00.0")]
    t = p.frameworks.torch
    t.version = fact("2.4.1+cu124", Source.TORCH)
    t.build = fact("cuda", Source.TORCH)
    t.cuda_runtime_version = fact("12.4", Source.TORCH)
    t.cudnn_version = fact("90100", Source.TORCH)
    t.cuda_available = fact(True, Source.TORCH)
    # Volatile facts that differ between any two scans.
    p.memory.available_bytes = fact(12 * 2**30, Source.PSUTIL)
    p.storage.free_bytes = fact(3 * 2**30, Source.OS)
    p.diagnostics.duration_seconds = 9.5
    return p


def _changes(d: ProfileDiff) -> set[tuple[str, str, str | None, str | None]]:
    return {(c.section, c.field, c.before, c.after) for c in d.changes}


def _m(case: str, device: str, best: float, **kw: object) -> Measurement:
    return Measurement.model_validate({"case": case, "device": device, "best": best, **kw})


def _advice(workload: str, scenario: int, sufficient: bool) -> Advice:
    return Advice(
        workload=WorkloadSummary(name=workload, description="", kind="conv", precision="bf16"),
        scenario=ScenarioInfo(id=scenario, title="t", confidence="high", rule="r", because=""),
        this_machine=ThisMachine(sufficient=sufficient, hardware="this", limit_hours=24.0),
    )


# --------------------------------------------------------------------------------------------


def test_gpu_added_and_torch_upgraded_exact_changes() -> None:
    d = diff_profiles(_cpu_profile(), _gpu_profile(), a_label="before.json", b_label="after.json")
    assert _changes(d) == {
        ("nvml", "status", "not_installed", "ok"),
        ("nvml", "driver_version", "unknown", "550.54"),
        ("nvml", "cuda_driver_version", "unknown", "12.4"),
        ("GPU 0", "gpu", None, "NVIDIA GeForce RTX 4090"),
        ("frameworks.torch", "version", "2.1.0+cpu", "2.4.1+cu124"),
        ("frameworks.torch", "build", "cpu", "cuda"),
        ("frameworks.torch", "cuda_runtime_version", "unknown", "12.4"),
        ("frameworks.torch", "cudnn_version", "unknown", "90100"),
        ("frameworks.torch", "cuda_available", "no", "yes"),
    }
    assert d.a_created == "2026-11-21T10:00:00Z" and d.b_created == "2026-12-01T09:00:00Z"
    assert "GPU 0 added: NVIDIA GeForce RTX 4090" in d.summary
    assert 3 <= len(d.summary) <= 6


def test_volatile_facts_ignored() -> None:
    a, b = _gpu_profile(), _gpu_profile()
    b.created_utc = "2027-01-01T00:00:00Z"
    b.memory.available_bytes = fact(1, Source.PSUTIL)
    b.memory.swap_free_bytes = fact(5, Source.PSUTIL)
    b.storage.free_bytes = fact(7, Source.OS)
    g = b.gpus[0]
    g.temperature_c = fact(83, Source.NVML)
    g.sm_clock_mhz = fact(2520, Source.NVML)
    g.utilization_percent = fact(99, Source.NVML)
    g.vram_free_bytes = fact(1, Source.NVML)
    g.power_draw_watts = fact(430.0, Source.NVML)
    b.cpu.model_name = fact("AMD Ryzen 9 7950X", Source.CPUINFO)  # same value, other source
    b.cpu.isa_features = fact(["avx512f", "avx2"], Source.CPUINFO)  # same set, other order
    b.diagnostics.duration_seconds = 99.0
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert d.changes == []
    assert d.summary[0] == "No hardware or software change between a and b."


def test_gpu_swapped_in_same_slot_and_matched_by_bus_id_across_index() -> None:
    a = _gpu_profile()
    a.gpus = [
        _gpu(0, "NVIDIA GeForce RTX 3080", "00000000:01:00.0", vram_total_bytes=10 * 2**30),
        _gpu(1, "NVIDIA A100", "00000000:41:00.0"),
    ]
    b = _gpu_profile()
    # The A100 now enumerates first; torch's 4-digit domain must still match NVML's 8-digit one.
    b.gpus = [
        _gpu(0, "NVIDIA A100", "0000:41:00.0"),
        _gpu(1, "NVIDIA GeForce RTX 4090", "00000000:01:00.0"),
    ]
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert _changes(d) == {
        ("GPU 0", "index", "1", "0"),
        ("GPU 1", "index", "0", "1"),
        ("GPU 1", "name", "NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 4090"),
        ("GPU 1", "vram_total_bytes", "10.0 GiB", "24.0 GiB"),
    }
    assert "GPU 1 changed: NVIDIA GeForce RTX 3080 → NVIDIA GeForce RTX 4090" in d.summary


def test_gpu_removed_and_different_bus_ids_not_paired_by_index() -> None:
    a, b = _gpu_profile(), _gpu_profile()
    b.gpus = [_gpu(0, "NVIDIA L4", "00000000:02:00.0")]
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert _changes(d) == {
        ("GPU 0", "gpu", "NVIDIA GeForce RTX 4090", None),
        ("GPU 0", "gpu", None, "NVIDIA L4"),
    }
    assert "GPU 0 removed: NVIDIA GeForce RTX 4090" in d.summary


def _bench_profiles() -> tuple[Profile, Profile]:
    a, b = _gpu_profile(), _gpu_profile()
    a.benchmarks = Benchmarks(
        measurements=[
            _m("matmul", "cuda:0", 80_000.0, precision="bf16", unit="GFLOP/s"),
            _m("launch_latency", "cuda:0", 8.0, unit="us", higher_is_better=False),
            _m("h2d", "cuda:0", 20.0, variant="pinned", unit="GB/s"),
            _m("triad", "cpu", 50.0, unit="GB/s"),
            _m("conv2d", "cuda:0", 1.0, precision="fp16", unit="GFLOP/s"),
            _m("train_step", "cuda:0", 0.0, status="failed", message="oom"),
        ]
    )
    b.benchmarks = Benchmarks(
        measurements=[
            _m("matmul", "cuda:0", 192_000.0, precision="bf16", unit="GFLOP/s"),
            _m("launch_latency", "cuda:0", 10.0, unit="us", higher_is_better=False),
            _m("h2d", "cuda:0", 20.2, variant="pinned", unit="GB/s"),
            _m("triad", "cpu", 40.0, unit="GB/s"),
            _m("conv2d", "cuda:0", 1.0, precision="fp16", status="skipped"),
            _m("train_step", "cuda:0", 900.0, unit="samples/s"),
        ]
    )
    return a, b


def test_benchmark_ratios_and_better() -> None:
    a, b = _bench_profiles()
    d = diff_profiles(a, b, a_label="a", b_label="b")
    by_case = {r.case: r for r in d.benchmarks}
    assert set(by_case) == {"matmul", "launch_latency", "h2d", "triad"}

    mm = by_case["matmul"]
    assert (mm.before, mm.after, mm.unit) == (80_000.0, 192_000.0, "GFLOP/s")
    assert mm.ratio == pytest.approx(2.4) and mm.better is True

    lat = by_case["launch_latency"]  # 8 us → 10 us: lower is better, so worse
    assert lat.ratio == pytest.approx(1.25) and lat.better is False

    triad = by_case["triad"]  # throughput down
    assert triad.ratio == pytest.approx(0.8) and triad.better is False

    h2d = by_case["h2d"]  # +1 %: noise
    assert h2d.ratio == pytest.approx(1.01) and h2d.better is None
    assert h2d.variant == "pinned"

    # Only ok cases count: conv2d was skipped in b, train_step failed in a.
    assert d.only_in_a == ["fp16 conv2d on cuda:0"]
    assert d.only_in_b == ["train_step on cuda:0"]
    assert "bf16 matmul on cuda:0: 2.4× faster" in d.summary
    assert "launch_latency on cuda:0: 1.2× slower" in d.summary


def test_lower_is_better_improvement_is_faster() -> None:
    a, b = _gpu_profile(), _gpu_profile()
    a.benchmarks = Benchmarks(
        measurements=[_m("launch_latency", "cuda:0", 10.0, unit="us", higher_is_better=False)]
    )
    b.benchmarks = Benchmarks(
        measurements=[_m("launch_latency", "cuda:0", 5.0, unit="us", higher_is_better=False)]
    )
    d = diff_profiles(a, b, a_label="a", b_label="b")
    (r,) = d.benchmarks
    assert r.ratio == pytest.approx(0.5) and r.better is True
    assert "launch_latency on cuda:0: 2.0× faster" in d.summary


@pytest.mark.parametrize(
    ("before", "after", "changed", "sentence"),
    [
        (
            (2, False),
            (2, True),
            True,
            "Verdict for resnet50-imagenet changed: still scenario 2, this machine now enough.",
        ),
        (
            (2, True),
            (2, True),
            False,
            "Verdict for resnet50-imagenet unchanged: scenario 2, this machine still enough.",
        ),
        (
            (3, False),
            (2, False),
            True,
            "Verdict for resnet50-imagenet changed: scenario 3 → 2, this machine still not enough.",
        ),
    ],
)
def test_scenario_change(
    before: tuple[int, bool], after: tuple[int, bool], changed: bool, sentence: str
) -> None:
    a, b = _cpu_profile(), _gpu_profile()
    a.advice = _advice("resnet50-imagenet", *before)
    b.advice = _advice("resnet50-imagenet", *after)
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert d.scenario is not None
    assert d.scenario.changed is changed
    assert (d.scenario.before_scenario, d.scenario.before_sufficient) == before
    assert (d.scenario.after_scenario, d.scenario.after_sufficient) == after
    assert d.summary[-1] == sentence


def test_scenario_different_workloads_or_missing() -> None:
    a, b = _cpu_profile(), _gpu_profile()
    a.advice = _advice("resnet50-imagenet", 2, False)
    b.advice = _advice("gpt2-small", 3, False)
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert d.scenario is None
    assert "different workloads" in d.summary[-1] and "gpt2-small" in d.summary[-1]
    b.advice = None
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert d.scenario is None and d.summary[-1].startswith("Only a has advice")


def test_schema1_profile_against_itself_has_no_changes() -> None:
    p = load_profile(ROOT / "tests" / "fixtures" / "profiles" / "v1-cpu-only.json")
    d = diff_profiles(p, p, a_label="v1", b_label="v1")
    assert d.changes == [] and d.benchmarks == [] and d.only_in_a == d.only_in_b == []
    assert d.scenario is None
    assert d.summary == [
        "No hardware or software change between v1 and v1.",
        "Neither profile has benchmarks.",
        "Neither profile has advice; no verdict to compare.",
    ]


def test_json_round_trip() -> None:
    a, b = _bench_profiles()
    a.advice = _advice("resnet50-imagenet", 2, False)
    b.advice = _advice("resnet50-imagenet", 2, True)
    d = diff_profiles(a, b, a_label="a", b_label="b")
    again = ProfileDiff.model_validate_json(d.model_dump_json())
    assert again == d


def _hostile_diff() -> ProfileDiff:
    a, b = _gpu_profile(), _gpu_profile()
    b.gpus[0].name = fact(HOSTILE, Source.NVML)
    a.benchmarks = Benchmarks(
        measurements=[_m("matmul", "cuda:0", 100.0, precision="bf16", unit="GFLOP/s")]
    )
    b.benchmarks = Benchmarks(
        measurements=[_m("matmul", "cuda:0", 240.0, precision="bf16", unit="GFLOP/s")]
    )
    a.advice = _advice(HOSTILE, 2, False)
    b.advice = _advice(HOSTILE, 2, True)
    return diff_profiles(a, b, a_label=HOSTILE, b_label="b.json")


def test_hostile_strings_preserved_as_data() -> None:
    d = _hostile_diff()
    assert ("GPU 0", "name", "NVIDIA GeForce RTX 4090", HOSTILE) in _changes(d)
    assert d.a_label == HOSTILE
    assert d.scenario is not None and d.scenario.workload == HOSTILE
    assert any(HOSTILE in s for s in d.summary)


def _env(tmp_path: Path, autoescape: bool = True) -> jinja2.Environment:
    (tmp_path / "base.html.j2").write_text(BASE_TEMPLATE, encoding="utf-8")
    loader = jinja2.ChoiceLoader(
        [jinja2.FileSystemLoader(str(tmp_path)), jinja2.FileSystemLoader(str(ROOT / "templates"))]
    )
    return jinja2.Environment(
        loader=loader, autoescape=autoescape, undefined=jinja2.StrictUndefined
    )


def test_html_escapes_hostile_strings_and_shows_content(tmp_path: Path) -> None:
    html = render_diff_html(_hostile_diff(), _env(tmp_path))
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; [red]x[/red] &amp; &#34;q&#34;" in html
    assert "<title>Profile diff: &lt;script&gt;" in html
    assert "×2.40" in html and 'class="num ratio better"' in html
    assert "NVIDIA GeForce RTX 4090" in html
    assert "2 → 2" in html and "not enough → enough" in html


def test_html_full_diff_renders(tmp_path: Path) -> None:
    a, b = _bench_profiles()
    html = render_diff_html(diff_profiles(a, b, a_label="a", b_label="b"), _env(tmp_path))
    assert "×1.25" in html and 'class="num ratio worse"' in html
    assert 'class="num ratio same"' in html
    assert "Only in a: fp16 conv2d on cuda:0" in html


def test_html_refuses_environment_without_autoescape(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="autoescape"):
        render_diff_html(_hostile_diff(), _env(tmp_path, autoescape=False))


def test_console_render_shows_ratio_and_hostile_text_literally() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=False)
    render_diff(_hostile_diff(), console)
    text = out.getvalue()
    assert "×2.40" in text
    assert HOSTILE in text
    assert "bf16 matmul on cuda:0: 2.4× faster" in text


def test_console_render_no_changes() -> None:
    p = _cpu_profile()
    out = io.StringIO()
    render_diff(diff_profiles(p, p, a_label="a", b_label="a"), Console(file=out, width=120))
    assert "No hardware or software fact changed." in out.getvalue()


def test_firmware_network_and_gpu_health_changes_are_shown_and_never_probed_facts_are_not() -> None:
    from hwadvisor.model.profile import NetInterface, RdmaPort

    a, b = _gpu_profile(), _gpu_profile()
    for p, bios, vbios, rate, remapped in (
        (a, "2.1.4", "96.00.5E.00.01", 400.0, 0),
        (b, "2.3.0", "96.00.89.00.01", 200.0, 2),
    ):
        p.system.vendor = fact("Dell Inc.", Source.SYSFS)
        p.system.bios_version = fact(bios, Source.SYSFS)
        p.gpus[0].vbios_version = fact(vbios, Source.NVML)
        p.gpus[0].remapped_rows_uncorrectable = fact(remapped, Source.NVML)
        p.network.reason = None
        p.network.rdma = [
            RdmaPort(
                device="mlx5_0",
                port=1,
                link_layer=fact("InfiniBand", Source.SYSFS),
                rate_gbps=fact(rate, Source.SYSFS),
                state=fact("active", Source.SYSFS),
            )
        ]
        p.network.interfaces = [
            NetInterface(
                name="eth0",
                kind="ethernet",
                state=fact("up", Source.SYSFS),
                speed_mbps=fact(25000, Source.SYSFS),
            )
        ]
    d = diff_profiles(a, b, a_label="a", b_label="b")
    got = {(c.section, c.field): (c.before, c.after) for c in d.changes}
    assert got[("system", "bios_version")] == ("2.1.4", "2.3.0")
    assert got[("GPU 0", "vbios_version")] == ("96.00.5E.00.01", "96.00.89.00.01")
    assert got[("GPU 0", "remapped_rows_uncorrectable")] == ("0", "2")
    assert got[("network", "rdma_ports")] == (
        "mlx5_0/1 InfiniBand 400 Gb/s active",
        "mlx5_0/1 InfiniBand 200 Gb/s active",
    )
    assert ("system", "vendor") not in got and ("network", "links") not in got

    old = _gpu_profile()  # a profile from before these facts existed: nothing probed
    d = diff_profiles(old, b, a_label="old", b_label="b")
    sections = {c.section for c in d.changes}
    assert "system" not in sections and "network" not in sections
    assert not any(c.field == "vbios_version" for c in d.changes)


def test_gpus_added_together_are_one_summary_sentence() -> None:
    a, b = _gpu_profile(), _gpu_profile()
    b.gpus = [
        _gpu(
            i, "NVIDIA A100-SXM4-40GB" if i else "NVIDIA GeForce RTX 4090", f"0000:{i + 1:02x}:00.0"
        )
        for i in range(8)
    ]
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert "GPUs 1–7 added: 7 × NVIDIA A100-SXM4-40GB" in d.summary
    assert not any(line.startswith("GPU 2 added") for line in d.summary)
    b.gpus = b.gpus[:2]
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert "GPU 1 added: NVIDIA A100-SXM4-40GB" in d.summary


# --------------------------------------------------------------------------------------------
# Disturbed figures: a busy scan against a quiet one of the same machine is no speed-up

REPORTS = ROOT / "tests" / "fixtures" / "reports"
CPU_CONTENDED_REASON = (
    "the older scan's figure was measured while other processes used the CPU (cpu contended)"
)


def _fixture(name: str, created: str) -> Profile:
    p = load_profile(REPORTS / f"{name}.json")
    p.created_utc = created
    return p


def _busy(p: Profile, device: str, slowdown: float, *flags: Disturbance) -> None:
    """The figures of ``device`` as a busy machine measures them: ``slowdown`` times worse
    (throughput down, times up), flagged with ``flags`` (none: an undisturbed slower scan)."""
    assert p.benchmarks is not None
    for m in p.benchmarks.measurements:
        if m.device == device and m.best is not None:
            m.best = m.best / slowdown if m.higher_is_better else m.best * slowdown
            m.disturbances = list(flags)
            if flags:
                m.disturbance_note = "other processes used 80% of the CPUs: the figure is low"


def _busy_then_quiet(*flags: Disturbance) -> tuple[Profile, Profile]:
    busy = _fixture("single-gpu", "2026-11-21T10:00:00Z")
    quiet = _fixture("single-gpu", "2026-11-22T10:00:00Z")
    _busy(busy, "cpu", 6.2, *flags)
    return busy, quiet


def _console_text(d: ProfileDiff, width: int = 80) -> str:
    out = io.StringIO()
    render_diff(d, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_busy_against_quiet_scan_headlines_no_speed_up_and_says_why() -> None:
    busy, quiet = _busy_then_quiet(Disturbance.CPU_CONTENDED)
    d = diff_profiles(busy, quiet, a_label="busy.json", b_label="quiet.json")

    assert not any("faster" in line or "slower" in line for line in d.summary)
    assert (
        "4 benchmark comparisons not counted: the older scan was disturbed (cpu contended); "
        "scan both on an idle machine to compare them." in d.summary
    )
    # The GPU figures, both trusted, are still compared (and unchanged).
    assert "9 benchmark case(s) compared; all within ±2%." in d.summary

    by = {(r.case, r.device, r.precision): r for r in d.benchmarks}
    triad = by[("triad", "cpu", None)]
    assert triad.ratio == pytest.approx(6.2) and triad.better is True  # the figures did move
    assert triad.counted is False
    assert triad.not_counted_reason == CPU_CONTENDED_REASON
    assert triad.before_disturbances == [Disturbance.CPU_CONTENDED]
    assert triad.after_disturbances == []
    assert by[("triad", "cuda:0", None)].counted is True
    assert by[("triad", "cuda:0", None)].not_counted_reason is None

    assert len(d.not_counted) == 4
    assert (
        f"triad on cpu: 6.2× faster (7.74 GB/s → 48 GB/s), not counted: {CPU_CONTENDED_REASON}"
        in d.not_counted
    )

    text = _console_text(d)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    flat = " ".join(text.split())
    assert "Not counted: a figure was disturbed or unsteady" in text
    assert (
        f"• triad on cpu: 6.2× faster (7.74 GB/s → 48 GB/s), not counted: {CPU_CONTENDED_REASON}"
        in flat
    )
    assert "×6.20" not in text  # not in the ratio table
    summary = flat.split("No hardware or software fact changed.")[0]
    assert "faster" not in summary and "4 benchmark comparisons not counted" in summary


def test_busy_against_quiet_scan_html(tmp_path: Path) -> None:
    busy, quiet = _busy_then_quiet(Disturbance.CPU_CONTENDED)
    html = render_diff_html(
        diff_profiles(busy, quiet, a_label="busy.json", b_label="quiet.json"), _env(tmp_path)
    )
    counted, _, set_aside = html.partition('<table class="diff-not-counted">')
    assert "×6.20" not in counted and 'class="num ratio better"' not in counted
    assert "4 benchmark comparisons not counted" in counted  # the summary
    assert "×6.20 <span" in set_aside and "6.2× faster" in set_aside
    assert "the older scan&#39;s figure was measured while other processes used the CPU" in (
        set_aside
    )
    assert "busy.json: other processes used 80% of the CPUs" in set_aside


def test_both_scans_trusted_still_headline_the_speed_up() -> None:
    slow, fast = _busy_then_quiet()  # slower, but undisturbed: a real change
    d = diff_profiles(slow, fast, a_label="a", b_label="b")
    assert d.summary[1:3] == ["fp32 matmul on cpu: 6.2× faster", "bf16 matmul on cpu: 6.2× faster"]
    assert all(r.counted and r.not_counted_reason is None for r in d.benchmarks)
    assert d.not_counted == []
    assert not any("not counted" in line for line in d.summary)
    text = _console_text(d)
    assert "×6.20 better" in text and "Not counted" not in text


def test_noise_slow_down_in_the_newer_scan_is_not_counted() -> None:
    quiet = _fixture("single-gpu", "2026-11-21T10:00:00Z")
    busy = _fixture("single-gpu", "2026-11-22T10:00:00Z")
    _busy(busy, "cuda:0", 3.0, Disturbance.GPU_BUSY, Disturbance.GPU_THROTTLED)
    d = diff_profiles(quiet, busy, a_label="quiet.json", b_label="busy.json")
    assert not any("slower" in line or "faster" in line for line in d.summary)
    assert (
        "9 benchmark comparisons not counted: the newer scan was disturbed (gpu busy, gpu "
        "throttled); scan both on an idle machine to compare them." in d.summary
    )
    lat = next(r for r in d.benchmarks if r.case == "train_step" and r.device == "cuda:0")
    assert lat.better is False and lat.counted is False
    assert lat.not_counted_reason == (
        "the newer scan's figure was measured while other processes had work on the GPU and "
        "while the GPU slowed its clocks for heat or power (gpu busy, gpu throttled)"
    )
    assert any(s.startswith("amp train_step on cuda:0: 3.0× slower") for s in d.not_counted)


def test_unsteady_figures_on_both_sides_are_not_counted() -> None:
    """cpu-only.json's figures are all low confidence: not trusted, whatever they say."""
    a = _fixture("cpu-only", "2026-11-21T10:00:00Z")
    b = _fixture("cpu-only", "2026-11-22T10:00:00Z")
    _busy(a, "cpu", 2.0)
    d = diff_profiles(a, b, a_label="a", b_label="b")
    assert not any("faster" in line for line in d.summary)
    assert (
        "None of the 6 benchmark comparisons counted: both scans were unsteady (low "
        "confidence); scan both on an idle machine to compare them." in d.summary
    )
    assert {r.not_counted_reason for r in d.benchmarks} == {
        "each scan's figure varied too much between runs to trust (low confidence)"
    }
    assert {r.before_confidence for r in d.benchmarks} == {Confidence.LOW}


def test_json_names_why_a_change_is_not_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hwadvisor.cli import main
    from hwadvisor.render.jsonio import to_json

    busy, quiet = _busy_then_quiet(Disturbance.CPU_CONTENDED)
    (tmp_path / "busy.json").write_text(to_json(busy), encoding="utf-8")
    (tmp_path / "quiet.json").write_text(to_json(quiet), encoding="utf-8")
    assert (
        main(["diff", str(tmp_path / "busy.json"), str(tmp_path / "quiet.json"), "--json", "-"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    triad = next(r for r in data["benchmarks"] if (r["case"], r["device"]) == ("triad", "cpu"))
    assert triad["counted"] is False
    assert triad["not_counted_reason"] == CPU_CONTENDED_REASON
    assert triad["before_disturbances"] == ["cpu_contended"] and triad["after_disturbances"] == []
    assert triad["before_disturbance_note"].startswith("other processes used 80%")
    assert triad["better"] is True and triad["ratio"] == pytest.approx(6.2)  # names kept
    gpu = next(r for r in data["benchmarks"] if r["device"] == "cuda:0")
    assert gpu["counted"] is True and gpu["not_counted_reason"] is None
    assert len(data["not_counted"]) == 4
    assert any("not counted" in line for line in data["summary"])
    assert not any("faster" in line for line in data["summary"])
    assert ProfileDiff.model_validate(data).not_counted == data["not_counted"]


_SIDES = ("neither", "older", "newer", "both")


@settings(max_examples=150, deadline=None)
@given(
    side=st.sampled_from(_SIDES),
    ratio=st.sampled_from([0.1, 0.5, 0.9, 0.97, 1.0, 1.03, 1.2, 2.0, 6.2, 40.0]),
    flag=st.sampled_from([*Disturbance, None]),
    higher_is_better=st.booleans(),
    trusted_ratio=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_no_change_with_a_disturbed_side_is_ever_headlined(
    side: str, ratio: float, flag: Disturbance | None, higher_is_better: bool, trusted_ratio: float
) -> None:
    """Whichever side is disturbed (or unsteady: ``flag`` None) and however far the figures
    moved, the change is never in the summary; a trusted change beside it still is."""
    unit = "GB/s" if higher_is_better else "us"

    def figures(scale: float, disturbed: bool) -> Benchmarks:
        bad: dict[str, object] = {}
        if disturbed:
            bad = {"disturbances": [flag]} if flag is not None else {"confidence": "low"}
        return Benchmarks(
            measurements=[
                _m(
                    "triad",
                    "cpu",
                    10.0 * scale,
                    unit=unit,
                    higher_is_better=higher_is_better,
                    **bad,
                ),
                _m(
                    "matmul",
                    "cuda:0",
                    100.0 * (trusted_ratio if scale != 1.0 else 1.0),
                    unit="GFLOP/s",
                ),
            ]
        )

    a, b = _gpu_profile(), _gpu_profile()
    a.created_utc, b.created_utc = "2026-11-21T10:00:00Z", "2026-11-22T10:00:00Z"
    a.benchmarks = figures(1.0, side in ("older", "both"))
    b.benchmarks = figures(ratio, side in ("newer", "both"))
    b.benchmarks.measurements[1].best = 100.0 * trusted_ratio
    d = diff_profiles(a, b, a_label="a", b_label="b")

    triad = next(r for r in d.benchmarks if r.case == "triad")
    matmul = next(r for r in d.benchmarks if r.case == "matmul")
    label = bench_label("triad", "cpu", None, None)
    headlined = [line for line in d.summary if line.startswith(label)]
    assert matmul.counted
    if trusted_ratio != 1.0:
        assert any(line.startswith("matmul on cuda:0: ") for line in d.summary)
    if side == "neither":
        assert triad.counted and triad.not_counted_reason is None and d.not_counted == []
        assert not any("not counted" in line for line in d.summary)
        return
    assert not triad.counted and not headlined
    reason = triad.not_counted_reason
    assert reason is not None
    code = flag.value.replace("_", " ") if flag is not None else "low confidence"
    assert f"({code})" in reason
    if side == "both":
        assert reason.startswith("each scan's figure")
    else:
        assert reason.startswith(f"the {side} scan's figure")
    assert d.not_counted == [f"{label}: {d.not_counted[0].split(': ', 1)[1]}"]
    assert d.not_counted[0].endswith(f"not counted: {reason}")
    (aside,) = [line for line in d.summary if "not counted" in line]
    assert aside.startswith("1 benchmark comparison not counted: ") and f"({code})" in aside
    assert "scan both on an idle machine" in aside
    summary_block = " ".join(
        _console_text(d, width=200).split("No hardware or software fact changed.")[0].split()
    )
    assert label not in summary_block
