"""What a person sees in an 80-column terminal: the verdict first, tables that fit without
splitting a value, scenarios by their name, one unit system, unknowns said once, identical GPUs
folded, and no rows for back-ends the platform cannot have."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from hwadvisor.advise import advise
from hwadvisor.cli import main
from hwadvisor.diff import diff_profiles
from hwadvisor.model.advice import Advice
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile
from hwadvisor.render.console import Flow, render_advice, render_summary
from hwadvisor.render.diff_console import render_diff
from hwadvisor.units import (
    duration_range,
    duration_with_range,
    format_value,
    hours_text,
    human_bytes,
    human_duration,
)
from hwadvisor.workloads import get_workload

REPORTS = Path(__file__).parent / "fixtures" / "reports"
FIXTURES = {
    "cpu-only": "resnet50-imagenet",
    "single-gpu": "llm-7b-lora",
    "eight-gpu": "llm-7b-pretrain",
}
TITLES = {
    1: "A CPU is enough",
    2: "One GPU",
    3: "One machine with several GPUs, or one cloud instance of up to 8",
    4: "More than one machine: a cluster or cloud at scale",
}


def _profile(name: str, *, advised: bool = False) -> Profile:
    profile = load_profile(REPORTS / f"{name}.json")
    if advised:
        profile.advice = advise(profile, get_workload(FIXTURES[name]))
    return profile


def _summary(profile: Profile, width: int = 80) -> str:
    out = io.StringIO()
    render_summary(profile, Console(file=out, width=width, color_system=None, highlight=False))
    return out.getvalue()


def _advice(advice: Advice, width: int = 80) -> str:
    out = io.StringIO()
    render_advice(advice, Console(file=out, width=width, color_system=None, highlight=False))
    return out.getvalue()


def _cases() -> list[tuple[str, bool]]:
    return [(name, advised) for name in FIXTURES for advised in (False, True)]


# --------------------------------------------------------------------------------------------
# The shared formatters


def test_durations_have_one_style() -> None:
    assert human_duration(24 * 3600) == "24 h"  # never "24.0 hours"
    assert human_duration(8.33 * 3600) == "8.3 h"
    assert human_duration(26.7 * 3600) == "26.7 h"
    assert human_duration(74 * 86400) == "74 days"
    assert human_duration(3.1 * 86400) == "3.1 days"
    assert human_duration(1130 * 86400) == "3.1 years"
    assert human_duration(20 * 60) == "20 min"
    assert human_duration(None) == "—"
    assert hours_text(168) == "7 days" and hours_text(24) == "24 h"
    assert duration_range(16.1 * 3600, 41.7 * 3600) == "16.1–41.7 h"
    assert duration_range(671 * 86400, 5.1 * 365 * 86400) == "671 days–5.1 years"
    assert duration_with_range(8.3 * 3600, 5 * 3600, 13.3 * 3600) == "8.3 h (5–13.3 h)"


def test_memory_is_binary_everywhere() -> None:
    assert human_bytes(10 * 1024**3) == "10.0 GiB"
    assert format_value(10 * 1024**3, "vram_total_bytes") == "10.0 GiB"
    assert format_value(None, "x") == "unknown"
    assert format_value(True, "x") == "yes"
    assert format_value(2596.0, "base_frequency_mhz") == "2,596 MHz"
    assert format_value(5400.0, "duration_seconds") == "1.5 h"


def test_a_value_is_never_split_by_the_wrapping() -> None:
    text = "the GPU needs about 26.7 h (16.1–41.7 h) and 15.2 GiB per GPU at batch 1"
    for width in range(len("(16.1–41.7 h)"), 60):
        lines = [line.plain for line in Flow(text).lines(width)]
        assert all(len(line) <= width for line in lines), (width, lines)
        joined = "\n".join(lines)
        for value in ("26.7 h", "(16.1–41.7 h)", "15.2 GiB", "batch 1"):
            assert value in joined, (width, lines)
    # Wider than the line: folded, never lost.
    lines = [line.plain for line in Flow("x" * 30).lines(10)]
    assert "".join(lines) == "x" * 30 and all(len(line) <= 10 for line in lines)


# --------------------------------------------------------------------------------------------
# The summary of a profile


@pytest.mark.parametrize(("name", "advised"), _cases())
def test_the_verdict_and_the_recommended_class_come_first(name: str, advised: bool) -> None:
    profile = _profile(name, advised=advised)
    lines = _summary(profile).splitlines()
    head = "\n".join(lines[:15])
    assert re.search(r"^This machine is (not )?enough for .+ within ", head, re.M), head
    enough = head.startswith("This machine is enough")
    # A machine that is enough is shown the smallest class that would also do, not told to buy.
    label = "Smallest class that also meets it:" if enough else "Recommended:"
    other = "Recommended:" if enough else "Smallest class that also meets it:"
    assert label in head and other not in head, head
    assert re.search(r"^Needs: scenario [1-4] of 4 \(", head, re.M)


@pytest.mark.parametrize(("name", "advised"), _cases())
def test_every_line_fits_80_columns(name: str, advised: bool) -> None:
    for line in _summary(_profile(name, advised=advised)).splitlines():
        assert Text(line).cell_len <= 80, line


@pytest.mark.parametrize("name", FIXTURES)
def test_durations_stay_whole_on_one_line(name: str) -> None:
    profile = _profile(name, advised=True)
    assert profile.advice is not None
    lines = _summary(profile).splitlines()
    for e in profile.advice.estimates:
        value = human_duration(e.seconds)
        assert any(value in line for line in lines), (value, e.hardware)
    rec = profile.advice.recommendation
    if rec is not None:
        value = duration_range(rec.low_seconds, rec.high_seconds)
        assert any(value in line for line in lines), value


@pytest.mark.parametrize(("name", "advised"), _cases())
def test_a_scenario_is_never_a_bare_number(name: str, advised: bool) -> None:
    text = " ".join(_summary(_profile(name, advised=advised)).split())
    for found in re.finditer(r"\b[Ss]cenario ([1-4])\b", text):
        after = text[found.end() : found.end() + 80]
        assert TITLES[int(found.group(1))] in after, text[found.start() : found.end() + 80]


@pytest.mark.parametrize("name", FIXTURES)
def test_no_raw_rule_evidence(name: str) -> None:
    text = _summary(_profile(name, advised=True))
    assert "_at_most" not in text and "=True" not in text and "cpu_hours" not in text
    assert "How the scenario was chosen" in text
    flat = " ".join(text.split())
    assert "the scenario: the smallest class that holds it in time" in flat


@pytest.mark.parametrize("name", FIXTURES)
def test_one_unit_system(name: str) -> None:
    profile = _profile(name, advised=True)
    assert profile.advice is not None
    text = " ".join(_summary(profile).split())
    # Computed memory figures are GiB ("35.0 GB" was); "24 GB high-end GPU" is a product name.
    assert not re.search(r"\d\.\d+ GB\b(?!/s)", text), re.findall(r".{40}\d GB\b.{10}", text)
    assert " hours" not in text and " minutes" not in text
    assert "GiB" in text


def test_the_memory_that_decides_is_said_once() -> None:
    profile = _profile("single-gpu", advised=True)
    assert profile.advice is not None
    reasons = profile.advice.this_machine.reasons
    memory = [r for r in reasons if "GiB" in r or "GB" in r]
    assert len(memory) == 1, reasons
    assert memory[0].startswith("memory: does not fit even at batch 1")
    head = "\n".join(_summary(profile).splitlines()[:15])
    # Only the deciding figures (batch 1, per GPU) up front, not the full batch's beside them.
    flat = " ".join(head.split())
    assert "needs 15.2 GiB per GPU even at batch 1 with checkpointing; 9.5 GiB usable" in flat
    assert "32.6 GiB" not in head


def test_no_mps_or_xpu_rows_on_linux_x86() -> None:
    profile = _profile("cpu-only")
    assert profile.platform.os.value == "Linux"
    text = _summary(profile)
    assert "MPS" not in text and "XPU" not in text


def test_mps_row_on_macos() -> None:
    profile = _profile("cpu-only")
    profile.platform.os = fact("Darwin", Source.PLATFORM)
    profile.frameworks.torch.mps_built = fact(True, Source.TORCH)
    profile.frameworks.torch.mps_available = fact(True, Source.TORCH)
    line = next(row for row in _summary(profile).splitlines() if "MPS (Apple)" in row)
    assert "built yes, available yes" in line


def test_identical_gpus_are_folded() -> None:
    text = _summary(_profile("eight-gpu"))
    assert "8 × NVIDIA A100-SXM4-40GB" in text
    gpu_rows = [line for line in text.splitlines() if "A100-SXM4-40GB" in line]
    assert len([row for row in gpu_rows if row.lstrip().startswith("0–7")]) == 1
    assert not any(line.lstrip().startswith("cuda:3 ") for line in text.splitlines())
    assert "cuda:0–7" in text


def test_unknowns_are_said_once() -> None:
    text = _summary(_profile("single-gpu"))
    assert "unknown unknown" not in text and "unknown/unknown" not in text
    flat = " ".join(text.split())
    assert (
        "not known system, OS, Python, container, memory, swap, disk free (not in nvidia-smi"
        in flat
    )
    assert "network unknown (not probed)" in flat
    assert "CPU: unknown (not in nvidia-smi -q -x XML)" in text  # a section none of it known
    assert text.count("unknown") <= 6, text


def test_probed_strings_are_shown_literally() -> None:
    profile = _profile("eight-gpu")
    for gpu in profile.gpus:
        gpu.name = fact("[red]x[/red]", Source.NVML)
    text = _summary(profile)
    assert "8 × [red]x[/red]" in text


def test_without_advice_the_machine_comes_first_with_the_way_to_a_verdict() -> None:
    profile = _profile("cpu-only")
    profile.advice = None
    lines = _summary(profile).splitlines()
    head = "\n".join(lines[:15])
    assert head.startswith("At a glance: build-7")
    assert "hwadvisor advise --workload NAME" in " ".join(head.split()) and "23.5 GiB RAM" in head


def test_wide_terminals_show_the_median_column() -> None:
    text = _summary(_profile("single-gpu"), width=120)
    assert "median ± spread" in text
    assert all(Text(line).cell_len <= 120 for line in text.splitlines())


# --------------------------------------------------------------------------------------------
# advise and diff


def test_advise_through_a_pipe(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code = main(["advise", "-p", str(REPORTS / "single-gpu.json"), "--workload", "llm-7b-lora"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "This machine is not enough for llm-7b-lora within 24 h."
    assert any(line.startswith("Recommended: 24 GB") for line in lines[:15])
    assert all(line == line.rstrip() for line in lines)
    assert all(len(line) <= 80 for line in lines)
    assert "(16.1–41.7 h)" not in out or "26.7 h" in out


def test_render_advice_alone_fits_80_columns() -> None:
    profile = _profile("eight-gpu")
    advice = advise(profile, get_workload("llm-7b-pretrain"))
    lines = _advice(advice).splitlines()
    assert all(Text(line).cell_len <= 80 for line in lines)
    assert advice.recommendation is not None and advice.scale_out is not None
    assert f"Recommended: {advice.recommendation.hardware}, about" in " ".join(
        " ".join(lines[:15]).split()
    )
    assert advice.recommendation.hardware.endswith(f"({advice.scale_out.nodes} nodes of 8)")


def test_diff_fits_80_columns_and_keeps_field_names_whole() -> None:
    a, b = _profile("single-gpu"), _profile("eight-gpu")
    diff = diff_profiles(a, b, a_label="single-gpu.json", b_label="eight-gpu.json")
    out = io.StringIO()
    render_diff(diff, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    lines = text.splitlines()
    assert all(Text(line).cell_len <= 80 for line in lines)
    for c in diff.changes:
        assert any(c.field in line for line in lines), c.field
    assert "GPU 1–7" in text  # seven GPUs added, said once
    assert "cuda:1–7" in text
    assert "23.8 TFLOP/s" in text and "×0.65 worse" in text


@pytest.mark.parametrize("name", list(FIXTURES))
@pytest.mark.parametrize("workload", ["llm-7b-lora", "resnet50-imagenet", "llm-7b-pretrain"])
def test_the_whole_answer_fits_15_lines_before_the_details(name: str, workload: str) -> None:
    """Verdict, scenario, recommended class, reasons and key figures: all of it above the first
    detail table, in at most 15 lines at 80 columns."""
    profile = load_profile(REPORTS / f"{name}.json")
    profile.advice = advise(profile, get_workload(workload))
    lines = _summary(profile).splitlines()
    end = next(n for n, line in enumerate(lines) if n and line.strip() in ("Machine",))
    opening = [line for line in lines[:end] if line.strip()]
    said = "\n".join(opening)
    enough = profile.advice.this_machine.sufficient
    label = "Smallest class that also meets it" if enough else "Recommended"
    assert label in said and "Key figures" in said
    assert len(opening) <= 15, said
    # Said once: as a key figure, never again as a reason line.
    assert said.count("training memory") == 1 and "• memory:" not in said


def test_the_cpu_vendor_is_not_repeated_after_a_model_that_names_it() -> None:
    profile = _profile("cpu-only")
    profile.cpu.vendor = fact("AMD", Source.PROCFS)
    profile.cpu.model_name = fact("AMD EPYC 7B13", Source.PROCFS)
    assert "AMD EPYC 7B13 (AMD)" not in _summary(profile)
    profile.cpu.vendor = fact("ARM", Source.PROCFS)
    profile.cpu.model_name = fact("Neoverse-N1", Source.PROCFS)
    assert "Neoverse-N1 (ARM)" in _summary(profile)
