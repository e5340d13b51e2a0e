"""The advice uses only figures it can trust, and each GPU's own figures.

A measurement taken on a busy machine (fewer threads, contended cores), on a disturbed GPU
(other processes, throttling, a MIG slice) or with inconsistent blocks never calibrates the
estimate for this machine: the estimate falls back to the catalog/formula and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hwadvisor.advise import advise, bench_device
from hwadvisor.importers.detect import import_file
from hwadvisor.model.bench import (
    BenchDevice,
    Benchmarks,
    Confidence,
    Disturbance,
    Measurement,
)
from hwadvisor.model.facts import Fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import Profile
from hwadvisor.workloads import get_workload

FIXTURES = Path(__file__).parent / "fixtures"
V1 = FIXTURES / "profiles" / "v1-cpu-only.json"
SINGLE_GPU = FIXTURES / "reports" / "single-gpu.json"


def _cpu_profile(
    *disturbances: Disturbance,
    confidence: Confidence = Confidence.HIGH,
    usable: int = 2,
    threads: int = 1,
) -> Profile:
    profile = import_file(V1)
    profile.cpu.usable_cpus = Fact(value=usable, source="derived")
    common = {
        "device": "cpu",
        "confidence": confidence,
        "disturbances": list(disturbances),
        "threads": threads,
    }
    profile.benchmarks = Benchmarks(
        measurements=[
            Measurement(case="matmul", precision="fp32", unit="GFLOP/s", best=60.0, **common),
            Measurement(
                case="train_step",
                precision="fp32",
                unit="samples/s",
                best=30.0,
                params={"train_gflops_per_s": 40.0},
                **common,
            ),
        ]
    )
    return profile


def _no_bench() -> Profile:
    profile = import_file(V1)
    profile.cpu.usable_cpus = Fact(value=2, source="derived")
    profile.benchmarks = Benchmarks()
    return profile


def test_trusted_cpu_figures_calibrate_this_machine() -> None:
    mine = advise(_cpu_profile(), get_workload("resnet50-imagenet")).estimates[0]
    assert mine.calibrated
    assert "measured fp32 matmul" in mine.basis


def test_a_clean_figure_on_the_free_cores_is_scaled_to_the_usable_cpus() -> None:
    # Another process held one of two CPUs; the case ran on the free one, undisturbed.
    w = get_workload("resnet50-imagenet")
    busy = advise(_cpu_profile(Disturbance.FEWER_THREADS, threads=1), w)
    idle = advise(_cpu_profile(threads=2), w)
    mine = busy.estimates[0]
    assert mine.calibrated
    assert "measured on 1 of 2 CPUs" in mine.basis and "scaled to 2" in mine.basis
    # 60 GFLOP/s on one thread stands for 120 on two: half the idle estimate's time.
    assert idle.estimates[0].seconds is not None and mine.seconds is not None
    assert abs(mine.seconds * 2 / idle.estimates[0].seconds - 1) < 0.05  # 2 significant digits


def test_a_figure_from_few_of_many_cpus_is_not_extrapolated() -> None:
    w = get_workload("resnet50-imagenet")
    mine = advise(_cpu_profile(Disturbance.FEWER_THREADS, usable=16, threads=2), w).estimates[0]
    assert not mine.calibrated
    assert "set aside (fewer threads)" in mine.basis
    assert "idle machine" in mine.basis
    # The same estimate as with no measurement at all: the formula, not the figure.
    formula = advise(_no_bench(), w).estimates[0]
    assert mine.seconds == formula.seconds


def test_contended_and_low_confidence_figures_are_set_aside_too() -> None:
    w = get_workload("small-cnn")
    contended = advise(_cpu_profile(Disturbance.CPU_CONTENDED), w).estimates[0]
    assert not contended.calibrated and "cpu contended" in contended.basis
    noisy = advise(_cpu_profile(confidence=Confidence.LOW), w).estimates[0]
    assert not noisy.calibrated and "runs disagreed too much" in noisy.basis
    noisy_fewer = _cpu_profile(Disturbance.FEWER_THREADS, confidence=Confidence.LOW)
    assert not advise(noisy_fewer, w).estimates[0].calibrated


def test_a_busy_scan_no_longer_claims_years_for_this_machine() -> None:
    # The collapsed figure of issue 8 (1.6 GFLOP/s, flagged) must not reach the estimate.
    w = get_workload("resnet50-imagenet")
    collapsed = _cpu_profile(Disturbance.CPU_CONTENDED)
    assert collapsed.benchmarks is not None
    for m in collapsed.benchmarks.measurements:
        m.best = 1.6
        m.params = {"train_gflops_per_s": 1.6} if m.case == "train_step" else {}
    busy = advise(collapsed, w).estimates[0]
    formula = advise(_no_bench(), w).estimates[0]
    assert busy.seconds == formula.seconds


# --------------------------------------------------------------------------------------------
# GPUs: each GPU's own figures, matched by UUID


def _two_gpus() -> Profile:
    """The RTX 3080 profile with a second, different GPU; torch numbers them the other way."""
    profile = load_profile(SINGLE_GPU)
    first = profile.gpus[0]
    second = first.model_copy(deep=True)
    second.index = 1
    second.name = Fact(value="NVIDIA A100-SXM4-80GB", source="nvml")
    second.uuid = Fact(value="GPU-aaaaaaaa-0000-0000-0000-000000000001", source="nvml")
    second.pci_bus_id = Fact(value="00000000:81:00.0", source="nvml")
    second.vram_total_bytes = Fact(value=80 * 1024**3, source="nvml")
    profile.gpus.append(second)
    assert profile.benchmarks is not None
    bench = profile.benchmarks
    bench.devices = [
        BenchDevice(device="cuda:0", name=second.name.value, uuid=second.uuid.value),
        BenchDevice(device="cuda:1", name=first.name.value, uuid=first.uuid.value),
    ]
    cuda0 = [m for m in bench.measurements if m.device == "cuda:0"]
    # cuda:0 is the A100 now, measured poorly; the RTX 3080 (NVML's first) is cuda:1, measured
    # at the usual 80 % of its peak.
    for m in cuda0:
        m.efficiency = 0.2 if m.efficiency else None
    bench.measurements += [
        m.model_copy(update={"device": "cuda:1", "efficiency": 0.8})
        for m in cuda0
        if m.case == "matmul"
    ]
    return profile


def test_gpu_figures_are_matched_by_uuid_not_by_position() -> None:
    profile = _two_gpus()
    assert bench_device(profile, profile.gpus[0]) == "cuda:1"
    assert bench_device(profile, profile.gpus[1]) == "cuda:0"
    advice = advise(profile, get_workload("resnet50-imagenet"))
    gpu_row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    # The first GPU's own measurement (80 %): no derating borrowed from the other card's 20 %.
    assert "at 80% of peak" in gpu_row.basis
    assert "derated" not in gpu_row.basis


def test_a_disturbed_gpu_figure_is_set_aside() -> None:
    profile = load_profile(SINGLE_GPU)
    assert profile.benchmarks is not None
    for m in profile.benchmarks.measurements:
        if m.device == "cuda:0":
            m.disturbances = [Disturbance.GPU_BUSY]
            m.efficiency = 0.2
    advice = advise(profile, get_workload("resnet50-imagenet"))
    gpu_row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert not gpu_row.calibrated
    assert "set aside (gpu busy)" in gpu_row.basis
    assert "derated" not in gpu_row.basis


def test_an_unmatched_gpu_on_a_many_gpu_machine_borrows_no_figure() -> None:
    profile = _two_gpus()
    assert profile.benchmarks is not None
    profile.benchmarks.devices = []  # an older profile: no identities recorded
    assert bench_device(profile, profile.gpus[0]) is None
    advice = advise(profile, get_workload("resnet50-imagenet"))
    gpu_row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert "cannot be matched" in gpu_row.basis


def test_an_emulated_low_precision_is_not_the_cpus_training_rate() -> None:
    # A bf16 workload on a CPU without native bf16: the 2 GFLOP/s emulated figure would claim
    # decades; training there runs in fp32.
    profile = _cpu_profile(threads=2)
    assert profile.benchmarks is not None
    profile.benchmarks.measurements.append(
        Measurement(
            case="matmul",
            device="cpu",
            precision="bf16",
            unit="GFLOP/s",
            best=2.0,
            threads=2,
            settings={"native": "no (CPU flags)"},
        )
    )
    w = get_workload("bert-base-finetune")
    assert w.precision in ("bf16", "fp16")
    mine = advise(profile, w).estimates[0]
    assert mine.calibrated
    assert "measured fp32 matmul 60 GFLOP/s" in mine.basis


# --------------------------------------------------------------------------------------------
# Consistent verdicts


def test_imported_gpus_take_their_memory_from_the_catalog() -> None:
    from hwadvisor.model.facts import Source

    path = FIXTURES / "import" / "collect_env-linux-cuda-4x-a100-sxm4-80gb.txt"
    profile = import_file(path)
    assert profile.gpus
    for gpu in profile.gpus:
        assert gpu.vram_total_bytes.value == 80 * 1024**3
        assert gpu.vram_total_bytes.source == Source.CATALOG
    advice = advise(profile, get_workload("resnet50-imagenet"))
    assert advice.this_machine.fits_memory is True
    assert not any("memory is unknown" in r for r in advice.this_machine.reasons)


def test_a_known_card_without_its_memory_takes_the_catalogs_and_says_so() -> None:
    profile = import_file(FIXTURES / "import" / "collect_env-linux-cuda-4x-a100-sxm4-80gb.txt")
    for gpu in profile.gpus:
        gpu.vram_total_bytes = Fact(value=None, source="derived", reason="not in the paste")
    advice = advise(profile, get_workload("resnet50-imagenet"))
    assert advice.this_machine.fits_memory is True
    assert advice.this_machine.sufficient and advice.this_machine.verdict == "enough"
    assert any("GPU memory from the catalog (80 GB per A100" in c for c in advice.caveats)


def test_an_unknown_card_without_memory_is_not_confirmed_never_not_enough() -> None:
    profile = import_file(FIXTURES / "import" / "collect_env-linux-cuda-4x-a100-sxm4-80gb.txt")
    for gpu in profile.gpus:
        gpu.vram_total_bytes = Fact(value=None, source="derived", reason="not in the paste")
        gpu.name = Fact(value="NVIDIA Mystery 9000", source="derived")
    # Neither the card nor (in this paste) the CPU's clock is known: nothing can be estimated
    # here, and the verdict says what to check instead of "not enough".
    for name in ("small-cnn", "resnet50-imagenet"):
        advice = advise(profile, get_workload(name))
        assert advice.this_machine.verdict == "not confirmed"
        assert any(
            "'NVIDIA Mystery 9000' is not in the GPU catalog" in c
            for c in advice.this_machine.checks
        )
        row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
        assert row.seconds is None


def test_a_cpu_that_meets_the_deadline_is_enough_where_no_gpu_is_far_faster() -> None:
    # A (fictitious) CPU fast enough to finish ResNet-50 in a few hours: faster than the
    # cheapest GPU that holds it, so no GPU is 10× faster and the CPU is enough.
    profile = _cpu_profile(threads=2)
    assert profile.benchmarks is not None
    for m in profile.benchmarks.measurements:
        m.best = 2e5
        if m.case == "train_step":
            m.params = {"train_gflops_per_s": 2e5}
    advice = advise(profile, get_workload("resnet50-imagenet"))
    mine = advice.estimates[0]
    assert mine.seconds is not None and 3600 < mine.seconds < 24 * 3600
    assert advice.scenario.id == 1 and advice.this_machine.sufficient
    assert advise(profile, get_workload("small-cnn")).this_machine.sufficient


# --------------------------------------------------------------------------------------------
# Scenario 4: how many nodes


def test_scenario_4_says_how_many_nodes_meet_it_and_at_what_cost() -> None:
    from hwadvisor.advise import load_prices

    w = get_workload("llm-7b-pretrain")
    prices = load_prices(Path(__file__).parents[1] / "docs" / "prices-example.toml")
    advice = advise(_no_bench(), w, prices=prices)
    assert advice.scenario.id == 4
    out = advice.scale_out
    assert out is not None and out.nodes >= 2 and out.gpus == 8 * out.nodes
    assert out.seconds is not None and out.seconds <= advice.this_machine.limit_hours * 3600
    assert out.fits_memory is True
    assert f"{out.gpus:,} × H100 SXM ({out.nodes:,} nodes of 8)" in out.summary
    assert out.hourly_cost == pytest.approx(25.0 * out.nodes)  # the example's own instance
    assert out.run_cost == pytest.approx(out.hourly_cost * out.seconds / 3600, rel=1e-3)
    assert out.purchase_cost is not None
    rec = advice.recommendation
    assert rec is not None and rec.origin == "scale-out" and rec.nodes == out.nodes
    assert rec.hourly_cost == out.hourly_cost
    # The fewest nodes: one node fewer does not meet the limit.
    from dataclasses import replace

    from hwadvisor.advise import candidate_rate, load_rules

    rules = load_rules()
    node = next(c for c in rules.candidates if c.role == "node")
    short = candidate_rate(w, replace(node, gpus=8 * (out.nodes - 1)), rules)
    assert short.estimate is not None
    assert short.estimate.seconds > advice.this_machine.limit_hours * 3600


def test_a_smaller_limit_needs_more_nodes_and_no_answer_past_the_cap() -> None:
    from hwadvisor.advise import load_rules, scale_out

    w = get_workload("llm-7b-pretrain")
    rules = load_rules()
    month = scale_out(w, rules, 30 * 24)
    week = scale_out(w, rules, 7 * 24)
    assert month is not None and week is not None and week.nodes > month.nodes
    never = scale_out(w, rules, 1e-6)
    assert never is not None and never.summary.startswith("not even")


def test_workloads_below_scenario_4_have_no_scale_out() -> None:
    advice = advise(_no_bench(), get_workload("resnet50-imagenet"))
    assert advice.scenario.id < 4 and advice.scale_out is None


# --------------------------------------------------------------------------------------------
# Nonsense numbers are set aside in one line, never "0 s", "fits" or an internal error


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda p: setattr(p.gpus[0], "vram_total_bytes", Fact(value=-5, source="nvml")),
            "GPU memory",
        ),
        (
            lambda p: setattr(p.gpus[0], "vram_total_bytes", Fact(value=10**31, source="nvml")),
            "GPU memory",
        ),
        (lambda p: setattr(p.cpu, "usable_cpus", Fact(value=10**27, source="cgroup")), "CPU count"),
        (
            lambda p: setattr(p.memory, "total_bytes", Fact(value=0, source="psutil")),
            "memory figure",
        ),
    ],
)
def test_absurd_facts_are_set_aside(edit: Any, said: str) -> None:
    profile = load_profile(SINGLE_GPU)
    edit(profile)
    advice = advise(profile, get_workload("llm-7b-lora"))
    lines = [r for r in advice.this_machine.reasons if "implausible" in r]
    assert len(lines) == 1 and said in lines[0]
    assert advice.this_machine.fits_memory is not True or "GPU memory" not in said
    for e in advice.estimates:
        assert e.seconds is None or e.seconds > 0


@pytest.mark.parametrize("rate", [0.0, 1e300, float("inf"), float("nan"), -3.0])
def test_absurd_measured_rates_are_set_aside(rate: float) -> None:
    profile = _cpu_profile(threads=2)
    assert profile.benchmarks is not None
    for m in profile.benchmarks.measurements:
        m.best = rate
    advice = advise(profile, get_workload("resnet50-imagenet"))
    mine = advice.estimates[0]
    assert not mine.calibrated
    assert mine.seconds is not None and mine.seconds > 0
    assert any("2 implausible benchmark figure(s)" in r for r in advice.this_machine.reasons)


@pytest.mark.parametrize(
    ("asked", "first"),
    [
        ("MI300", "AMD Instinct MI300X"),
        ("rtx3090", "GeForce RTX 3090"),
        ("GeForce RTX 4080S", "GeForce RTX 4080"),
    ],
)
def test_unknown_gpu_names_suggest_the_nearest_model_numbers(asked: str, first: str) -> None:
    from hwadvisor.advise import nearest_gpus

    assert nearest_gpus(asked)[0].startswith(first)


def test_an_rtx_3050_is_near_other_rtx_30_cards_not_workstation_cards() -> None:
    from hwadvisor.advise import nearest_gpus

    near = nearest_gpus("RTX 3050")
    assert len(near) == 3
    assert all("RTX 30" in name for name in near)


# --------------------------------------------------------------------------------------------
# Memory as practitioners know it


def test_7b_lora_fits_one_24_gb_gpu_and_the_advice_says_how() -> None:
    from hwadvisor.advise import resolve_gpu

    w = get_workload("llm-7b-lora")
    advice = advise(_no_bench(), w, assume=[(resolve_gpu("RTX 4090"), 1)])
    row = next(e for e in advice.estimates if e.origin == "assumed")
    assert row.fits_memory is True
    assert row.memory_plan is not None
    assert "gradient accumulation" in row.memory_plan or "checkpointing" in row.memory_plan
    assert advice.scenario.id == 2  # one reasonable GPU, not a 4-GPU workstation


def test_resnet50_fits_an_8_gb_card_at_a_smaller_batch() -> None:
    from hwadvisor.advise import resolve_gpu

    w = get_workload("resnet50-imagenet")
    advice = advise(_no_bench(), w, assume=[(resolve_gpu("RTX 4060"), 1)])
    row = next(e for e in advice.estimates if e.origin == "assumed")
    assert row.fits_memory is True
    assert row.memory_plan is not None and row.memory_plan.startswith("fits at batch")
    assert "effective batch of 256" in row.memory_plan


def test_7b_pretraining_does_not_fit_one_gpu_but_a_sharded_node() -> None:
    w = get_workload("llm-7b-pretrain")
    advice = advise(_no_bench(), w)
    by_role = {e.hardware: e for e in advice.estimates if e.origin == "candidate"}
    single = next(e for t, e in by_role.items() if "24 GB" in t)
    node = next(e for t, e in by_role.items() if "8× H100" in t)
    assert single.fits_memory is False and single.memory_plan is not None
    assert single.memory_plan.startswith("does not fit")
    assert node.fits_memory is True


# --------------------------------------------------------------------------------------------
# Roofline for conv nets, vector efficiency off the tensor cores


def _images_per_s(gpu: str, precision: str) -> tuple[float, str]:
    from dataclasses import replace

    from hwadvisor.advise import Candidate, candidate_rate, load_rules, resolve_gpu

    w = replace(get_workload("resnet50-imagenet"), precision=precision)
    peak = resolve_gpu(gpu).peak
    c = Candidate(role="x", title=gpu, gpu=peak.name, gpus=1, device_class="datacenter-gpu")
    rate = candidate_rate(w, c, load_rules())
    assert rate.estimate is not None and w.samples and w.flops_per_sample
    return w.samples * w.epochs / rate.estimate.seconds, rate.estimate.basis


def test_resnet50_on_hopper_is_bound_by_memory_not_by_the_tensor_peak() -> None:
    rate, basis = _images_per_s("H100 SXM", "fp16")
    assert "memory-bound" in basis
    # 989 TFLOP/s × 20 % would promise 8,000 img/s; measured (Lambda): 2,616.
    assert 2616 / 1.5 < rate < 2616 * 1.5


def test_fp32_convolutions_run_at_the_vector_units_share_of_the_fp32_peak() -> None:
    rate, basis = _images_per_s("V100 SXM2", "fp32")
    assert "memory-bound" not in basis
    # NVIDIA DeepLearningExamples: 367 img/s FP32 on a V100 16GB (57 % of 15.7 TFLOP/s).
    assert 367 / 1.5 < rate < 367 * 1.5


# --------------------------------------------------------------------------------------------
# A Mac: the Apple GPU through MPS


def _mac(chip: str = "Apple M2 Max", memory: int | None = 64 * 1024**3) -> Profile:
    profile = _no_bench()
    profile.cpu.model_name = Fact(value=chip, source="sysctl")
    profile.memory.total_bytes = Fact(value=memory, source="psutil")
    profile.frameworks.torch.mps_available = Fact(value=True, source="torch")
    return profile


def test_a_mac_gets_an_estimate_for_its_gpu() -> None:
    advice = advise(_mac(), get_workload("bert-base-finetune"))
    row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert "Apple M2 Max" in row.hardware and "MPS" in row.hardware
    assert row.seconds is not None and row.seconds > 0
    assert row.fits_memory is True
    cpu = advice.estimates[0]
    assert cpu.seconds is not None and row.seconds < cpu.seconds


def test_a_mac_without_a_gpu_row_in_the_catalog_says_so() -> None:
    advice = advise(_mac("Apple M9 Hyper"), get_workload("bert-base-finetune"))
    row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert row.seconds is None
    assert "no GPU figures in the catalog" in row.basis


def test_an_intel_or_amd_machine_has_no_apple_gpu_row() -> None:
    advice = advise(_no_bench(), get_workload("bert-base-finetune"))
    assert not any("MPS" in e.hardware for e in advice.estimates)


def test_an_imported_mac_collect_env_gets_its_gpu_row() -> None:
    profile = import_file(FIXTURES / "import" / "collect_env-macos-m2-max.txt")
    advice = advise(profile, get_workload("bert-base-finetune"))
    row = next(e for e in advice.estimates if e.origin == "this-machine" and e.gpus)
    assert "Apple M2 Max" in row.hardware and row.seconds is not None


def test_a_mac_where_mps_is_known_missing_has_no_gpu_row() -> None:
    profile = _mac()
    profile.frameworks.torch.mps_available = Fact(value=False, source="torch")
    advice = advise(profile, get_workload("bert-base-finetune"))
    assert not any("MPS" in e.hardware for e in advice.estimates)


def test_a_cpu_rows_memory_plan_speaks_of_ram_not_gpus() -> None:
    advice = advise(_no_bench(), get_workload("llm-7b-lora"))
    cpu_rows = [e for e in advice.estimates if e.gpus == 0 and e.memory_plan]
    gpu_rows = [e for e in advice.estimates if e.gpus and e.memory_plan]
    assert cpu_rows and gpu_rows
    assert all("per GPU" not in e.memory_plan for e in cpu_rows if e.memory_plan)
    assert any("per GPU" in e.memory_plan for e in gpu_rows if e.memory_plan)
