"""The HTML report: deterministic, escaped, self-contained, and overridable by a template dir."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwadvisor.model.facts import Source, fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import GpuInfo, Profile
from hwadvisor.render.charts import crossover_chart, throughput_chart, time_to_train_chart
from hwadvisor.render.html import render_html
from hwadvisor.units import money

REPORTS = Path(__file__).parent / "fixtures" / "reports"
SHA = "0123456789abcdef" * 4
HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "{{ 7*7 }}"]


def _load(name: str) -> Profile:
    return load_profile(REPORTS / f"{name}.json")


def _page_one(html: str) -> str:
    start = html.index('<section class="page-one">')
    return html[start : html.index("</section>", start)]


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {
        name: render_html(_load(name), source_sha256=SHA)
        for name in ("cpu-only", "single-gpu", "eight-gpu")
    }


@pytest.mark.parametrize("name", ["cpu-only", "single-gpu", "eight-gpu"])
def test_same_profile_same_html(name: str, rendered: dict[str, str]) -> None:
    again = render_html(_load(name), source_sha256=SHA)
    assert again == rendered[name]


def test_page_one_has_the_verdict(rendered: dict[str, str]) -> None:
    one = _page_one(rendered["single-gpu"])
    advice = _load("single-gpu").advice
    assert advice is not None
    assert f"Needs: scenario {advice.scenario.id} of 4 ({advice.scenario.title})" in one
    assert f"({advice.scenario.confidence} confidence)" in one
    # An RTX 3080 needs about 2.5 days for ResNet-50: over the default deadline of a day.
    assert not advice.this_machine.sufficient
    assert "This machine is not enough for resnet50-imagenet within 24 h." in one
    assert "Recommended: <strong>" in one
    assert "Smallest class that also meets it" not in one
    rec = advice.recommendation
    assert rec is not None and rec.purchase_cost is not None
    assert f"Cost: buy {money(rec.purchase_cost)}" in one
    assert "GPU matrix multiply (bf16)" in one
    assert "training step, GPU vs CPU" in one
    assert "Training memory here" in one  # a headline figure, not a repeated table row
    # Needed is at the preset's batch, more than the card holds: the tile says how it fits.
    mine = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert mine.memory_needed_bytes and mine.memory_available_bytes
    assert mine.memory_needed_bytes > mine.memory_available_bytes
    assert mine.plan_batch and f"(at batch {mine.plan_batch} ×{mine.plan_accumulation})" in one
    html = rendered["single-gpu"]
    # The details follow page one: the estimates table and its chart.
    assert "Time to train and cost, here and on each option" in html.split("</section>", 1)[1]
    assert "data:image/svg+xml;base64," in html


def test_page_one_without_a_workload() -> None:
    profile = _load("single-gpu")
    profile.advice = None
    one = _page_one(render_html(profile, source_sha256=SHA))
    assert "No workload given." in one
    assert "Machine summary" in one and "NVIDIA GeForce RTX 3080" in one
    assert "GPU matrix multiply (bf16)" in one and "training step, GPU vs CPU" in one


def test_cost_line_in_the_currency_of_the_prices(tmp_path: Path) -> None:
    from hwadvisor.advise import advise, load_prices
    from hwadvisor.workloads import get_workload

    path = tmp_path / "prices.toml"
    path.write_text(
        'currency = "EUR"\n[[price]]\nhardware = "single_gpu"\npurchase = 2000\nhourly = 0.8\n',
        encoding="utf-8",
    )
    profile = _load("single-gpu")
    profile.advice = advise(profile, get_workload("llm-7b-lora"), prices=load_prices(path))
    one = _page_one(render_html(profile, source_sha256=SHA))
    assert "Cost: buy €2,000 or rent €0.80/h" in one


def test_hostile_strings_are_escaped() -> None:
    profile = _load("single-gpu")
    script, attr, template = HOSTILE
    profile.host.hostname = fact(script, Source.OS)
    profile.cpu.model_name = fact(attr, Source.CPUINFO)
    profile.gpus[0].name = fact(template, Source.NVML)
    html = render_html(profile, source_sha256=SHA)
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "onerror=alert(2)>" not in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "{{ 7*7 }}" in html  # data is never evaluated as a template


def test_no_external_urls(rendered: dict[str, str]) -> None:
    for html in rendered.values():
        sources = re.findall(r'(?:src|href)="([^"]*)"', html)
        assert sources and all(s.startswith("data:image/svg+xml;base64,") for s in sources)
        text = re.sub(r"data:image/svg\+xml;base64,[A-Za-z0-9+/=]+", "", html)
        assert not re.search(r"https?:|file:|url\(", text)


def test_paper_size_and_print_rules(rendered: dict[str, str]) -> None:
    html = rendered["cpu-only"]
    assert "size: A4;" in html
    assert 'counter(page) " of " counter(pages)' in html
    assert "tr { break-inside: avoid; }" in html
    assert "thead { display: table-header-group; }" in html
    letter = render_html(_load("cpu-only"), source_sha256=SHA, paper="Letter")
    assert "size: Letter;" in letter
    with pytest.raises(ValueError, match="paper"):
        render_html(_load("cpu-only"), source_sha256=SHA, paper="A4; } body { x")


def test_custom_template_dir_overrides_header(tmp_path: Path) -> None:
    base = (Path(__file__).parent.parent / "templates" / "base.html.j2").read_text()
    custom = base.replace(
        '<div class="brand">hwadvisor</div>', '<div class="brand">ACME Research IT</div>'
    )
    assert custom != base
    (tmp_path / "base.html.j2").write_text(custom)
    (tmp_path / "report.css").write_text(".brand { color: #aa0000; }\n")
    html = render_html(_load("cpu-only"), source_sha256=SHA, template_dir=tmp_path)
    assert "ACME Research IT" in html
    assert ".brand { color: #aa0000; }" in html
    assert "#2b6cb0" not in html.split("</style>")[0]  # the bundled CSS was replaced


def test_no_gpu_charts_say_why(rendered: dict[str, str]) -> None:
    profile = _load("cpu-only")
    assert throughput_chart(profile.benchmarks).why_not == "no GPU: nothing to compare"
    assert crossover_chart(profile.benchmarks).svg_data_uri is None
    assert "No chart: no GPU: nothing to compare." in rendered["cpu-only"]
    assert time_to_train_chart(None).why_not == "no workload given"


def test_eight_gpus_all_rendered(rendered: dict[str, str]) -> None:
    html = rendered["eight-gpu"]
    profile = _load("eight-gpu")
    assert len(profile.gpus) == 8
    gpus = html[html.index('<table class="gpus">') :]
    gpus = gpus[: gpus.index("</table>")]
    # Eight identical GPUs are one row, not eight.
    assert gpus.count("NVIDIA A100-SXM4-40GB") == 1
    assert "8 × NVIDIA A100-SXM4-40GB" in gpus and "0–7" in gpus
    # Eight identical GPUs: each case is one row, the median GPU, with the range across GPUs.
    assert "cuda:0-7" in html
    assert "8 of 8 GPUs; best from" in html
    assert html.count("data:image/svg+xml;base64,") == 4


def test_lost_gpu_and_sha_in_appendix() -> None:
    profile = _load("single-gpu")
    profile.gpus.append(GpuInfo(index=1, vendor="nvidia", backend="cuda", lost=True))
    html = render_html(profile, source_sha256=SHA)
    assert "GPU lost (fell off the bus)" in html
    assert SHA in html and "schema version" in html


def test_schema_1_profile_renders() -> None:
    profile = load_profile(Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json")
    html = render_html(profile, source_sha256=SHA)
    assert "No workload given." in html
    assert "The scan ran without benchmarks." in html
    assert "No chart: no benchmarks in this profile." in html


def _busy(disturbance: str) -> Profile:
    from hwadvisor.advise import advise
    from hwadvisor.model.bench import Confidence, CpuLoad, Disturbance
    from hwadvisor.workloads import get_workload

    profile = _load("cpu-only")
    assert profile.benchmarks is not None
    profile.benchmarks.load = CpuLoad(cpus=2, usable_cpus=2, other_cpus_before=1.0)
    for m in profile.benchmarks.measurements:
        m.disturbances = [Disturbance(disturbance)]
        m.confidence = Confidence.HIGH
        m.threads = 1
        m.disturbance_note = "measured with 1 of 2 threads"
    # As a scan would: the advice made from those figures.
    profile.advice = advise(profile, get_workload("resnet50-imagenet"))
    return profile


def test_page_one_says_the_machine_was_busy_and_how_to_rescan() -> None:
    html = render_html(_busy("fewer_threads"), source_sha256=SHA)
    one = _page_one(html)
    assert "The machine was busy" in one
    assert "other processes kept 1.0 of 2 CPUs busy" in one
    assert "(measured with 1 of 2 threads)" in one
    assert "scale the figures from the free cores" in one
    assert "counted as" in one  # the key figure says what the estimate used
    assert "scan again" in one
    assert "scaled to all CPUs by the advice: measured with 1 of 2 threads" in html


def test_page_one_says_contended_figures_are_not_used() -> None:
    html = render_html(_busy("cpu_contended"), source_sha256=SHA)
    one = _page_one(html)
    assert "The machine was busy" in one
    assert "shown but not used" in one
    assert "not used by the advice: measured with 1 of 2 threads" in html


def test_an_idle_machine_has_no_busy_warning(rendered: dict[str, str]) -> None:
    for html in rendered.values():
        assert "The machine was busy" not in html


def test_the_estimates_say_how_the_workload_fits_memory() -> None:
    from hwadvisor.advise import advise, resolve_gpu
    from hwadvisor.workloads import get_workload

    profile = _load("cpu-only")
    profile.advice = advise(
        profile, get_workload("resnet50-imagenet"), assume=[(resolve_gpu("RTX 4060"), 1)]
    )
    one = render_html(profile, source_sha256=SHA)
    # An 8 GB card holds ResNet-50 at a smaller batch with gradient accumulation.
    assert re.search(r"yes <span class=\"muted\">\(at batch \d+ ×\d+\)</span>", one)
