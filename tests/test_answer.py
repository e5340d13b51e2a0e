"""One coherent answer: the scenario is the class of hardware needed within the deadline, the
recommendation the cheapest option of that class with its price, and every output says the same
thing with the same numbers.

The property test runs every preset on the three report fixtures, three deadlines and five
assumed cards (and none), and checks the invariants of the answer and that the terminal, the
HTML report and the JSON carry the same time, memory and cost figures.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from hwadvisor.advise import advise, resolve_gpu
from hwadvisor.cli import main
from hwadvisor.model.advice import Advice
from hwadvisor.model.facts import Fact
from hwadvisor.model.load import load_profile, parse_profile
from hwadvisor.model.profile import Profile
from hwadvisor.present.answer import answer, cost_text, recommendation_text
from hwadvisor.render.console import render_advice, render_summary
from hwadvisor.render.html import render_html
from hwadvisor.render.jsonio import to_json
from hwadvisor.units import human_duration, money
from hwadvisor.workloads import custom_workload, get_workload, load_workloads
from tests.test_advise import _check_advice

REPORTS = Path(__file__).parent / "fixtures" / "reports"
FIXTURES = ("cpu-only", "single-gpu", "eight-gpu")
DEADLINES = (2.0, 24.0, 168.0)
CARDS = ("RTX 4090", "RTX 3060 12GB", "A100 80GB", "H100 PCIe", "L4")
_PROFILES: dict[str, Profile] = {}


def _profile(name: str) -> Profile:
    if name not in _PROFILES:
        _PROFILES[name] = load_profile(REPORTS / f"{name}.json")
    return _PROFILES[name].model_copy(deep=True)


def _terminal(advice: Advice, profile: Profile) -> str:
    out = io.StringIO()
    render_advice(advice, Console(file=out, width=80, color_system=None), profile=profile)
    return out.getvalue()


def _flat(text: str) -> str:
    """Text as one line: a wrapped figure is still found."""
    return re.sub(r"\s+", " ", text)


def _html(profile: Profile) -> str:
    import html

    return _flat(html.unescape(render_html(profile, source_sha256="0" * 64)))


# --------------------------------------------------------------------------------------------
# The property test over the grid


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("deadline", DEADLINES)
def test_the_answer_holds_over_the_grid(fixture: str, deadline: float) -> None:
    profile = _profile(fixture)
    for w in load_workloads():
        for card in (None, *CARDS):
            assume = [(resolve_gpu(card), 2 if card == "RTX 4090" else 1)] if card else []
            advice = advise(profile, w, deadline_hours=deadline, assume=assume)
            _check_advice(advice)
            assert advice.deadline_hours == deadline
            if assume:
                (verdict,) = advice.assumed
                row = next(e for e in advice.estimates if e.origin == "assumed")
                assert verdict.sufficient == bool(row.meets_scenario)
                assert "(assumed)" in row.hardware


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("workload", [w.name for w in load_workloads()])
def test_every_output_carries_the_same_figures(fixture: str, workload: str) -> None:
    """Time, memory and cost of the recommendation and of this machine: the same number in the
    terminal, the HTML report and the JSON (all rendered from the one answer)."""
    profile = _profile(fixture)
    advice = advise(profile, get_workload(workload), assume=[(resolve_gpu("RTX 4090"), 2)])
    profile.advice = advice
    term, page = _flat(_terminal(advice, profile)), _html(profile)
    data = json.loads(to_json(profile))["advice"]
    rec = advice.recommendation
    assert rec is not None
    assert data["recommendation"]["seconds"] == rec.seconds
    assert data["recommendation"]["purchase_cost"] == rec.purchase_cost
    figures = [human_duration(rec.seconds), recommendation_text(advice)]
    if rec.purchase_cost is not None:
        figures.append(money(rec.purchase_cost, advice.currency))
    if rec.hourly_cost is not None:
        figures.append(f"{money(rec.hourly_cost, advice.currency)}/h")
    if rec.run_cost is not None:
        figures.append(money(rec.run_cost, advice.currency))
    me = advice.this_machine
    if me.seconds is not None:
        figures.append(human_duration(me.seconds))
    memory = next(f for f in advice.key_figures if f.label.startswith("training memory"))
    figures.append(memory.text)
    for figure in figures:
        assert _flat(figure) in term, figure
        assert _flat(figure) in page, figure
    for e in data["estimates"]:
        assert e["scenario_class"] in (1, 2, 3, 4)


# --------------------------------------------------------------------------------------------
# What the answer says


def test_the_scenario_names_the_class_below_and_what_it_failed() -> None:
    advice = advise(_profile("cpu-only"), get_workload("resnet50-imagenet"))
    assert advice.scenario.id == 2 and advice.scenario.title == "One GPU"
    below = advice.class_below
    assert below is not None and below.scenario_class == 1 and below.failed == "deadline"
    assert advice.scenario.because.startswith("The fastest CPU that holds it")
    assert "over your 24 h" in advice.scenario.because
    # A user who can wait a little longer is told what that buys.
    assert advice.if_you_can_wait is not None
    assert "24 GB high-end GPU (RTX 4090 class)" in advice.if_you_can_wait
    assert any(w.startswith("A deadline of ") for w in advice.what_ifs)


def test_a_one_node_job_is_not_called_a_cluster() -> None:
    """A 7B model pre-trained within a week: one 8-GPU machine, scenario 3."""
    week = advise(_profile("cpu-only"), get_workload("llm-7b-pretrain"), deadline_hours=24 * 200)
    assert week.scenario.id == 3
    assert week.recommendation is not None and week.recommendation.gpus <= 8
    day = advise(_profile("cpu-only"), get_workload("llm-7b-pretrain"))
    assert day.scenario.id == 4 and day.scale_out is not None
    assert day.recommendation is not None and day.recommendation.origin == "scale-out"
    assert day.recommendation.nodes == day.scale_out.nodes > 1


def test_a_shorter_deadline_never_needs_a_smaller_class() -> None:
    profile = _profile("single-gpu")
    for w in load_workloads():
        classes = [
            advise(profile, w, deadline_hours=h).scenario.id for h in (24 * 30, 168, 24, 2, 0.25)
        ]
        assert classes == sorted(classes), (w.name, classes)


def test_a_cpu_within_the_deadline_is_not_enough_where_a_gpu_is_far_faster() -> None:
    """A conv net of a few CPU-hours: a desktop CPU meets a 24 h deadline, but one GPU is over
    10× faster: scenario 2, and a CPU-only machine is not called enough."""
    w = custom_workload(
        parameters=25_000_000,
        flops_per_sample=2.5e10,
        samples=200_000,
        epochs=3,
        precision="fp16",
        activation_bytes_per_sample=2e7,
    )
    advice = advise(_profile("cpu-only"), w)
    _check_advice(advice)
    cpu = next(e for e in advice.estimates if e.hardware == "8-core desktop CPU")
    assert cpu.seconds is not None and 3600 < cpu.seconds < 24 * 3600
    assert advice.scenario.id == 2 and advice.scenario.rule == "gpu-far-faster"
    assert not advice.this_machine.sufficient
    assert advice.class_below is not None and advice.class_below.failed == "gpu-far-faster"
    assert "faster" in advice.scenario.because and "within your 24 h" in advice.scenario.because
    # The same job shortened under an hour on the CPU stays on the CPU.
    quick = custom_workload(
        parameters=25_000_000,
        flops_per_sample=2.5e10,
        samples=2_000,
        epochs=3,
        precision="fp16",
        activation_bytes_per_sample=2e7,
    )
    assert advise(_profile("cpu-only"), quick).scenario.id == 1


def test_a_big_server_without_memory_in_its_profile_is_enough_for_small_work() -> None:
    """An imported 8× A100-40GB whose profile lacks GPU memory: the catalog gives it (said so),
    and a small CNN is not "not enough" on it, nor is a desktop CPU recommended to it."""
    profile = _profile("eight-gpu")
    for gpu in profile.gpus:
        gpu.vram_total_bytes = Fact[int](value=None, source=None, reason="not in this output")
    advice = advise(profile, get_workload("small-cnn"))
    _check_advice(advice)
    assert advice.this_machine.verdict == "enough"
    row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert row.memory_from_catalog and row.fits_memory is True
    assert any("GPU memory from the catalog" in c for c in advice.caveats)
    assert advice.recommendation is not None
    assert answer(advice).recommendation_label == "Smallest class that also meets it"


def test_unknown_ram_makes_the_verdict_not_confirmed_never_not_enough() -> None:
    profile = _profile("cpu-only")
    profile.memory.total_bytes = Fact[int](value=None, source=None, reason="not reported")
    profile.memory.cgroup_limit_bytes = Fact[int](value=None, source=None, reason="not reported")
    advice = advise(profile, get_workload("tabular"))
    assert advice.this_machine.verdict == "not confirmed"
    assert not advice.this_machine.sufficient
    assert advice.this_machine.checks and "check that it has" in advice.this_machine.checks[0]
    assert answer(advice).verdict.startswith("This machine is not confirmed to be enough")
    out = io.StringIO()
    render_advice(advice, Console(file=out, width=80, color_system=None))
    assert "not enough" not in out.getvalue().split("\n")[0]


def test_the_assumed_machine_is_in_the_headline_and_marked_assumed() -> None:
    profile = _profile("cpu-only")
    advice = advise(profile, get_workload("llm-7b-lora"), assume=[(resolve_gpu("RTX 4090"), 2)])
    (verdict,) = advice.assumed
    assert verdict.hardware == "2× GeForce RTX 4090 (assumed)" and verdict.sufficient
    assert verdict.scenario_class == 3
    lines = _terminal(advice, profile).splitlines()
    assert lines[0].startswith("With 2× GeForce RTX 4090 (assumed): enough — about")
    assert any("2× GeForce RTX 4090 (assumed): from the GPU catalog" in c for c in advice.caveats)
    profile.advice = advice
    assert "With 2× GeForce RTX 4090 (assumed): enough" in _html(profile)


def test_an_ambiguous_card_is_taken_as_one_and_said_so() -> None:
    advice = advise(
        _profile("cpu-only"), get_workload("llm-7b-lora"), assume=[(resolve_gpu("H100"), 1)]
    )
    (verdict,) = advice.assumed
    assert verdict.hardware == "H100 SXM (assumed)"
    assert verdict.note and "H100 PCIe" in verdict.note
    assert "H100 PCIe" in answer(advice).assumed[0]


def test_the_recommendation_has_a_price_with_its_date_and_rounded_costs() -> None:
    advice = advise(_profile("cpu-only"), get_workload("bert-base-finetune"))
    text = cost_text(advice)
    assert text is not None
    assert re.search(r"buy \$[\d,]+ or rent \$[\d.]+/h", text)
    assert "prices from 20" in text
    assert " $0 " not in text and "$0," not in text
    assert money(0.27) == "$0.27" and money(0.001) == "under $0.01" and money(38_123) == "$38,100"


def test_the_terminal_ends_with_the_verdict_in_one_line() -> None:
    profile = _profile("cpu-only")
    advice = advise(profile, get_workload("resnet50-imagenet"))
    last = _flat(_terminal(advice, profile).strip().splitlines()[-3:][-1])
    text = _flat(" ".join(_terminal(advice, profile).strip().splitlines()[-3:]))
    assert "Answer: this machine is not enough for resnet50-imagenet within 24 h" in text
    assert last.endswith("to rent.")


def test_what_would_change_the_answer_changes_it() -> None:
    """Each "a deadline of …" line is true: at that deadline the recommendation changes."""
    profile = _profile("cpu-only")
    for w in load_workloads():
        advice = advise(profile, w)
        for line in advice.what_ifs:
            found = re.match(
                r"A deadline of ([\d.,]+ (?:s|min|h|days)) or more: (.+?) would do", line
            )
            if not found:
                continue
            rec = advice.recommendation
            assert rec is not None
            assert found.group(2) != rec.hardware
            # The option named does meet that longer deadline.
            named = next(e for e in advice.estimates if e.hardware == found.group(2))
            assert named.seconds is not None and named.fits_memory is True


def test_an_old_profile_with_old_advice_still_reads_and_renders() -> None:
    """Schema-4 report fixtures carry the advice of the time-budget scenarios: they load, the
    recommendation is the first rung that met the old limit, and the report renders."""
    profile = load_profile(
        Path(__file__).parent / "fixtures" / "profiles" / "v4-single-gpu-old-advice.json"
    )
    advice = profile.advice
    assert advice is not None and advice.recommendation is not None
    assert advice.this_machine.verdict in ("enough", "not enough")
    assert all(e.scenario_class for e in advice.estimates)
    assert "Is this machine enough?" in _html(profile)
    again = parse_profile(to_json(profile))
    assert again.advice == advice


# --------------------------------------------------------------------------------------------
# The command line


def test_an_unknown_card_exits_2_naming_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    profile = REPORTS / "cpu-only.json"
    code = main(["advise", "-p", str(profile), "-w", "tabular", "--assume-gpu", "RTX 4090 Ti"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown GPU 'RTX 4090 Ti'" in err and "GeForce RTX 4090" in err
    assert "hwadvisor gpus" in err


def test_gpus_lists_the_catalog_with_prices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "4090"]) == 0
    out = capsys.readouterr().out
    assert "GeForce RTX 4090" in out and "$" in out
    assert main(["gpus", "4090", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"GeForce RTX 4090", "GeForce RTX 4090 D"}
    assert any(r["price"] for r in rows)
    assert {r["sold_in"] for r in rows if r["price"]} == {1}
    assert main(["gpus", "no-such-card"]) == 2


def test_gpus_says_a_card_sold_only_several_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "mi300x", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["price"], row["sold_in"]) == (15000.0, 8)
    assert main(["gpus", "mi300x"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "$15,000 ×8" in out and "×8: sold only 8 at a time" in out


@pytest.mark.parametrize(
    ("given", "hours"), [("8h", 8.0), ("36", 36.0), ("3d", 72.0), ("2w", 336.0)]
)
def test_the_deadline_as_people_type_it(
    given: str, hours: float, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = REPORTS / "cpu-only.json"
    code = main(
        [
            "advise",
            "-p",
            str(profile),
            "-w",
            "resnet50-imagenet",
            "--deadline",
            given,
            "--json",
            "-",
        ]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["deadline_hours"] == hours


@pytest.mark.parametrize("given", ["soon", "0", "-3h", "11y"])
def test_a_bad_deadline_is_a_usage_error(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["advise", "-p", str(REPORTS / "cpu-only.json"), "-w", "tabular", "--deadline", given]
    )
    assert code == 2
    assert "--deadline" in capsys.readouterr().err


def test_advise_without_a_profile_uses_the_newest_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    old = _profile("cpu-only")
    new = _profile("single-gpu")
    new.created_utc = "2026-11-27T10:00:00Z"
    old.created_utc = "2026-11-20T10:00:00Z"
    new.imported = None
    old.imported = None
    (tmp_path / "reports" / "a-new.json").write_text(to_json(new), encoding="utf-8")
    (tmp_path / "reports" / "b-old.json").write_text(to_json(old), encoding="utf-8")
    (tmp_path / "reports" / "c-junk.json").write_text("{not json", encoding="utf-8")
    assert main(["advise", "-w", "llm-7b-lora"]) == 0
    captured = capsys.readouterr()
    assert "Using reports/a-new.json (the newest profile in reports)" in captured.err
    assert "GeForce RTX 3080" in captured.out


def test_scan_without_a_workload_ends_with_each_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import hwadvisor.pipeline as pipeline

    scanned = _profile("single-gpu")
    scanned.advice = None
    monkeypatch.setattr(pipeline, "run_scan", lambda *a, **k: scanned)
    code = main(["scan", "-o", str(tmp_path), "-f", "json", "--deadline", "3d"])
    assert code in (0, 3)
    out = capsys.readouterr().out
    assert "Is this machine enough? Each preset within 3 days" in out
    for w in load_workloads():
        assert w.name in out
    assert "No workload given" not in out


def test_the_summary_without_advice_shows_the_presets() -> None:
    profile = _profile("cpu-only")
    profile.advice = None
    presets = [advise(profile, w) for w in load_workloads()]
    out = io.StringIO()
    render_summary(profile, Console(file=out, width=80, color_system=None), presets)
    text = out.getvalue()
    assert "Each preset within 24 h" in text
    assert "tabular" in text and "enough" in text


def test_money_never_fails_on_what_a_file_can_hold() -> None:
    # hypothesis found these in hand-edited profiles: an estimate's purchase_cost of inf or 1.8e308
    from hwadvisor.units import NONE, money

    assert money(float("inf")) == NONE and money(float("nan")) == NONE
    assert money(1.795e308) == "$1.79e+308"
    assert money(1e15) == "$1.00e+15" and money(312_000) == "$312,000"
    for exponent in range(-3, 309):
        assert money(10.0**exponent)  # some text, no exception
