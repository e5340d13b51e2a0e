"""The GPU validation kit (scripts/gpu-validate.sh and its helpers).

Without a GPU the kit runs every step that needs none and skips the rest; with an
``nvidia-smi`` that lies (a fake on PATH, no GPU behind it) every GPU step must fail on its own,
with its reason, and the run must still finish; a step that hangs is stopped at its limit and
the next one runs; SIGTERM still leaves the summary. The checks are pure functions over
profiles, tested on fixtures; the reference plan runs on the CPU standing in for a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hwadvisor.importers.detect import import_text
from hwadvisor.model.bench import BenchStatus, Disturbance, Measurement
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu-validate.sh"
SMI_XML = ROOT / "tests" / "fixtures" / "nvidia-smi" / "telegraf-geforce-rtx-3080.xml"
SINGLE_GPU = ROOT / "tests" / "fixtures" / "reports" / "single-gpu.json"
STEP_NAMES = ["install", "facts", "pytest-gpu", "reference", "busy", "report", "serve"]


def load_script(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


validate = load_script("gpu_validate", ROOT / "scripts" / "gpu_validate.py")
checks = load_script("gpu_checks", ROOT / "scripts" / "gpu_checks.py")
reference = load_script("gpu_reference", ROOT / "benchmarks" / "gpu_reference.py")


def run_kit(out: Path, path: str, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "PATH": path,
        "HWADVISOR_GPU_KIT": str(out.parent / "no-kit"),
        "HWADVISOR_VALIDATE_PYTHON": sys.executable,
        **env,
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(out), *extra],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        check=False,
    )


def path_without_nvidia_smi(tmp_path: Path) -> str:
    """PATH with this Python's folder first and no nvidia-smi on it."""
    keep = [os.path.dirname(sys.executable)]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and not (Path(entry) / "nvidia-smi").exists():
            keep.append(entry)
    return os.pathsep.join(keep)


def fake_nvidia_smi(folder: Path, *, hang_on_xml: bool = False) -> str:
    """An nvidia-smi that claims an RTX 3080 (from a recorded XML) with no GPU behind it."""
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    xml = "sleep 600" if hang_on_xml else f'cat "{SMI_XML}"'
    smi.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        '  -L) echo "GPU 0: NVIDIA GeForce RTX 3080 (UUID: GPU-19d6d965)";;\n'
        f'  "-q -x") {xml};;\n'
        '  "topo -m") printf "\\tGPU0\\nGPU0\\t X \\n";;\n'
        "  --query-gpu*) echo 595.58.03;;\n"
        '  *) echo "NVIDIA-SMI 595.58.03";;\n'
        "esac\n",
        encoding="utf-8",
    )
    smi.chmod(0o755)
    return str(folder)


def summary_steps(text: str) -> dict[str, str]:
    """Step name -> status, from summary.txt's step table."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in STEP_NAMES and len(parts) > 1:
            found[parts[0]] = parts[1]
    return found


# --------------------------------------------------------------------------------------------
# The whole kit, as CI and a CPU machine run it


@pytest.mark.slow
def test_without_a_gpu_the_kit_runs_the_cpu_steps_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    proc = run_kit(out, path_without_nvidia_smi(tmp_path))
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    assert "no NVIDIA GPU: nvidia-smi is not installed; GPU steps skipped" in summary
    steps = summary_steps(summary)
    assert list(steps) == STEP_NAMES
    assert steps == {
        "install": "skip",  # no kit here: the hwadvisor this Python has
        "facts": "pass",
        "pytest-gpu": "skip",
        "reference": "skip",
        "busy": "skip",
        "report": "pass",
        "serve": "skip",
    }
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8
    assert {"summary.txt", "results.json", "validation.tar.gz"} <= set(files)
    with tarfile.open(out / "validation.tar.gz") as tar:
        names = tar.getnames()
    assert "validation/scan.json" in names
    assert any(n.startswith("validation/report/") and n.endswith(".html") for n in names)
    record = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert record["has_gpu"] is False
    assert [s["name"] for s in record["steps"]] == STEP_NAMES
    facts = next(s for s in record["steps"] if s["name"] == "facts")
    assert any(
        c["name"] == "no NVIDIA GPU reported" and c["status"] == "pass" for c in facts["checks"]
    )
    # The bound for a machine without a GPU; typically 15-25 s here.
    assert elapsed < 60, f"took {elapsed:.0f} s"
    assert proc.stdout == summary  # the summary is also what the run prints


def test_an_outdir_with_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me", encoding="utf-8")
    proc = run_kit(out, path_without_nvidia_smi(tmp_path))
    assert proc.returncode == 2
    assert "not an empty folder" in proc.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_lying_nvidia_smi_fails_each_gpu_step_on_its_own_and_the_run_finishes(
    tmp_path: Path,
) -> None:
    """nvidia-smi says there is a GPU; NVML and torch find none. Every GPU step reports its
    own failure, the report step still runs, the exit status is 1."""
    out = tmp_path / "out"
    path = os.pathsep.join([fake_nvidia_smi(tmp_path / "bin"), path_without_nvidia_smi(tmp_path)])
    proc = run_kit(out, path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    steps = summary_steps(summary)
    assert list(steps) == STEP_NAMES
    assert steps["facts"] == "FAIL"  # the probe finds no GPU where nvidia-smi shows one
    for step in ("pytest-gpu", "reference", "busy", "serve"):
        assert steps[step] in ("FAIL", "TIMEOUT"), summary
    assert steps["report"] == "pass"
    assert "failed:" in summary and "GPU count" in summary
    with tarfile.open(out / "validation.tar.gz") as tar:
        names = tar.getnames()
    assert "validation/nvidia-smi.xml" in names
    assert "validation/pytest.txt" in names


@pytest.mark.slow
def test_sigterm_stops_the_running_command_and_still_writes_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    path = os.pathsep.join(
        [fake_nvidia_smi(tmp_path / "bin", hang_on_xml=True), path_without_nvidia_smi(tmp_path)]
    )
    env = {
        **os.environ,
        "PATH": path,
        "HWADVISOR_GPU_KIT": str(tmp_path / "no-kit"),
        "HWADVISOR_VALIDATE_PYTHON": sys.executable,
        "TMPDIR": str(tmp_path),
    }
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if list(tmp_path.glob("hwadvisor-validate-*/validation/nvidia-smi.xml")):
            break
        time.sleep(0.2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    assert "interrupted" in summary
    assert (out / "validation.tar.gz").exists()


# --------------------------------------------------------------------------------------------
# Step limits


def _ctx(tmp_path: Path, total: float = 60.0) -> Any:
    work, scratch = tmp_path / "work", tmp_path / "scratch"
    work.mkdir()
    scratch.mkdir()
    return validate.Ctx(
        work, scratch, tmp_path / "kit", True, "test", time.monotonic() + total, python=None
    )


def test_a_step_that_hangs_is_stopped_at_its_limit_and_the_next_step_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    def hangs(ctx: Any) -> Any:
        ctx.run(["sleep", "60"], "hang.log")
        raise AssertionError("not reached")

    def quick(ctx: Any) -> Any:
        ran.append("quick")
        return validate.StepResult("quick", validate.PASS, 0, 0, "done")

    steps = [
        validate.Step("hangs", 1.0, "-", needs_gpu=False, needs_hwadvisor=False, run=hangs),
        validate.Step("quick", 5.0, "-", needs_gpu=False, needs_hwadvisor=False, run=quick),
    ]
    ctx = _ctx(tmp_path)
    results: list[Any] = []
    started = time.monotonic()
    validate.run_steps(ctx, steps, results)
    assert time.monotonic() - started < 10
    assert [r.status for r in results] == [validate.TIMEOUT, validate.PASS]
    assert "did not finish in 1 s" in results[0].summary
    assert ran == ["quick"]
    assert ctx.current is None


def test_a_step_that_raises_is_failed_with_its_reason_and_the_next_runs(tmp_path: Path) -> None:
    def broken(ctx: Any) -> Any:
        raise OSError("disk full")

    steps = [
        validate.Step("broken", 5.0, "-", needs_gpu=False, needs_hwadvisor=False, run=broken),
        validate.Step("gpu", 5.0, "-", needs_gpu=True, needs_hwadvisor=False, run=broken),
    ]
    ctx = _ctx(tmp_path)
    ctx.has_gpu = False
    results: list[Any] = []
    validate.run_steps(ctx, steps, results)
    assert [(r.status, r.summary) for r in results] == [
        (validate.FAIL, "OSError: disk full"),
        (validate.SKIP, "no NVIDIA GPU: GPU step skipped"),
    ]


def test_a_late_step_keeps_its_reserve_when_the_run_is_short_of_time(tmp_path: Path) -> None:
    seen: dict[str, float] = {}

    def note(ctx: Any) -> Any:
        seen[str(len(seen))] = ctx.left()
        return validate.StepResult("s", validate.PASS, 0, 0, "")

    steps = [
        validate.Step(f"s{i}", 100.0, "-", needs_gpu=False, needs_hwadvisor=False, run=note)
        for i in range(3)
    ]
    ctx = _ctx(tmp_path, total=50.0)
    validate.run_steps(ctx, steps, [])
    # 50 s in all, 15 s kept for each later step: the first may take 20 s, not 100.
    assert seen["0"] == pytest.approx(50 - 2 * validate.RESERVE_S, abs=1)


def test_the_tree_hash_changes_with_the_code(tmp_path: Path) -> None:
    for part in ("src/hwadvisor", "probes", "templates"):
        (tmp_path / part).mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    (tmp_path / "probes" / "a.py").write_text("x = 1\n", encoding="utf-8")
    before = validate.tree_hash(tmp_path)
    (tmp_path / "probes" / "__pycache__").mkdir()
    (tmp_path / "probes" / "__pycache__" / "a.pyc").write_bytes(b"junk")
    assert validate.tree_hash(tmp_path) == before  # byte code is not the tree
    (tmp_path / "probes" / "a.py").write_text("x = 2\n", encoding="utf-8")
    assert validate.tree_hash(tmp_path) != before


# --------------------------------------------------------------------------------------------
# The checks


@pytest.fixture
def gpu_profile() -> Profile:
    """The single-GPU report fixture, its GPU read afresh from the XML it was made from: what a
    probe that agrees with nvidia-smi gives."""
    fresh = import_text(SMI_XML.read_text(encoding="utf-8"), "nvidia-smi.xml")
    return load_profile(SINGLE_GPU).model_copy(update={"gpus": fresh.gpus})


def by_name(found: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in found}


def test_the_probe_agrees_with_the_xml_it_was_read_from(gpu_profile: Profile) -> None:
    found = by_name(checks.facts_checks(gpu_profile, SMI_XML.read_text(encoding="utf-8")))
    assert found["GPU count"]["status"] == "pass"
    assert found["driver version"]["status"] == "pass"
    assert found["GPU 0 vs nvidia-smi"]["status"] == "pass"
    assert "fields agree (NVIDIA GeForce RTX 3080)" in found["GPU 0 vs nvidia-smi"]["figure"]


def test_a_field_the_probe_reads_wrong_is_named(gpu_profile: Profile) -> None:
    gpu = gpu_profile.gpus[0]
    wrong = gpu.power_limit_watts.model_copy(update={"value": 250.0})
    profile = gpu_profile.model_copy(
        update={"gpus": [gpu.model_copy(update={"power_limit_watts": wrong})]}
    )
    found = by_name(checks.facts_checks(profile, SMI_XML.read_text(encoding="utf-8")))
    result = found["GPU 0 vs nvidia-smi"]
    assert result["status"] == "FAIL"
    assert "power_limit_watts: probe 250.0 vs nvidia-smi 320.0" in result["figure"]


def test_a_fact_the_probe_misses_is_named() -> None:
    """A profile saved before the VBIOS fact: the probe "misses" what nvidia-smi shows."""
    old = ROOT / "tests" / "fixtures" / "profiles" / "v4-single-gpu-old-advice.json"
    found = by_name(checks.facts_checks(load_profile(old), SMI_XML.read_text("utf-8")))
    result = found["GPU 0 vs nvidia-smi"]
    assert result["status"] == "FAIL"
    assert "vbios_version: probe None vs nvidia-smi '94.02.71.40.72'" in result["figure"]


def test_an_unreadable_xml_is_one_failed_check_not_a_crash(gpu_profile: Profile) -> None:
    found = by_name(checks.facts_checks(gpu_profile, "nvidia-smi: command failed\n"))
    assert found["nvidia-smi -q -x readable"]["status"] == "FAIL"
    assert "GPU benchmark cases ok" in found


def _with_gpu_figures(profile: Profile, **update: Any) -> Profile:
    assert profile.benchmarks is not None
    ms = [
        m.model_copy(update=update) if m.device.startswith("cuda") else m
        for m in profile.benchmarks.measurements
    ]
    bench = profile.benchmarks.model_copy(update={"measurements": ms})
    return profile.model_copy(update={"benchmarks": bench})


def test_a_figure_above_its_peak_fails(gpu_profile: Profile) -> None:
    profile = _with_gpu_figures(gpu_profile, efficiency=1.4, peak=1.0)
    found = by_name(checks.facts_checks(profile, SMI_XML.read_text(encoding="utf-8")))
    assert found["no figure above its peak"]["status"] == "FAIL"
    assert found["bf16 matmul near its peak"]["status"] == "pass"


def test_an_idle_gpu_flagged_busy_fails_the_facts_check(gpu_profile: Profile) -> None:
    profile = _with_gpu_figures(
        gpu_profile, disturbances=[Disturbance.GPU_BUSY], disturbance_note="2 other processes"
    )
    found = by_name(checks.facts_checks(profile, SMI_XML.read_text(encoding="utf-8")))
    assert found["idle GPU not flagged busy"]["status"] == "FAIL"
    assert "2 other processes" in found["idle GPU not flagged busy"]["figure"]


def _set_basis(profile: Profile, basis: str) -> Profile:
    assert profile.advice is not None
    estimates = [
        e.model_copy(update={"basis": basis}) if e.origin == "this-machine" else e
        for e in profile.advice.estimates
    ]
    return profile.model_copy(
        update={"advice": profile.advice.model_copy(update={"estimates": estimates})}
    )


def test_busy_scan_passes_only_when_every_gpu_figure_is_flagged_and_set_aside(
    gpu_profile: Profile,
) -> None:
    flagged = _with_gpu_figures(gpu_profile, disturbances=[Disturbance.GPU_BUSY])
    aside = _set_basis(flagged, "catalog peak × default efficiency; measured figures set aside")
    assert [c["status"] for c in checks.busy_checks(aside)] == ["pass", "pass"]
    used = _set_basis(flagged, "measured bf16 matmul 30 TFLOP/s")
    assert [c["status"] for c in checks.busy_checks(used)] == ["pass", "FAIL"]
    assert checks.busy_checks(_set_basis(gpu_profile, "set aside"))[0]["status"] == "FAIL"


def test_the_report_check_wants_the_gpu_named_in_the_html(
    gpu_profile: Profile, tmp_path: Path
) -> None:
    good, bad = tmp_path / "good.html", tmp_path / "bad.html"
    good.write_text("<p>NVIDIA GeForce RTX 3080</p>", encoding="utf-8")
    bad.write_text("<p>no GPU here</p>", encoding="utf-8")
    ok = by_name(checks.report_checks(gpu_profile, good, None, 0, "WeasyPrint cannot run here"))
    assert ok["HTML report"]["status"] == "pass"
    assert ok["PDF report"] == {
        "name": "PDF report",
        "status": "skip",
        "figure": "WeasyPrint cannot run here",
    }
    assert by_name(checks.report_checks(gpu_profile, bad, None))["HTML report"]["status"] == "FAIL"


# --------------------------------------------------------------------------------------------
# The reference


def _m(case: str, best: float | None, precision: str | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "case": case,
        "precision": precision,
        "variant": kw.pop("variant", None),
        "status": "ok" if best else "failed",
        "best": best,
        "unit": kw.pop("unit", "GFLOP/s"),
        **kw,
    }


def test_each_figure_is_compared_with_the_best_reference_and_its_peak() -> None:
    default = [
        _m("matmul", 760_000.0, "bf16", peak=989_400.0),
        _m("matmul", 700_000.0, "fp16", peak=989_400.0),
        _m("h2d", 50.0, unit="GB/s", variant="pageable"),
        _m("matmul", 1_000.0, "fp8"),
        _m("launch_latency", 5.0, unit="us"),
    ]
    ref = [
        _m("matmul", 780_000.0, "bf16", params={"n": 8192}),
        _m("matmul", 790_000.0, "bf16", params={"n": 16384}),
        _m("matmul", 800_000.0, "fp16", params={"n": 8192}),
        _m("h2d", 55.0, unit="GB/s", variant="pageable"),
    ]
    rows = {r["figure"]: r for r in reference.compare(default, ref)}
    assert set(rows) == {"matmul bf16", "matmul fp16", "h2d pageable"}  # fp8, latency: none
    bf16 = rows["matmul bf16"]
    assert bf16["reference"] == 790_000.0 and bf16["ratio"] == pytest.approx(0.962, abs=1e-3)
    assert bf16["status"] == "pass"  # within 5 % of the best of the sweep
    assert "(n=16384)" in bf16["line"] and "77% of 989.4" in bf16["line"]
    assert rows["matmul fp16"]["status"] == "FAIL"  # 0.875×
    assert rows["h2d pageable"]["status"] == "pass"  # 0.91×, pageable allows 20 %


def test_a_figure_missing_on_either_side_is_a_failed_row() -> None:
    rows = reference.compare(
        [_m("conv2d", None, "amp", message="CUDA out of memory"), _m("conv2d", 9.0, "fp32")],
        [_m("conv2d", 10.0, "amp")],
    )
    assert [(r["figure"], r["status"]) for r in rows] == [
        ("conv2d amp", "FAIL"),
        ("conv2d fp32", "FAIL"),
    ]
    assert "CUDA out of memory" in rows[0]["line"]
    assert "no reference figure" in rows[1]["line"]


def test_every_reference_case_runs_and_reads_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference plan on the CPU standing in for a GPU, each size shrunk: every case is
    known, runs, and reports the size it was given (a misspelt parameter would not)."""
    real_torch = pytest.importorskip("torch")
    from hwadvisor.probes.bench.plan import CaseSpec, registry
    from tests.test_bench_gpu import CpuAsCuda, FakeCuda, ctx_for

    monkeypatch.setitem(sys.modules, "pynvml", None)
    tiny = {"n": 64, "batch": 2, "bytes": 1 << 20}
    torch = CpuAsCuda(real_torch, FakeCuda())
    measured = []
    for raw in reference.reference_cases("cuda:0"):
        params = {k: tiny.get(k, v) for k, v in raw["params"].items()}
        params["warmup_s"] = 0.01
        case = CaseSpec.model_validate({**raw, "seconds": 0.1, "params": params})
        found = [
            r for r in registry()[case.kind](case, ctx_for(torch)) if isinstance(r, Measurement)
        ]
        assert len(found) == 1, case.id
        m = found[0]
        assert m.status == BenchStatus.OK, (case.id, m.message)
        for key in ("n", "batch"):
            if key in params:
                assert m.params[key] == params[key], case.id
        assert "sizes_tried" not in m.params, case.id  # the sweep's size, and only it
        measured.append(m.model_dump(mode="json"))
    assert len(measured) == len(reference.reference_cases("cuda:0"))
    rows = reference.compare(measured, measured)
    assert {r["figure"] for r in rows} >= {
        "matmul bf16",
        "matmul fp32",
        "conv2d amp",
        "device_copy",
        "h2d pinned",
        "d2h pageable",
    }


# --------------------------------------------------------------------------------------------
# Recording what came back

apply = load_script("gpu_validate_apply", ROOT / "scripts" / "gpu-validate-apply.py")


def _xml_with_many_clocks() -> str:
    xml = SMI_XML.read_text(encoding="utf-8")
    note = f"\t\t\t\t{apply.TRIM_NOTE}\n"
    more = "".join(
        f"\t\t\t\t<supported_graphics_clock>{c} MHz</supported_graphics_clock>\n"
        for c in (2055, 2040, 2025)
    )
    return xml.replace(note, more, 1)


def fake_result(out: Path, *, has_gpu: bool = True) -> None:
    out.mkdir()
    record = {
        "format": "hwadvisor-gpu-validation/1",
        "created_utc": "2026-11-28T09:00:00+00:00",
        "has_gpu": has_gpu,
        "gpu_reason": "GPU 0: NVIDIA GeForce RTX 3080" if has_gpu else "no NVIDIA GPU: none",
        "facts": {"driver": "595.58.03", "torch": "2.11.0+cu130 CUDA 13.0 Python 3.12.3"},
        "total_seconds": 301.2,
        "steps": [
            {
                "name": "facts",
                "status": "FAIL",
                "checks": [
                    {"name": "GPU count", "status": "pass", "figure": "probe 1, nvidia-smi 1"},
                    {"name": "x|y", "status": "FAIL", "figure": "a | b"},
                    {"name": "PDF", "status": "skip", "figure": "no Pango"},
                ],
            }
        ],
    }
    (out / "results.json").write_text(json.dumps(record), encoding="utf-8")
    work = out.parent / "work"
    work.mkdir()
    (work / "nvidia-smi.xml").write_text(_xml_with_many_clocks(), encoding="utf-8")
    (work / "scan.json").write_text(SINGLE_GPU.read_text(encoding="utf-8"), encoding="utf-8")
    with tarfile.open(out / "validation.tar.gz", "w:gz") as tar:
        for f in work.iterdir():
            tar.add(f, arcname=f"validation/{f.name}")


def repo_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests/fixtures/nvidia-smi").mkdir(parents=True)
    (root / "docs").mkdir()
    for rel in ("tests/fixtures/nvidia-smi/SOURCES.md", "docs/validation.md"):
        (root / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    return root


def test_apply_records_the_xml_scans_and_a_row_and_never_overwrites(tmp_path: Path) -> None:
    out, root = tmp_path / "out", repo_copy(tmp_path)
    fake_result(out)
    assert apply.main([str(out), "--root", str(root)]) == 0
    xml = root / "tests/fixtures/nvidia-smi/validation-geforce-rtx-3080-2026-11-28.xml"
    text = xml.read_text(encoding="utf-8")
    assert text.count("<supported_graphics_clock>2100 MHz") == 1
    assert "2055 MHz" not in text and apply.TRIM_NOTE in text  # cut to three, as the others
    from hwadvisor.importers.nvidia_smi_xml import parse_nvidia_smi_xml

    _, gpus = parse_nvidia_smi_xml(text)
    assert gpus[0].name.value == "NVIDIA GeForce RTX 3080"
    scan = root / "tests/fixtures/validation/geforce-rtx-3080-2026-11-28.json"
    assert load_profile(scan).gpus[0].name.value == "NVIDIA GeForce RTX 3080"
    sources = (root / "tests/fixtures/nvidia-smi/SOURCES.md").read_text(encoding="utf-8")
    assert sources.rstrip().endswith("| this project |")
    doc = (root / "docs/validation.md").read_text(encoding="utf-8")
    row = doc.rstrip().splitlines()[-1]
    assert row.startswith("| 2026-11-28 | NVIDIA GeForce RTX 3080 (`gpu-validate.sh`, 301 s)")
    assert "595.58.03 / 13.0" in row
    assert "facts: GPU count: probe 1, nvidia-smi 1" in row
    assert "facts: x\\|y **FAIL**: a \\| b" in row  # a pipe never breaks the table
    assert "PDF" not in row  # skipped checks are not results
    assert "1 checks failed" in row
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert apply.main([str(out), "--root", str(root)]) == 2  # already recorded
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_apply_has_nothing_to_record_without_a_gpu(tmp_path: Path, capsys: Any) -> None:
    out, root = tmp_path / "out", repo_copy(tmp_path)
    fake_result(out, has_gpu=False)
    before = (root / "docs/validation.md").read_text(encoding="utf-8")
    assert apply.main([str(out), "--root", str(root)]) == 0
    assert "nothing to record" in capsys.readouterr().out
    assert (root / "docs/validation.md").read_text(encoding="utf-8") == before


def test_apply_refuses_a_folder_that_is_not_a_result(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").write_text("{}", encoding="utf-8")
    assert apply.main([str(tmp_path / "out")]) == 5
    assert "is not a validation result" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Recordings from real GPUs, once there are some: today's advice on them


RECORDED = sorted((ROOT / "tests/fixtures/validation").glob("*.json"))


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_gpu_scans_still_advise_as_they_should(path: Path) -> None:
    """A real idle scan's GPU figures are used by today's advice; a real busy scan's are set
    aside."""
    from hwadvisor.advise.engine import advise
    from hwadvisor.workloads import get_workload

    profile = load_profile(path)
    advice = advise(profile, get_workload("resnet50-imagenet"))
    fresh = profile.model_copy(update={"advice": advice})
    if path.stem.endswith("-busy"):
        assert [c["status"] for c in checks.busy_checks(fresh)] == ["pass", "pass"]
    else:
        basis = checks._this_machine_basis(fresh)
        assert "set aside" not in basis and "measured" in basis, basis
