"""Validate every GPU path of hwadvisor on a real NVIDIA GPU in one call; elsewhere, the rest.

    bash scripts/gpu-validate.sh OUTDIR          (docs/validation.md says how to run it)

Steps, each with its own time limit, the whole run within 540 s; a step that fails or runs out
of time is reported and the next one still runs:

  install     hwadvisor from the wheel kit (scripts/gpu-kit-prepare.sh), offline, into a
              folder on PYTHONPATH; no kit: the hwadvisor this Python or ./.venv already has
  facts       nvidia-smi -q -x, topo -m and its table; `hwadvisor scan --workload
              resnet50-imagenet --json`; the probe compared field by field with the XML
  pytest-gpu  `pytest -m gpu` (the probe against nvidia-smi, every GPU benchmark case)
  reference   benchmarks/gpu_reference.py: the scan's GPU figures against long runs on the
              same GPU and against the catalog peak
  busy        a scan while another process keeps the GPU busy: the figures must carry
              gpu_busy and the advice must set them aside
  serve       `hwadvisor advise --serve llama-3.1-8b` on the GPU scan (vLLM bf16 and
              llama.cpp Q4_K_M), and benchmarks/inference_reference.py on cuda: measured
              decode and prefill of random-weight Llama models (1B, 3B, 8B) against the
              prediction (the 3B shape is in no calibration row: a held-out check)
  report      the report of the GPU scan: HTML, PDF where WeasyPrint can run, page one as PNG

Without an NVIDIA GPU the GPU steps are skipped ("no NVIDIA GPU: GPU steps skipped") and the
run takes well under a minute. OUTDIR (new or empty) receives at most 8 files: summary.txt
(one screen), results.json, validation.tar.gz (everything the steps wrote) and page1.png.

Exit status: 0 every check passed or was skipped; 1 a step or a check failed; 2 bad command
line (OUTDIR not empty, say); 130/143 interrupted (the summary is still written).

Standard library only: it runs before hwadvisor is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_KIT = ROOT / ".gpu-kit"
TOTAL_S = 540.0
WORKLOAD = "resnet50-imagenet"
MAX_FILES = 8
#: What makes hwadvisor: a kit built from another tree is stale.
TREE_PARTS = ("src/hwadvisor", "probes", "templates", "pyproject.toml")
GPU_TEST_FILES = ("tests/test_probe_nvml.py", "tests/test_bench_gpu.py")

PASS, FAIL, SKIP, INFO, TIMEOUT = "pass", "FAIL", "skip", "info", "TIMEOUT"


# --------------------------------------------------------------------------------------------
# Records


@dataclass
class Check:
    name: str
    status: str
    figure: str


@dataclass
class StepResult:
    name: str
    status: str
    seconds: float
    limit: float
    summary: str
    checks: list[Check] = field(default_factory=list)


@dataclass(frozen=True)
class Step:
    name: str
    limit_s: float
    """This step's own time limit, at most; less where the whole run's time is short."""
    gpu_s: str
    """What the step is expected to take on one H100 (docs/validation.md)."""
    needs_gpu: bool
    needs_hwadvisor: bool
    run: Callable[[Ctx], StepResult]


class StepTimeout(Exception):
    """A command of the step ran past the step's time limit."""


class StepFailed(Exception):
    """The step cannot go on; the message says why."""


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# --------------------------------------------------------------------------------------------
# Running commands with limits


@dataclass
class Ctx:
    work: Path
    """Where the steps write; tarred into OUTDIR at the end."""
    scratch: Path
    """Installs and builds: not kept."""
    kit: Path
    has_gpu: bool
    gpu_reason: str
    deadline: float
    python: list[str] | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    step_deadline: float = 0.0
    pdf: bool = False
    facts: dict[str, str] = field(default_factory=dict)
    current: subprocess.Popen[bytes] | None = None

    def left(self) -> float:
        return self.step_deadline - time.monotonic()

    def run(
        self,
        cmd: Sequence[str],
        log: str | None = None,
        *,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: Path = ROOT,
        errors: str | None = None,
    ) -> int:
        """Run ``cmd`` in its own process group, its output to ``work/log`` (and its errors
        there too, or to ``work/errors``); its time is the step's time left, or ``timeout`` if
        shorter. Over time: the group is killed and StepTimeout raised."""
        limit = self.left() if timeout is None else min(timeout, self.left())
        if limit <= 0:
            raise StepTimeout(f"no time left for {Path(cmd[0]).name}")
        with contextlib.ExitStack() as files:
            out = files.enter_context((self.work / log if log else Path(os.devnull)).open("ab"))
            err = files.enter_context((self.work / errors).open("ab")) if errors else None
            proc = subprocess.Popen(
                list(cmd),
                stdout=out,
                stderr=err or subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env if env is None else env,
                cwd=cwd,
                start_new_session=True,
            )
            self.current = proc
            try:
                return proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                stop_group(proc)
                what = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd[:4]))
                raise StepTimeout(f"{what} … did not finish in {limit:.0f} s") from None
            finally:
                self.current = None

    def try_run(self, cmd: Sequence[str], log: str, timeout: float, checks: list[Check]) -> bool:
        """Run a command that may hang (nvidia-smi) without giving up the step: a timeout or a
        failure is a failed check, and the step goes on while it has time."""
        name = " ".join(cmd)
        if self.left() <= timeout:
            rc = self.run(cmd, log, timeout=timeout, errors=f"{log}.stderr")
        else:
            try:
                rc = self.run(cmd, log, timeout=timeout, errors=f"{log}.stderr")
            except StepTimeout as exc:
                checks.append(Check(name, TIMEOUT, str(exc)))
                return False
        if rc != 0:
            checks.append(Check(name, FAIL, f"exit {rc}: {tail(self.work / f'{log}.stderr')}"))
        return rc == 0

    def output(self, cmd: Sequence[str], *, timeout: float = 60.0) -> tuple[int, str]:
        """Run ``cmd`` and return its exit status and standard output (stderr dropped)."""
        limit = min(timeout, self.left())
        if limit <= 0:
            raise StepTimeout(f"no time left for {Path(cmd[0]).name}")
        proc = subprocess.Popen(
            list(cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=ROOT,
            start_new_session=True,
        )
        self.current = proc
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            raise StepTimeout(f"{Path(cmd[0]).name} did not finish in {limit:.0f} s") from None
        finally:
            self.current = None
        return proc.returncode, out.decode("utf-8", "replace")

    def hw(self, *args: str) -> list[str]:
        assert self.python is not None
        return [*self.python, "-m", "hwadvisor", *args]

    def checks(self, *args: str) -> list[Check]:
        """Checks computed by scripts/gpu_checks.py with hwadvisor's own readers."""
        assert self.python is not None
        rc, out = self.output([*self.python, str(ROOT / "scripts" / "gpu_checks.py"), *args])
        try:
            return [Check(**c) for c in json.loads(out)]
        except (ValueError, TypeError):
            return [Check("checks", FAIL, f"gpu_checks.py {args[0]} exited {rc} without a result")]


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child's whole process group: TERM, then KILL after 3 s."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def tail(path: Path, lines: int = 1) -> str:
    """The last non-empty lines of a log, joined, for a one-line reason."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " / ".join(kept)[:200]


# --------------------------------------------------------------------------------------------
# The kit


def tree_hash(root: Path = ROOT) -> str:
    """A hash of what hwadvisor is built from, so a kit built from another tree is noticed."""
    digest = hashlib.sha256()
    for part in TREE_PARTS:
        base = root / part
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def read_manifest(kit: Path) -> dict[str, str] | None:
    try:
        data = json.loads((kit / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------------------------
# Steps


def step_install(ctx: Ctx) -> StepResult:
    checks: list[Check] = []
    manifest = read_manifest(ctx.kit)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest is not None and manifest.get("python") != here:
        checks.append(
            Check(
                "kit for this Python",
                SKIP,
                f"the kit is for CPython {manifest.get('python')}, this Python is {here}: "
                "not installed",
            )
        )
        manifest = None
    if manifest is None:
        return _installed_already(ctx, checks)
    wheels = sorted(ctx.kit.glob("wheels/*.whl"))
    site = ctx.scratch / "site"
    stale = manifest.get("tree") != tree_hash()
    ours = [w for w in wheels if w.name.startswith("hwadvisor-")]
    deps = [w for w in wheels if not w.name.startswith(("hwadvisor-", "setuptools-"))]
    if stale:
        ours = _rebuild(ctx, wheels)
        checks.append(
            Check(
                "kit matches this tree",
                INFO,
                f"kit built from {manifest.get('commit', '?')[:10]}, this tree differs: "
                "hwadvisor rebuilt here from the tree",
            )
        )
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    rc = ctx.run(
        [*pip, "--no-index", "--no-deps", "--no-compile", "--target", str(site)]
        + [str(w) for w in [*ours, *deps]],
        "install.log",
    )
    if rc != 0:
        return StepResult(
            "install", FAIL, 0, 0, f"pip install exited {rc}: {tail(ctx.work / 'install.log')}"
        )
    ctx.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), ctx.env.get("PYTHONPATH")]))
    ctx.env["PATH"] = os.pathsep.join([str(site / "bin"), ctx.env.get("PATH", "")])
    how = f"from the kit ({len(wheels)} wheels)" + (", rebuilt from this tree" if stale else "")
    return _use_python(ctx, [sys.executable], how, checks)


def _rebuild(ctx: Ctx, wheels: list[Path]) -> list[Path]:
    """Build hwadvisor's wheel from this tree with the kit's setuptools (no network)."""
    tools = [w for w in wheels if w.name.startswith("setuptools-")]
    if not tools:
        raise StepFailed("the kit is stale and has no setuptools wheel to rebuild it")
    build_site, out = ctx.scratch / "build-site", ctx.scratch / "wheel"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    ctx.run(
        [*pip, "install", "-q", "--no-index", "--no-deps", "--target", str(build_site)]
        + [str(t) for t in tools],
        "install.log",
    )
    env = {**ctx.env, "PYTHONPATH": str(build_site)}
    where = [str(out), str(ROOT)]
    rc = ctx.run(
        [*pip, "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation", "-w", *where],
        "install.log",
        env=env,
    )
    built = sorted(out.glob("hwadvisor-*.whl"))
    if rc != 0 or not built:
        raise StepFailed(f"could not rebuild hwadvisor: {tail(ctx.work / 'install.log')}")
    return built


def _installed_already(ctx: Ctx, checks: list[Check]) -> StepResult:
    """No usable kit: use an hwadvisor this Python or the checkout's .venv already has."""
    for python in (sys.executable, str(ROOT / ".venv" / "bin" / "python")):
        if not Path(python).exists():
            continue
        rc, _ = ctx.output([python, "-c", "import hwadvisor"], timeout=30)
        if rc == 0:
            where = os.path.relpath(python, ROOT) if python.startswith(str(ROOT)) else python
            result = _use_python(ctx, [python], f"no kit: the hwadvisor of {where}", checks)
            result.status = SKIP if result.status == PASS else result.status
            return result
    return StepResult(
        "install",
        FAIL,
        0,
        0,
        f"no kit in {ctx.kit.name}/ and no hwadvisor installed: run scripts/gpu-kit-prepare.sh",
        checks,
    )


def _use_python(ctx: Ctx, python: list[str], how: str, checks: list[Check]) -> StepResult:
    ctx.python = python
    rc, version = ctx.output(ctx.hw("--version"), timeout=60)
    if rc != 0:
        return StepResult("install", FAIL, 0, 0, f"hwadvisor does not start ({how})", checks)
    ctx.facts["hwadvisor"] = version.strip()
    probe = (
        "import sys, torch; "
        "print(torch.__version__, 'CUDA', torch.version.cuda or '-', "
        "'Python', sys.version.split()[0])"
    )
    rc, out = ctx.output([*python, "-c", probe], timeout=90)
    ctx.facts["torch"] = out.strip() if rc == 0 else "not importable"
    rc, _ = ctx.output([*python, "-c", "import weasyprint"], timeout=60)
    ctx.pdf = rc == 0
    checks.append(
        Check(
            "PDF renderer",
            INFO,
            "WeasyPrint loads"
            if ctx.pdf
            else "WeasyPrint or its system libraries (Pango) are "
            "missing: the PDF is skipped, HTML still written",
        )
    )
    checks.append(Check("hwadvisor starts", PASS, f"{version.strip()}, {how}"))
    return StepResult("install", PASS, 0, 0, f"{version.strip()}, {how}", checks)


def step_facts(ctx: Ctx) -> StepResult:
    checks: list[Check] = []
    xml = ctx.work / "nvidia-smi.xml"
    if ctx.has_gpu:
        ctx.try_run(["nvidia-smi", "-q", "-x"], "nvidia-smi.xml", 40, checks)
        ctx.try_run(["nvidia-smi", "topo", "-m"], "nvidia-smi-topo.txt", 20, checks)
        ctx.try_run(["nvidia-smi"], "nvidia-smi.txt", 20, checks)
    else:
        checks.append(Check("nvidia-smi", SKIP, ctx.gpu_reason))
    scan = ctx.work / "scan.json"
    rc = ctx.run(ctx.hw("scan", "--workload", WORKLOAD, "--json", str(scan)), "scan.log")
    if not scan.exists():
        checks.append(Check("scan", FAIL, f"exit {rc}, no profile: {tail(ctx.work / 'scan.log')}"))
        return StepResult("facts", FAIL, 0, 0, "the scan wrote no profile", checks)
    env = {**ctx.env, "COLUMNS": "80", "NO_COLOR": "1"}
    with contextlib.suppress(StepTimeout):
        ctx.run(ctx.hw("advise", "-p", str(scan), "-w", WORKLOAD), "scan-terminal.txt", env=env)
    args = ["facts", "--scan", str(scan), "--exit", str(rc)]
    if xml.exists() and xml.stat().st_size:
        args += ["--xml", str(xml)]
    found = ctx.checks(*args)
    checks += found
    return _from_checks("facts", checks)


def step_pytest(ctx: Ctx) -> StepResult:
    cmd = [*(ctx.python or []), "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
    cmd += ["--junitxml", str(ctx.work / "pytest.xml"), *GPU_TEST_FILES]
    rc = ctx.run(cmd, "pytest.txt")
    last = tail(ctx.work / "pytest.txt")
    counts = re.findall(r"(\d+) (passed|failed|skipped|error)", last)
    figure = ", ".join(f"{n} {w}" for n, w in counts) or last
    passed = sum(int(n) for n, w in counts if w == "passed")
    status = PASS if rc == 0 and passed else FAIL
    if rc == 0 and not passed:
        figure += ": no GPU test ran (does /dev/nvidiactl exist?)"
    return StepResult("pytest-gpu", status, 0, 0, figure, [Check("pytest -m gpu", status, figure)])


def step_reference(ctx: Ctx) -> StepResult:
    scan = ctx.work / "scan.json"
    out = ctx.work / "reference.json"
    cmd = [*(ctx.python or []), str(ROOT / "benchmarks" / "gpu_reference.py"), "--json", str(out)]
    if scan.exists():
        cmd += ["--scan", str(scan)]
    rc = ctx.run(cmd, "reference.txt")
    try:
        rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError):
        why = f"exit {rc}, no result: {tail(ctx.work / 'reference.txt')}"
        return StepResult("reference", FAIL, 0, 0, why, [Check("reference", FAIL, why)])
    checks = [Check(r["figure"], r["status"], r["line"]) for r in rows]
    return _from_checks("reference", checks)


def step_busy(ctx: Ctx) -> StepResult:
    loop_cmd = [*(ctx.python or []), str(ROOT / "scripts" / "gpu_busy.py"), "--seconds", "300"]
    log = ctx.work / "busy-loop.log"
    with log.open("ab") as out:
        loop = subprocess.Popen(
            loop_cmd, stdout=out, stderr=subprocess.STDOUT, env=ctx.env, start_new_session=True
        )
    try:
        ready = _wait_for(log, "busy:", loop, min(60.0, ctx.left() - 30))
        if not ready:
            why = f"the busy loop did not start: {tail(log)}"
            return StepResult("busy", FAIL, 0, 0, why, [Check("busy loop", FAIL, why)])
        scan = ctx.work / "busy.json"
        rc = ctx.run(ctx.hw("scan", "--workload", WORKLOAD, "--json", str(scan)), "busy.log")
        alive = loop.poll() is None
    finally:
        stop_group(loop)
    checks = [
        Check(
            "busy loop ran through the scan",
            PASS if alive else FAIL,
            tail(log) if not alive else "a loop of bf16 matmuls on cuda:0",
        )
    ]
    if not scan.exists():
        checks.append(Check("busy scan", FAIL, f"exit {rc}: {tail(ctx.work / 'busy.log')}"))
        return _from_checks("busy", checks)
    checks += ctx.checks("busy", "--scan", str(scan))
    return _from_checks("busy", checks)


def step_serve(ctx: Ctx) -> StepResult:
    checks: list[Check] = []
    scan = ctx.work / "scan.json"
    if scan.exists():
        env = {**ctx.env, "COLUMNS": "80", "NO_COLOR": "1"}
        for engine, quant in (("vllm", "bf16"), ("llama.cpp", "Q4_K_M")):
            out = ctx.work / f"serve-{engine}.json"
            args = ["--serve", "llama-3.1-8b", "--engine", engine, "--quant", quant]
            rc = ctx.run(ctx.hw("advise", "-p", str(scan), *args, "--json", str(out)), "serve.log")
            ctx.run(ctx.hw("advise", "-p", str(scan), *args), f"serve-{engine}.txt", env=env)
            text = (ctx.work / f"serve-{engine}.txt").read_text(encoding="utf-8", errors="replace")
            # the answer for this machine: from "This machine" to the next sentence's end
            answer = " ".join(text.split())
            at = answer.find("This machine")
            figure = answer[at : at + 220] if at >= 0 else answer[:220]
            ok = rc == 0 and out.exists() and "from catalog peaks" not in answer
            if "from catalog peaks" in answer:
                figure = "sized from catalog peaks though the scan measured the GPU: " + figure
            checks.append(Check(f"advise --serve ({engine} {quant})", PASS if ok else FAIL, figure))
    else:
        checks.append(Check("advise --serve", SKIP, "no scan (the facts step wrote none)"))
    out = ctx.work / "serve-reference.json"
    cmd = [*(ctx.python or []), str(ROOT / "benchmarks" / "inference_reference.py")]
    cmd += ["--device", "cuda", "--sizes", "1b,3b,8b", "--json", str(out)]
    try:
        rc = ctx.run(cmd, "serve-reference.txt")
    except StepTimeout as exc:
        rc = -1
        checks.append(Check("inference reference", TIMEOUT, str(exc)))
    try:
        rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError):
        why = f"exit {rc}, no result: {tail(ctx.work / 'serve-reference.txt')}"
        checks.append(Check("inference reference", FAIL, why))
        rows = []
    for r in rows:
        ratio = r["measured"] / r["predicted"] if r["predicted"] else float("nan")
        line = (
            f"measured {r['measured']:.1f} tok/s, predicted {r['predicted']:.1f} "
            f"(transformers engine), ratio {ratio:.2f}"
        )
        checks.append(Check(f"{r['model']} {r['phase']}", INFO, line))
    return _from_checks("serve", checks)


def _wait_for(log: Path, marker: str, proc: subprocess.Popen[bytes], seconds: float) -> bool:
    end = time.monotonic() + max(1.0, seconds)
    while time.monotonic() < end:
        if marker in log.read_text(encoding="utf-8", errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def step_report(ctx: Ctx) -> StepResult:
    scan = ctx.work / "scan.json"
    if not scan.exists():
        return StepResult("report", SKIP, 0, 0, "no scan to render (the facts step wrote none)")
    out = ctx.work / "report"
    formats = "html,pdf" if ctx.pdf else "html"
    rc = ctx.run(ctx.hw("report", str(scan), "-o", str(out), "-f", formats), "report.log")
    html = next(iter(sorted(out.glob("*.html"))), None)
    pdf = next(iter(sorted(out.glob("*.pdf"))), None)
    checks: list[Check] = []
    if pdf is not None and shutil.which("pdftoppm"):
        page = ctx.work / "page1"
        png = ["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile"]
        ctx.run([*png, str(pdf), str(page)], "report.log", timeout=30)
    elif pdf is not None:
        checks.append(Check("page one as PNG", SKIP, "pdftoppm is not installed"))
    args = ["report", "--scan", str(scan), "--exit", str(rc)]
    if html is not None:
        args += ["--html", str(html)]
    if pdf is not None:
        args += ["--pdf", str(pdf)]
    if not ctx.pdf:
        args += ["--no-pdf-reason", "WeasyPrint cannot run here"]
    checks += ctx.checks(*args)
    return _from_checks("report", checks)


def _from_checks(name: str, checks: list[Check]) -> StepResult:
    failed = [c for c in checks if c.status in (FAIL, TIMEOUT)]
    ran = [c for c in checks if c.status in (PASS, FAIL)]
    if failed:
        summary = f"{len(failed)} of {len(ran)} checks failed: {failed[0].name}: {failed[0].figure}"
    else:
        lead = next((c for c in checks if c.status == PASS), None)
        summary = f"{len(ran)} checks passed" + (f"; {lead.figure}" if lead else "")
    return StepResult(name, FAIL if failed else PASS, 0, 0, summary, checks)


STEPS: tuple[Step, ...] = (
    Step("install", 60, "10-20 s", needs_gpu=False, needs_hwadvisor=False, run=step_install),
    Step("facts", 110, "40-60 s", needs_gpu=False, needs_hwadvisor=True, run=step_facts),
    Step("pytest-gpu", 80, "30-45 s", needs_gpu=True, needs_hwadvisor=True, run=step_pytest),
    Step("reference", 100, "70-90 s", needs_gpu=True, needs_hwadvisor=True, run=step_reference),
    Step("busy", 100, "40-70 s", needs_gpu=True, needs_hwadvisor=True, run=step_busy),
    Step("report", 30, "5-10 s", needs_gpu=False, needs_hwadvisor=True, run=step_report),
    Step("serve", 70, "40-60 s", needs_gpu=True, needs_hwadvisor=True, run=step_serve),
)
#: Time kept for each later step when an earlier one may run long.
RESERVE_S = 15.0


# --------------------------------------------------------------------------------------------
# The run


def find_gpu() -> tuple[bool, str]:
    """Whether an NVIDIA GPU answers ``nvidia-smi -L``, and what it said."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False, "no NVIDIA GPU: nvidia-smi is not installed; GPU steps skipped"
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return False, "no NVIDIA GPU: nvidia-smi -L did not answer in 20 s; GPU steps skipped"
    except OSError as exc:
        return False, f"no NVIDIA GPU: nvidia-smi could not run ({exc}); GPU steps skipped"
    gpus = [ln for ln in proc.stdout.splitlines() if ln.startswith("GPU ")]
    if proc.returncode != 0 or not gpus:
        said = (proc.stderr or proc.stdout).strip().splitlines()[:1]
        return (
            False,
            f"no NVIDIA GPU: nvidia-smi -L found none ({' '.join(said)}); GPU steps skipped",
        )
    return True, "; ".join(gpus)


def run_steps(ctx: Ctx, steps: Sequence[Step], results: list[StepResult]) -> None:
    """Run ``steps`` in order, appending each one's result to ``results`` as it ends."""
    for i, step in enumerate(steps):
        started = time.monotonic()
        later = RESERVE_S * (len(steps) - i - 1)
        limit = max(1.0, min(step.limit_s, ctx.deadline - started - later))
        ctx.step_deadline = started + limit
        if step.needs_gpu and not ctx.has_gpu:
            result = StepResult(step.name, SKIP, 0, 0, "no NVIDIA GPU: GPU step skipped")
        elif step.needs_hwadvisor and ctx.python is None:
            result = StepResult(step.name, SKIP, 0, 0, "hwadvisor is not installed (see install)")
        else:
            try:
                result = step.run(ctx)
            except StepTimeout as exc:
                result = StepResult(step.name, TIMEOUT, 0, 0, str(exc))
            except StepFailed as exc:
                result = StepResult(step.name, FAIL, 0, 0, str(exc))
            except Interrupted:
                results.append(
                    StepResult(step.name, FAIL, time.monotonic() - started, limit, "interrupted")
                )
                raise
            except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
                result = StepResult(step.name, FAIL, 0, 0, f"{type(exc).__name__}: {exc}")
        result.seconds = round(time.monotonic() - started, 1)
        result.limit = round(limit)
        if result.status == TIMEOUT:
            result.checks.append(Check(step.name, TIMEOUT, result.summary))
        results.append(result)
        print(
            f"gpu-validate: {step.name}: {result.status} in {result.seconds:.0f} s: "
            f"{result.summary}",
            file=sys.stderr,
            flush=True,
        )


def summary_text(ctx: Ctx, results: list[StepResult], total_s: float, files: list[str]) -> str:
    checks = [(r.name, c) for r in results for c in r.checks]
    ran = [c for _, c in checks if c.status in (PASS, FAIL, TIMEOUT)]
    failed = [(s, c) for s, c in checks if c.status in (FAIL, TIMEOUT)]
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"hwadvisor GPU validation, {now}, {ctx.facts.get('hwadvisor', 'hwadvisor ?')}"
        f" (commit {ctx.facts.get('commit', '?')})",
        f"machine: {ctx.facts.get('gpu', ctx.gpu_reason)}",
        f"torch: {ctx.facts.get('torch', 'unknown')}; driver: {ctx.facts.get('driver', '-')}",
        f"result: {'FAILED' if failed else 'passed'}: {len(ran)} checks, {len(failed)} failed;"
        f" {total_s:.0f} s of {TOTAL_S:.0f} s",
        "",
        f"{'step':<11} {'status':<8} {'time':>5} {'limit':>6}  what",
    ]
    for r in results:
        what = r.summary if len(r.summary) <= 60 else r.summary[:59] + "…"
        lines.append(f"{r.name:<11} {r.status:<8} {r.seconds:>4.0f}s {r.limit:>5.0f}s  {what}")
    if not ctx.has_gpu:
        lines += ["", ctx.gpu_reason]
    if failed:
        lines += ["", "failed:"]
        lines += [f"  {s}: {c.name}: {c.figure}"[:200] for s, c in failed[:10]]
    figures = [
        c
        for s, c in checks
        if s == "reference" and c.name != "reference" and c.status in (PASS, FAIL)
    ]
    if figures:
        lines += ["", "figures (scan, long reference, catalog peak):"]
        lines += [f"  {c.figure}"[:110] for c in figures[:12]]
    lines += ["", "files: " + " ".join(files)]
    return "\n".join(lines) + "\n"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip() or "?"


def finish(ctx: Ctx, out: Path, results: list[StepResult], total_s: float) -> list[str]:
    """Write OUTDIR's files: summary.txt, results.json, validation.tar.gz, page1.png."""
    files = ["summary.txt", "results.json", "validation.tar.gz"]
    page = ctx.work / "page1.png"
    if page.exists():
        shutil.copyfile(page, out / "page1.png")
        files.append("page1.png")
    record = {
        "format": "hwadvisor-gpu-validation/1",
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "has_gpu": ctx.has_gpu,
        "gpu_reason": ctx.gpu_reason,
        "facts": ctx.facts,
        "total_seconds": round(total_s, 1),
        "budget_seconds": TOTAL_S,
        "steps": [asdict(r) for r in results],
    }
    (out / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    text = summary_text(ctx, results, total_s, files)
    (ctx.work / "summary.txt").write_text(text, encoding="utf-8")
    (out / "summary.txt").write_text(text, encoding="utf-8")
    shutil.copyfile(out / "results.json", ctx.work / "results.json")
    with tarfile.open(out / "validation.tar.gz", "w:gz") as tar:
        for path in sorted(ctx.work.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"validation/{path.relative_to(ctx.work).as_posix()}")
    assert len(list(out.iterdir())) <= MAX_FILES
    sys.stdout.write(text)
    return files


@contextlib.contextmanager
def signals_raise(ctx: Ctx) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP: stop the command running now, then unwind to write the summary."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        if ctx.current is not None:
            stop_group(ctx.current)
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gpu-validate.sh", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "outdir", type=Path, nargs="?", help="a new or empty folder for the results"
    )
    parser.add_argument(
        "--kit", type=Path, default=Path(os.environ.get("HWADVISOR_GPU_KIT", DEFAULT_KIT))
    )
    parser.add_argument("--total", type=float, default=TOTAL_S, help=argparse.SUPPRESS)
    parser.add_argument("--tree-hash", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tree_hash:
        print(tree_hash())
        return 0
    if args.outdir is None:
        parser.error("give OUTDIR, a new or empty folder for the results")
    out: Path = args.outdir
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(
            f"gpu-validate: {out} exists and is not an empty folder: give a new one "
            "(nothing was written)",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    has_gpu, reason = find_gpu()
    print(f"gpu-validate: {reason if not has_gpu else 'NVIDIA GPU: ' + reason}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hwadvisor-validate-") as tmp:
        work, scratch = Path(tmp) / "validation", Path(tmp) / "scratch"
        work.mkdir()
        scratch.mkdir()
        ctx = Ctx(work, scratch, args.kit.resolve(), has_gpu, reason, started + args.total)
        ctx.facts["commit"] = _git("rev-parse", "--short=10", "HEAD")
        if _git("status", "--porcelain", "--untracked-files=no") not in ("", "?"):
            ctx.facts["commit"] += " + changes"
        if has_gpu:
            ctx.facts["gpu"] = reason
            smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                got = subprocess.run(smi, capture_output=True, text=True, timeout=20, check=False)
                ctx.facts["driver"] = got.stdout.strip().splitlines()[0] if got.stdout else "?"
        results: list[StepResult] = []
        code = 0
        with signals_raise(ctx):
            try:
                run_steps(ctx, STEPS, results)
            except Interrupted as exc:
                code = 128 + exc.signum
                print(f"gpu-validate: interrupted ({exc}): writing what was done", file=sys.stderr)
        finish(ctx, out, results, time.monotonic() - started)
    if code:
        return code
    failed = any(c.status in (FAIL, TIMEOUT) for r in results for c in r.checks)
    return 1 if failed or any(r.status in (FAIL, TIMEOUT) for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
