"""The slim install (`pip install hwadvisor`, `bash setup.sh --slim`): no WeasyPrint. JSON and
the HTML report (charts included: they are drawn as SVG by hwadvisor itself) never need it; a
PDF is skipped with one line naming the `report` extra (exit 3, as when Pango is missing).
matplotlib is blocked too: nothing may reach for it.

The slim install is simulated in-process: ``sys.modules[name] = None`` makes ``import name``
fail, for the packages and every submodule already imported.
"""

from __future__ import annotations

import email
import importlib
import json
import re
import sys
import zipfile
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hwadvisor import pipeline
from hwadvisor.cli import app
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile
from hwadvisor.render import html as html_render
from tests.helpers.wheel import build_wheel

ROOT = Path(__file__).resolve().parent.parent
REPORTS = Path(__file__).parent / "fixtures" / "reports"
IMPORTS = Path(__file__).parent / "fixtures" / "nvidia-smi"
REPORT_EXTRA = "pip install 'hwadvisor[report]'"
MISSING = ("matplotlib", "weasyprint")


@pytest.fixture
def slim(monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib and WeasyPrint cannot be imported for the duration of the test."""
    for name in list(sys.modules):
        if name.partition(".")[0] in MISSING:
            monkeypatch.setitem(sys.modules, name, None)
    for name in MISSING:
        monkeypatch.setitem(sys.modules, name, None)
    # Charts are drawn once per content: a page drawn before (with matplotlib) must not be
    # reused, nor this test's chart-less page after it.
    monkeypatch.setattr(html_render, "_CHART_CACHE", {})


def _still_slim() -> None:
    """Nothing brought the packages back (a fallback import, a cached module)."""
    for name, module in sys.modules.items():
        if name.partition(".")[0] in MISSING:
            assert module is None, f"{name} was imported"


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> Profile:
    """The scan returns a saved profile with benchmarks and advice: no probe or benchmark
    runs (as the other command-line tests do)."""
    profile = load_profile(REPORTS / "single-gpu.json")

    def run_scan(options: pipeline.ScanOptions, progress: object = None) -> Profile:
        return profile.model_copy(
            update={"benchmarks": None if not options.bench else profile.benchmarks}
        )

    monkeypatch.setattr(pipeline, "run_scan", run_scan)
    return profile


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_the_simulation_blocks_the_imports(slim: None) -> None:
    for name in (*MISSING, "matplotlib.figure", "weasyprint.urls"):
        with pytest.raises(ImportError):
            importlib.import_module(name)


def test_scan_json_to_stdout(slim: None, scanned: Profile, runner: CliRunner) -> None:
    result = runner.invoke(app, ["scan", "--json", "-"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(result.stdout)["gpus"][0]["name"]["value"] == scanned.gpus[0].name.value
    assert REPORT_EXTRA not in result.stderr
    _still_slim()


def test_scan_no_bench_json_file(
    slim: None, scanned: Profile, runner: CliRunner, tmp_path: Path
) -> None:
    target = tmp_path / "p.json"
    result = runner.invoke(app, ["scan", "--no-bench", "--quiet", "--json", str(target)])
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(target.read_text())["benchmarks"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]
    _still_slim()


def test_default_scan_writes_json_and_html_and_names_the_extra_for_the_pdf(
    slim: None, scanned: Profile, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    result = runner.invoke(app, ["scan", "--out", str(out)])
    # As when Pango is missing: the outputs that could be made are written, exit 3.
    assert result.exit_code == ExitStatus.DEGRADED, result.output
    names = sorted(p.suffix for p in out.iterdir())
    assert names == [".html", ".json"]
    said = [line for line in result.stderr.splitlines() if REPORT_EXTRA in line]
    assert len(said) == 1, result.stderr
    assert said[0].startswith("no PDF: ") and "WeasyPrint is not installed" in said[0]
    assert "the JSON and HTML reports are still written" in said[0]  # one line, not wrapped
    page = next(out.glob("*.html")).read_text()
    assert "data:image/svg+xml" in page  # the charts are drawn without any plotting library
    assert "report extra" not in unescape(page)
    _still_slim()


def test_scan_without_pdf_is_ok(
    slim: None, scanned: Profile, runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["scan", "--out", str(tmp_path), "-f", "json,html", "-q"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".html", ".json"]
    assert REPORT_EXTRA not in result.stderr


def test_html_charts_without_data_keep_their_own_reason(
    slim: None, runner: CliRunner, tmp_path: Path
) -> None:
    # No GPU, no crossover: those charts would not be drawn anyway, and say why.
    result = runner.invoke(
        app, ["report", str(REPORTS / "cpu-only.json"), "-f", "html", "--out", str(tmp_path)]
    )
    assert result.exit_code == ExitStatus.OK, result.output
    page = (tmp_path / "cpu-only.html").read_text()
    assert "No chart: no GPU: nothing to compare." in page
    assert page.count("data:image/svg+xml") == 1  # time to train, the chart with data
    _still_slim()


def test_report(slim: None, runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(REPORTS / "eight-gpu.json"), "-o", str(tmp_path)])
    assert result.exit_code == ExitStatus.DEGRADED, result.output
    assert [p.name for p in tmp_path.iterdir()] == ["eight-gpu.html"]
    assert REPORT_EXTRA in result.stderr
    assert len(result.stderr.strip().splitlines()) == 2  # "Report written", "no PDF: ..."
    _still_slim()


def test_import(slim: None, runner: CliRunner, tmp_path: Path) -> None:
    source = IMPORTS / "telegraf-geforce-rtx-3080.xml"
    result = runner.invoke(app, ["import", str(source), "--json", "-"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(result.stdout)["gpus"][0]["name"]["value"] == "NVIDIA GeForce RTX 3080"
    result = runner.invoke(app, ["import", str(source), "--out", str(tmp_path), "-q"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]
    _still_slim()


def test_advise_diff_schema(slim: None, runner: CliRunner) -> None:
    profile = str(REPORTS / "single-gpu.json")
    advise = ["advise", "--profile", profile, "--workload", "bert-base-finetune", "--json", "-"]
    result = runner.invoke(app, advise)
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(result.stdout)["workload"]["name"] == "bert-base-finetune"
    result = runner.invoke(app, ["diff", str(REPORTS / "cpu-only.json"), profile, "--json", "-"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(result.stdout)["summary"]
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == ExitStatus.OK, result.output
    assert json.loads(result.stdout)["title"] == "hwadvisor profile"
    _still_slim()


def test_export_prometheus(slim: None, runner: CliRunner, tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    target = tmp_path / "hwadvisor.prom"
    paths = [str(REPORTS / "cpu-only.json"), str(REPORTS / "single-gpu.json")]
    result = runner.invoke(app, ["export", "prometheus", *paths, "--out", str(target)])
    assert result.exit_code == ExitStatus.OK, result.output
    names = {f.name for f in text_string_to_metric_families(target.read_text())}
    assert {"hwadvisor_info", "hwadvisor_gpu_info", "hwadvisor_benchmark_best"} <= names
    _still_slim()


@pytest.mark.slow
def test_wheel_metadata_keeps_the_report_stack_and_duckdb_in_extras(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    requires = metadata.get_all("Requires-Dist") or []
    extras: dict[str | None, set[str]] = {}
    for line in requires:
        match = re.match(r"\s*([A-Za-z0-9._-]+)", line)
        assert match is not None, line
        package = match.group(1).lower().replace("_", "-")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", line)
        extras.setdefault(extra.group(1) if extra else None, set()).add(package)
    core = extras.get(None, set())
    assert {"typer", "pydantic", "rich", "jinja2"} <= core
    assert not core & {"weasyprint", "matplotlib", "duckdb"}, core
    assert extras.get("report") == {"weasyprint"}
    assert "matplotlib" not in {p for names in extras.values() for p in names}
    assert "duckdb" in extras.get("fleet", set())
    provided = set(metadata.get_all("Provides-Extra") or [])
    assert {"report", "fleet"} <= provided
