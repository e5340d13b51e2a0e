"""Speed of serving a model: decode from bandwidth, prefill from FLOPs, batching, MoE, offload,
tensor parallel, and the calibration's accuracy."""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hwadvisor.advise.serve.calib import (
    HOST_FAMILIES,
    SpeedRow,
    accuracy,
    fit_rules,
    in_sample,
    leave_one_source_out,
    load_calibration,
    predict,
    reference_run,
    speed_rows,
)
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.speed import (
    DeviceSpeed,
    Rules,
    ServeSpeed,
    base_kind,
    catalog_devices,
    estimate_speed,
    fast_matmul_factor,
    gpu_kind,
    int8_dot_factor,
    load_rules,
    prefill_flops_per_token,
    prefill_kind,
    quantized_linears,
    rules_from_data,
)
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.llms import find_llm
from hwadvisor.catalog.peaks import find_gpu_peak, load_catalog
from hwadvisor.errors import InputError
from tests.helpers.llms import GPT_OSS_20B, LLAMA_8B, LLAMA_70B, MIXTRAL_8X7B, QWEN3_30B_A3B
from tests.helpers.serve_rules import FLAT, GPU

ROOT = Path(__file__).resolve().parent.parent
Q4 = find_quant("Q4_K_M")


#: Llama 3 8B's output head (and, untied, its input embedding): 128,256 x 4,096.
HEAD_8B = 128256 * 4096
#: What one decode step of it reads at Q4_K_M: the layers at the format's 4.85 bits, the head
#: at Q6_K (llama.cpp's quantizer keeps it there), not the input embedding's table.
WEIGHTS_8B_Q4 = (8.03e9 - 2 * HEAD_8B) * 4.85 / 8 + HEAD_8B * 6.5625 / 8


def test_memory_bound_decode_is_bandwidth_times_efficiency_over_bytes() -> None:
    s = estimate_speed(LLAMA_8B, Q4, context=4096, engine="llama.cpp", device=GPU, rules=FLAT)
    per_token = WEIGHTS_8B_Q4 + 2 * 32 * 8 * 128 * 2 * 4096
    assert s.bytes_per_token == pytest.approx(per_token)
    assert s.decode_tok_s == pytest.approx(1000e9 * 0.5 / per_token)
    assert s.decode_low == pytest.approx(0.8 * s.decode_tok_s)
    assert s.decode_high == pytest.approx(1.2 * s.decode_tok_s)
    deeper = estimate_speed(LLAMA_8B, Q4, context=65536, engine="llama.cpp", device=GPU, rules=FLAT)
    assert deeper.decode_tok_s < s.decode_tok_s  # the KV read grows with the context


def test_fixed_time_per_step_is_added() -> None:
    rules = Rules(FLAT.decode, FLAT.prefill, 1, 1, 1, 1, overhead_s={"llama.cpp": 0.002})
    s = estimate_speed(LLAMA_8B, Q4, context=1, engine="ollama", device=GPU, rules=rules)
    per_token = WEIGHTS_8B_Q4 + 2 * 32 * 8 * 128 * 2
    assert 1 / s.decode_tok_s == pytest.approx(per_token / 500e9 + 0.002)


def test_prefill_is_flops_over_two_active_params_plus_attention() -> None:
    s = estimate_speed(
        LLAMA_8B, Q4, context=4096, engine="vllm", device=GPU, prompt_tokens=2048, rules=FLAT
    )
    flops_per_token = 2 * 8.03e9 + 4 * 32 * 32 * 128 * 1024
    assert s.prefill_tok_s == pytest.approx(200e12 * 0.25 / flops_per_token)
    assert s.ttft_s == pytest.approx(2048 / s.prefill_tok_s)


def test_moe_decodes_faster_than_a_dense_model_of_the_same_size() -> None:
    dense = LlmGeometry(
        name="dense-47b",
        params_total=46.7e9,
        params_active=46.7e9,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=32000,
    )
    moe = estimate_speed(MIXTRAL_8X7B, Q4, context=2048, engine="llama.cpp", device=GPU)
    flat = estimate_speed(dense, Q4, context=2048, engine="llama.cpp", device=GPU)
    assert moe.decode_tok_s > 2.0 * flat.decode_tok_s
    # prefill too follows the active parameters (3.6x fewer), at llama.cpp's MoE prefill
    # factor (its MoE prompts run at about half a dense model's efficiency)
    factor = load_rules().moe_prefill["llama.cpp"]
    assert 0.3 < factor < 1.0
    assert moe.prefill_tok_s == pytest.approx(
        flat.prefill_tok_s
        * factor
        * prefill_flops_per_token(dense, 512)
        / prefill_flops_per_token(MIXTRAL_8X7B, 512),
        rel=0.05,
    )


def test_batched_moe_touches_more_experts() -> None:
    one = estimate_speed(QWEN3_30B_A3B, Q4, context=1024, engine="vllm", device=GPU, rules=FLAT)
    many = estimate_speed(
        QWEN3_30B_A3B, Q4, context=1024, engine="vllm", device=GPU, users=64, rules=FLAT
    )
    dense_like = estimate_speed(
        LLAMA_8B, Q4, context=1024, engine="vllm", device=GPU, users=64, rules=FLAT
    )
    assert many.per_user_tok_s < one.per_user_tok_s / 3  # 64 users read nearly every expert
    assert dense_like.per_user_tok_s > 0


def test_offload_is_slower_by_the_ram_share() -> None:
    base = estimate_speed(LLAMA_70B, Q4, context=4096, engine="llama.cpp", device=GPU, rules=FLAT)
    off = estimate_speed(
        LLAMA_70B,
        Q4,
        context=4096,
        engine="llama.cpp",
        device=GPU,
        offload_fraction=0.25,
        ram_bandwidth_bytes_s=80e9,
        rules=FLAT,
    )
    b = base.bytes_per_token
    assert 1 / off.decode_tok_s == pytest.approx(0.75 * b / 500e9 + 0.25 * b / 40e9)
    assert off.decode_tok_s < base.decode_tok_s / 3
    assert off.prefill_tok_s < base.prefill_tok_s
    assert "25% of the weights in RAM" in off.basis


def test_batching_raises_throughput_until_compute_bound() -> None:
    speeds = [
        estimate_speed(LLAMA_8B, Q4, context=2048, engine="vllm", device=GPU, users=u, rules=FLAT)
        for u in (1, 4, 16, 64, 256, 1024)
    ]
    through = [s.throughput_tok_s for s in speeds]
    per_user = [s.per_user_tok_s for s in speeds]
    assert all(a < b for a, b in itertools.pairwise(through))
    assert all(a > b for a, b in itertools.pairwise(per_user))
    ceiling = 200e12 * 0.25 / (2 * 8.03e9)
    assert all(t <= ceiling * (1 + 1e-9) for t in through)
    assert speeds[0].throughput_tok_s == pytest.approx(speeds[0].decode_tok_s)


def test_users_at_target_is_the_largest_that_keeps_the_speed() -> None:
    s = estimate_speed(
        LLAMA_8B, Q4, context=4096, engine="vllm", device=GPU, target_tok_s=20.0, rules=FLAT
    )
    n = s.users_at_target
    assert n is not None and n > 1

    def per_user(users: int) -> float:
        return estimate_speed(
            LLAMA_8B, Q4, context=4096, engine="vllm", device=GPU, users=users, rules=FLAT
        ).per_user_tok_s

    assert per_user(n) >= 20.0 > per_user(n + 1)
    slow = estimate_speed(
        LLAMA_8B, Q4, context=4096, engine="vllm", device=GPU, target_tok_s=1e6, rules=FLAT
    )
    assert slow.users_at_target == 0


def test_tensor_parallel_scales_with_the_link() -> None:
    one = estimate_speed(LLAMA_70B, find_quant("fp8"), context=4096, engine="vllm", device=GPU)
    nvlink = DeviceSpeed(1000e9, 200e12, "gpu", count=2, link_bytes_s=450e9)
    pcie = DeviceSpeed(1000e9, 200e12, "gpu", count=2, link_bytes_s=25e9)
    fast = estimate_speed(LLAMA_70B, find_quant("fp8"), context=4096, engine="vllm", device=nvlink)
    slow = estimate_speed(LLAMA_70B, find_quant("fp8"), context=4096, engine="vllm", device=pcie)
    assert one.decode_tok_s < slow.decode_tok_s < fast.decode_tok_s < 2 * one.decode_tok_s
    assert "x 2" in fast.basis


def test_basis_says_measured_or_catalog() -> None:
    catalog = DeviceSpeed(1000e9, 200e12, "gpu", measured=False)
    assert estimate_speed(
        GPT_OSS_20B, find_quant("MXFP4"), context=1, engine="llama.cpp", device=catalog
    ).basis.startswith("catalog")
    assert estimate_speed(
        GPT_OSS_20B, find_quant("MXFP4"), context=1, engine="llama.cpp", device=GPU
    ).basis.startswith("measured")


def test_shipped_rules_load_and_bad_ones_are_input_errors() -> None:
    rules = load_rules()
    assert 0.3 < rules.efficiency("decode", "llama.cpp", "gguf-k", "gpu") <= 1.0
    assert rules.decode_low < 1.0 < rules.decode_high
    with pytest.raises(InputError):
        rules_from_data({"decode": {"*": "fast"}, "prefill": {}})
    with pytest.raises(InputError):
        rules_from_data({"prefill": {}})
    for table in ("per_sequence_s", "allreduce_s"):  # the batching times are checked alike
        with pytest.raises(InputError):
            rules_from_data({"decode": {}, "prefill": {}, table: {"vllm": "slow"}})


def test_calibration_sources_are_allowed_and_cited() -> None:
    data = load_calibration()
    rows = data["speed"]
    assert len(rows) >= 30
    held_out = ("discussions", "XiongjieDai", "perf-overview", "mlcommons", "geerling", "dgx-spark")
    for row in rows:
        assert row["source"].startswith(("https://", "benchmarks/", "llama.cpp tools/"))
        assert not any(h.lower() in row["source"].lower() for h in held_out), row["source"]


def test_calibration_accuracy_does_not_regress() -> None:
    every = speed_rows(load_calibration())
    rows = [row for row in every if row.family not in HOST_FAMILIES and not reference_run(row)]
    ins = accuracy(in_sample(rows, "decode"))
    both = leave_one_source_out(rows, ("decode", "prefill"))
    loso = accuracy(both["decode"])
    # the figures on 184 decode rows from 77 sources (docs/inference-model.md): in sample
    # 79 % / 92 %, worst 2.46x; one source out 66 % / 90 %, worst 3.84x (the 177 before AMD's
    # Instinct runs: 68 % / 89 %, 3.97x). Below the targets (80 % / 95 % held out): Intel's
    # A770, low-bit k-quants of early 2024, MLX's MoE runs on one M1 Ultra, AMD's Instinct GPUs
    # with two sources, single laptops and CPUs spread past one rule a kind.
    # (193 rows with the seventh search: in sample 77 % / 92 %, one out 65 % / 89 %, 3.81x;
    # with a fixed time per step per device kind: 79 % / 93 %, 2.13x; one out 64 % / 89 %, 2.96x;
    # with NVIDIA's HBM data-center GPUs a kind of llama.cpp's: 80 % / 93 %; 67 % / 89 %, 2.96x)
    assert ins.n >= 193 and ins.within_125 >= 0.79 and ins.within_150 >= 0.92
    assert ins.worst < 2.3
    assert loso.within_125 >= 0.66 and loso.within_150 >= 0.88 and loso.worst < 3.1
    pre = accuracy(both["prefill"])
    # 86 runs: 50 % / 70 %, worst 2.96x with GGUF engines' FP16 rate and a MoE prefill factor
    # (78 runs: 42 % / 65 %, 4.15x before both); 94 runs with Pascal at its DP4A rate: 51 % /
    # 77 %, worst 2.31x (71 %, 2.90x at its FP32 figure); 98 with four desktop CPUs' prompts
    # (0.51-2.23x one out): 49 % / 74 %, 2.32x
    assert pre.n >= 98 and pre.within_125 >= 0.46 and pre.within_150 >= 0.72 and pre.worst < 2.5


def test_gguf_prefill_counts_the_rate_a_geforce_or_radeon_reaches_with_fp16_accumulation() -> None:
    """The catalog's GeForce RTX tensor figures are FP32-accumulate, half the FP16-accumulate
    rate its notes give; its Radeon (RDNA) figures are the FP32 vector rate, half packed FP16's
    and RDNA 3's WMMA, a quarter of RDNA 4's.
    llama.cpp's kernels run at the faster rate, so an A100 (312 TFLOPS, the full rate) is not
    4.4x an RTX 3090 (71 listed, 142 with FP16 accumulation) in llama.cpp's prefill, as it is
    in vLLM's (FP32 accumulation on both)."""
    for row in load_catalog():
        factor = fast_matmul_factor(row)
        note = (row.note or "").lower()
        if row.vendor == "nvidia" and "fp32-accumulate tensor rate is half" in note:
            assert factor == 2.0, row.name
        if row.vendor == "amd" and (row.architecture or "").startswith("RDNA"):
            # the factor stands for the FP16 figure the catalog leaves out: never both
            assert factor == (4.0 if row.architecture == "RDNA 4" else 2.0), row.name
            assert row.fp16_tflops is None and row.bf16_tflops is None, row.name
        rdna = (row.architecture or "").startswith("RDNA")
        if (row.gpu_class == "datacenter" and not rdna) or row.vendor in ("apple", "intel"):
            assert factor == 1.0, row.name  # (the Radeon PRO V620: a cloud RDNA 2 card)

    def prefill(gpu: str, engine: str) -> ServeSpeed:
        row = find_gpu_peak(gpu)
        assert row is not None
        found = catalog_devices(row, 1, "float")
        assert found is not None
        return estimate_speed(LLAMA_8B, find_quant("F16"), context=512, engine=engine,
                              device=found[0], rules=FLAT)  # fmt: skip

    a100, rtx = prefill("A100 SXM4 80GB", "llama.cpp"), prefill("RTX 3090", "llama.cpp")
    assert a100.prefill_tok_s / rtx.prefill_tok_s == pytest.approx(312 / (2 * 71.16), rel=0.02)
    assert "71.2 listed x 2: the FP16 rate" in rtx.basis and "listed x" not in a100.basis
    # an FP4 GGUF (MXFP4) is multiplied at the FP16 rate, not at the FP8 figure vLLM uses
    for gpu in ("RTX 5080", "H100 SXM", "RTX 3090"):
        row = find_gpu_peak(gpu)
        assert row is not None and row.fp16_tflops
        fp4 = catalog_devices(row, 1, "fp4")
        assert fp4 is not None
        assert fp4[0].flops_s == (row.fp8_tflops or row.fp16_tflops) * 1e12
        gguf = fp4[0].flops_s * fp4[0].fast_matmul
        assert gguf == pytest.approx(row.fp16_tflops * 1e12 * fast_matmul_factor(row))
    a100, rtx = prefill("A100 SXM4 80GB", "vllm"), prefill("RTX 3090", "vllm")
    assert a100.prefill_tok_s / rtx.prefill_tok_s == pytest.approx(312 / 71.16, rel=0.02)
    assert "listed x" not in rtx.basis


@pytest.mark.parametrize(
    ("vendor", "target", "kind"),
    [("nvidia", "6.1", "gpu-legacy"), ("nvidia", "5.2", "gpu-legacy"), ("nvidia", "7.0", "gpu"),
     ("nvidia", "8.9", "gpu"), ("amd", "gfx1100", "gpu"), ("nvidia", None, "gpu"),
     ("nvidia", "sm_61", "gpu"), ("intel", "xe2", "gpu-intel"), ("Intel", None, "gpu-intel"),
     ("amd", "gfx906", "gpu-instinct"), ("amd", "gfx942", "gpu-instinct"),
     ("AMD", "gfx90a", "gpu-instinct"), ("amd", "gfx90c", "gpu"), ("amd", "gfx1201", "gpu"),
     ("amd", None, "gpu")],
)  # fmt: skip
def test_nvidia_gpus_before_volta_are_their_own_kind(
    vendor: str, target: str | None, kind: str
) -> None:
    assert gpu_kind(vendor, target) == kind
    assert base_kind(kind) == "gpu"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("A100 PCIe 80GB", "gpu-hbm"), ("A100 40GB", "gpu-hbm"), ("H100 PCIe", "gpu-hbm"),
     ("H200 SXM", "gpu-hbm"), ("B200", "gpu-hbm"), ("GH200", "gpu-hbm"), ("H20", "gpu-hbm"),
     ("V100 SXM2", "gpu"), ("L40S", "gpu"), ("A10", "gpu"), ("GeForce RTX 5090", "gpu"),
     ("RTX PRO 6000 Blackwell", "gpu"), ("AMD Instinct MI300X", "gpu-instinct")],
)  # fmt: skip
def test_nvidias_hbm_data_center_gpus_are_a_kind_for_llama_cpp_only(name: str, kind: str) -> None:
    from hwadvisor.advise.serve.speed import engine_kind, row_kind
    from hwadvisor.catalog.peaks import find_gpu_peak

    peak = find_gpu_peak(name)
    assert peak is not None
    assert row_kind(peak) == kind
    assert engine_kind("llama.cpp", kind) == kind
    # vLLM's and the other engines' runs on them are fitted as any GPU's
    assert engine_kind("vllm", kind) == ("gpu" if kind == "gpu-hbm" else kind)


def test_llama_cpp_reads_less_of_hbm_than_of_a_geforce_cards_memory() -> None:
    shipped = load_rules()
    hbm = DeviceSpeed(2000e9, 312e12, kind="gpu-hbm")
    geforce = DeviceSpeed(2000e9, 312e12, kind="gpu")
    for engine, slower in (("llama.cpp", True), ("vllm", False)):
        on_hbm, on_geforce = (
            estimate_speed(LLAMA_8B, Q4, context=4096, engine=engine, device=d, rules=shipped)
            for d in (hbm, geforce)
        )
        if slower:  # the A100 and H100 runs: 0.65-0.82 of the rule fitted with GeForce cards
            assert on_hbm.decode_tok_s < 0.9 * on_geforce.decode_tok_s
        else:
            assert on_hbm.decode_tok_s == on_geforce.decode_tok_s


@pytest.mark.parametrize(
    ("name", "kind"),
    [("Intel Arc A770", "gpu-intel-alchemist"), ("Intel Arc A380", "gpu-intel-alchemist"),
     ("Intel Data Center GPU Flex 170", "gpu-intel-alchemist"), ("Intel Arc B580", "gpu-intel"),
     ("Intel Data Center GPU Max 1550", "gpu-intel"), ("GeForce RTX 4090", "gpu")],
)  # fmt: skip
def test_intels_first_arc_generation_is_a_kind_under_intels(name: str, kind: str) -> None:
    from hwadvisor.catalog.peaks import find_gpu_peak

    peak = find_gpu_peak(name)
    assert peak is not None
    assert gpu_kind(peak.vendor, peak.target, peak.architecture) == kind


def test_a_refined_kind_falls_back_through_the_kinds_it_refines() -> None:
    from hwadvisor.advise.serve.speed import kind_chain

    assert kind_chain("gpu-intel-alchemist") == ("gpu-intel-alchemist", "gpu-intel", "gpu")
    assert kind_chain("cpu") == ("cpu",)
    rules = Rules({"*": 0.6, "f": 0.5, "f/*/gpu": 0.8, "f/*/gpu-intel": 0.4}, {}, 1, 1, 1, 1)
    assert rules.efficiency("decode", "f", "q", "gpu-intel-alchemist") == 0.4
    assert rules.efficiency("decode", "f", "q", "gpu-legacy") == 0.8
    shipped = load_rules()
    # the A770 decodes a 7B at a fifth of its bandwidth, the B580 at half: apart in the fit
    alchemist = shipped.efficiency("decode", "llama.cpp", "gguf-legacy", "gpu-intel-alchemist")
    battlemage = shipped.efficiency("decode", "llama.cpp", "gguf-legacy", "gpu-intel")
    assert alchemist < 0.6 * battlemage


def test_the_time_per_step_is_the_kinds_else_the_coarser_kinds_else_the_familys() -> None:
    rules = Rules(
        {"*": 0.6}, {}, 1, 1, 1, 1,
        overhead_s={"*": 1e-3, "f": 2e-3, "f/gpu": 1.5e-3, "f/gpu-intel": 4e-3},
    )  # fmt: skip
    assert rules.step_overhead("f", "gpu-intel-alchemist") == 4e-3
    assert rules.step_overhead("f", "gpu-legacy") == 1.5e-3
    assert rules.step_overhead("f", "cpu") == 2e-3
    assert rules.step_overhead("g", "gpu") == 1e-3
    # the shipped rules: a Pascal card's runtime takes longer a step than CUDA graphs do
    shipped = load_rules()
    assert shipped.step_overhead("llama.cpp", "gpu-legacy") > 2 * shipped.step_overhead(
        "llama.cpp", "gpu"
    )


def test_a_gpu_kind_no_run_was_measured_on_borrows_the_gpu_rule_and_says_so() -> None:
    shipped = load_rules()
    arc = DeviceSpeed(456e9, 116.5e12, kind="gpu-intel")
    rtx = DeviceSpeed(456e9, 116.5e12, kind="gpu")
    # Intel's Arc cards have runs now (A770, A770M, B580): slower than another GPU of their
    # bandwidth, in its efficiency or its time per step
    for model in (LLAMA_8B, find_llm("llama-3.2-1b")):
        arc_s, rtx_s = (
            estimate_speed(model, Q4, context=4096, engine="llama.cpp", device=d, rules=shipped)
            for d in (arc, rtx)
        )
        assert arc_s.decode_tok_s < 0.85 * rtx_s.decode_tok_s
    # rules without them: the kind borrows the GPU rule, and the basis says so
    rules = dataclasses.replace(
        shipped,
        decode={k: v for k, v in shipped.decode.items() if "gpu-intel" not in k},
        prefill={k: v for k, v in shipped.prefill.items() if "gpu-intel" not in k},
        overhead_s={k: v for k, v in shipped.overhead_s.items() if "gpu-intel" not in k},
    )
    on_arc = estimate_speed(LLAMA_8B, Q4, context=4096, engine="llama.cpp", device=arc,
                            rules=rules)  # fmt: skip
    on_rtx = estimate_speed(LLAMA_8B, Q4, context=4096, engine="llama.cpp", device=rtx,
                            rules=rules)  # fmt: skip
    assert on_arc.decode_tok_s == on_rtx.decode_tok_s  # no Intel rows: the GPU rule
    assert "no llama.cpp run was measured on Intel GPUs" in on_arc.basis
    assert "measured on" not in on_rtx.basis.split("prefill at")[0]
    legacy = DeviceSpeed(484e9, 11.3e12, kind="gpu-legacy")  # Pascal has llama.cpp rows
    assert (
        "no llama.cpp run"
        not in estimate_speed(LLAMA_8B, Q4, context=4096, engine="llama.cpp", device=legacy).basis
    )


def test_a_pascal_card_decodes_at_its_own_share_and_newer_cards_are_not_pulled_down() -> None:
    """GTX 1050 Ti and 1080 Ti decode at about half and three quarters of what the rule fitted
    on newer cards says: with their own level, the newer cards' efficiency is not lowered by
    them, and a Pascal card is sized at its kind's."""
    rules = fit_rules(speed_rows(load_calibration()))
    legacy = rules.efficiency("decode", "llama.cpp", "gguf-k", "gpu-legacy")
    newer = rules.efficiency("decode", "llama.cpp", "gguf-k", "gpu")
    assert legacy < 0.75 * newer
    # a kind with no rows of its own in a family falls back to its base kind
    assert rules.efficiency("decode", "vllm", "int4", "gpu-legacy") == rules.efficiency(
        "decode", "vllm", "int4", "gpu"
    )


def test_the_device_kind_comes_before_the_quant_family() -> None:
    """A quantization measured only on GPUs says less of a CPU than the CPU's own rows do: the
    fit has a level per device kind, and a kind's rows in one quant family carry to another."""
    rows = speed_rows(load_calibration())
    cpu = [r for r in rows if r.device.kind == "cpu" and r.family == "llama.cpp"]
    assert cpu, "the calibration has CPU rows for llama.cpp"
    rules = fit_rules(rows)
    on_cpu = rules.decode["llama.cpp/*/cpu"]
    assert on_cpu < 0.5 * rules.decode["llama.cpp/*/gpu"]
    # fp4 (gpt-oss's MXFP4) has rows on GPUs and Apple only in this table; a CPU gets the CPU's
    assert "llama.cpp/fp4/cpu" not in rules.decode or rules.decode["llama.cpp/fp4/cpu"] < 0.5
    assert rules.efficiency("decode", "llama.cpp", "fp4", "cpu") == pytest.approx(
        rules.decode.get("llama.cpp/fp4/cpu", on_cpu)
    )
    lookup = Rules({"*": 0.6, "x": 0.5, "x/q": 0.9, "x/*/cpu": 0.2}, {}, 1, 1, 1, 1)
    assert lookup.efficiency("decode", "x", "q", "cpu") == 0.2
    assert lookup.efficiency("decode", "x", "q", "gpu") == 0.9
    assert lookup.efficiency("decode", "x", "other", "gpu") == 0.5


def test_serve_model_toml_is_a_fresh_fit() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fit_serve.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_layer_split_decodes_no_faster_than_one_gpu_tensor_parallel_does() -> None:
    one = DeviceSpeed(bandwidth_bytes_s=3.35e12, flops_s=990e12, kind="gpu")
    eight = DeviceSpeed(
        bandwidth_bytes_s=3.35e12, flops_s=990e12, kind="gpu", count=8, link_bytes_s=900e9
    )
    big = LLAMA_70B  # a step of an 8B on eight H100s is mostly fixed time
    for engine, faster in (("llama.cpp", False), ("ollama", False), ("vllm", True)):
        single = estimate_speed(big, Q4, context=4096, engine=engine, device=one)
        split = estimate_speed(big, Q4, context=4096, engine=engine, device=eight)
        if faster:  # at one user the all-reduces' hops take what the eight memories give
            assert split.decode_tok_s > 1.5 * single.decode_tok_s, engine
        else:
            assert split.decode_tok_s == pytest.approx(single.decode_tok_s), engine


def test_the_eager_reference_runs_fit_the_hosts_time_per_forward_pass() -> None:
    """transformers decodes a token per forward pass that Python launches op by op: on the
    H200 a 1B model took 14.5 ms a token against 0.6 ms of weights to read. The fitted host
    time carries the reference runs on the CPU to within the issue's targets (1.25x decode,
    1.5x prefill) and on every GPU machine to 1.5x, and on a GPU a bigger model is never
    slower than the launches allow nor faster than its bytes allow."""
    every = speed_rows(load_calibration())
    rules = fit_rules(every)
    eager = [row for row in every if row.family in HOST_FAMILIES]
    assert {row.kind for row in eager} == {"cpu", "gpu"}  # an H200: "gpu" for torch
    assert set(rules.host_s) == {"torch/cpu", "torch/gpu"}
    for row in eager:
        if not row.source.startswith("benchmarks/inference_reference.py"):
            continue  # published transformers runs: test_a_dequantized_linear_adds_its_time
        # The targets for the reference script on this CPU: 1.25x decode, 1.5x
        # prefill. On a GPU the host's speed is the machine's (a 1B model decoded at 62 to 95
        # tok/s on six H200 machines): 1.5x.
        on_cpu = row.device.kind == "cpu"
        for phase, bound in (("decode", 1.25 if on_cpu else 1.5), ("prefill", 1.5)):
            ratio = predict(row, rules, phase)
            assert ratio is not None and 1 / bound <= ratio <= bound, (row.geom.name, phase, ratio)
    geom = next(row.geom for row in eager if row.kind == "gpu")
    fast = DeviceSpeed(4.8e12, 989e12, kind="gpu")
    est = estimate_speed(geom, find_quant("bf16"), context=512, engine="transformers",
                         device=fast, rules=rules)  # fmt: skip
    host = rules.host_time("torch", "gpu", geom.layers)
    assert host is not None and est.decode_tok_s == pytest.approx(1.0 / host)
    vllm = estimate_speed(geom, find_quant("bf16"), context=512, engine="vllm", device=fast,
                          rules=rules)  # fmt: skip
    assert vllm.decode_tok_s > 3 * est.decode_tok_s


@pytest.mark.parametrize("tflops", [20.0, 80.0, 165.0, 400.0, 989.0, 2000.0])
def test_prefill_never_extrapolates_past_the_fastest_gpu_it_was_measured_on(tflops: float) -> None:
    """An H200's 989 TFLOPS would have put an 8B model's llama.cpp prefill at 47,600 tok/s
    (third real H200 run); an RTX 4090 and an A100 were measured doing 100-150 TFLOPS of it:
    no device is estimated past the most any was measured doing."""
    from hwadvisor.advise.serve.speed import prefill_flops_per_token

    rules = load_rules()
    ceiling = rules.prefill_flops_max["llama.cpp"]
    assert 100e12 < ceiling < 250e12  # what the fastest rows did, not any chip's peak
    q4 = find_quant("Q4_K_M")
    eff = rules.efficiency("prefill", "llama.cpp", q4.family, "gpu")
    device = DeviceSpeed(1.0e12, tflops * 1e12, kind="gpu")
    est = estimate_speed(LLAMA_8B, q4, context=4096, engine="llama.cpp", device=device)
    done = est.prefill_tok_s * prefill_flops_per_token(LLAMA_8B, 512)
    assert done <= ceiling * (1 + 1e-9)
    if tflops * 1e12 * eff > ceiling:
        assert done == pytest.approx(ceiling)
        assert "the most llama.cpp's prefill was measured doing" in est.basis
    else:
        assert done == pytest.approx(tflops * 1e12 * eff) and "measured doing" not in est.basis


def test_a_decode_step_reads_the_head_at_its_width_and_not_the_input_embedding() -> None:
    from dataclasses import replace

    from hwadvisor.advise.serve.speed import decode_weight_bytes

    head = HEAD_8B
    # untied: the input table is not read; tied: the one matrix is the head, read whole
    assert decode_weight_bytes(LLAMA_8B, Q4, "llama.cpp") == pytest.approx(WEIGHTS_8B_Q4)
    tied = replace(LLAMA_8B, params_total=8.03e9 - head, params_active=8.03e9 - head,
                   tied_embeddings=True)  # fmt: skip
    assert decode_weight_bytes(tied, find_quant("Q8_0"), "llama.cpp") == pytest.approx(
        (8.03e9 - head) * 8.5 / 8
    )
    # a checkpoint quantization in vLLM keeps the head at 16 bits
    awq = decode_weight_bytes(LLAMA_8B, find_quant("AWQ"), "vllm")
    assert awq == pytest.approx((8.03e9 - 2 * head) * 4.25 / 8 + head * 2.0)
    # an MXFP4 MoE GGUF: the experts a token uses at 4.25 bits, the rest at Q8_0's 8.5
    gguf, served = (decode_weight_bytes(GPT_OSS_20B, find_quant("MXFP4"), e) for e in
                    ("llama.cpp", "vllm"))  # fmt: skip
    assert GPT_OSS_20B.params_active * 4.25 / 8 < gguf < served


def test_a_decode_step_never_reads_more_than_the_weights_held() -> None:
    from hwadvisor.advise.serve.memory import weights_bytes
    from hwadvisor.advise.serve.quant import QUANTS
    from hwadvisor.advise.serve.speed import decode_weight_bytes
    from hwadvisor.catalog.llms import all_llms

    for geom, quant in itertools.product(all_llms(), QUANTS):
        for engine in quant.engines:
            for users in (1, 8, 256):
                read = decode_weight_bytes(geom, quant, engine, users)
                held = weights_bytes(geom, quant, engine)
                assert 0 < read <= held * (1 + 1e-9), (geom.name, quant.name, engine, users)
                if not geom.moe:  # a dense model reads the same at any batch
                    assert read == decode_weight_bytes(geom, quant, engine)


def test_an_engine_with_no_moe_run_takes_the_moe_factor_of_the_others() -> None:
    """llama.cpp and MLX were measured on MoE models; vLLM was not: it takes the factor fitted
    on every family's MoE runs (shrunk toward 1), not 1."""
    rules = load_rules()
    assert "vllm" not in rules.moe and "*" in rules.moe
    assert rules.moe["*"] < 1.0
    device = DeviceSpeed(3.35e12, 990e12, kind="gpu")
    q = find_quant("bf16")
    moe = estimate_speed(QWEN3_30B_A3B, q, context=1024, engine="vllm", device=device)
    bare = estimate_speed(
        QWEN3_30B_A3B, q, context=1024, engine="vllm", device=device,
        rules=dataclasses.replace(rules, moe={}),
    )  # fmt: skip
    assert moe.decode_tok_s < bare.decode_tok_s


def test_no_checkpoint_engine_prefill_row_beats_the_gpus_peak() -> None:
    """A vLLM or MLX prefill row is at most its devices' dense peak (a cached prompt's time to
    first token is not a prefill). llama.cpp's rows may pass the catalog's FP16 figure: its
    quantized matmuls run on the INT8 and FP16-accumulate paths, twice that on GeForce cards."""
    from hwadvisor.advise.serve.speed import prefill_flops_per_token

    for row in speed_rows(load_calibration()):
        if row.prefill_tok_s and row.family in ("vllm", "mlx"):
            done = float(row.prefill_tok_s) * prefill_flops_per_token(row.geom, row.prompt_tokens)
            peak = row.device.flops_s * (row.device.count if row.family == "vllm" else 1)
            assert done <= peak, (row.group, done / peak)


def test_amds_gfx9_gpus_decode_at_their_own_share_and_say_where_no_run_was_measured() -> None:
    from hwadvisor.advise.serve.speed import INSTINCT_GPU

    rules = load_rules()
    instinct = rules.efficiency("decode", "llama.cpp", "gguf-k", INSTINCT_GPU)
    radeon = rules.efficiency("decode", "llama.cpp", "gguf-k", "gpu")
    assert instinct < 0.7 * radeon  # llama.cpp's HIP kernels are tuned for RDNA's wave32
    mi300x = DeviceSpeed(5300e9, 1307e12, INSTINCT_GPU, measured=False)
    fp8 = find_quant("fp8")
    served = estimate_speed(LLAMA_70B, fp8, context=4096, engine="vllm", device=mi300x)
    assert "no vllm run was measured on AMD Instinct GPUs" in served.basis
    local = estimate_speed(LLAMA_70B, Q4, context=4096, engine="llama.cpp", device=mi300x)
    assert "measured on AMD Instinct" not in local.basis


def test_a_moe_prompt_runs_at_its_familys_moe_prefill_factor_and_mlx_is_not_slowed() -> None:
    """llama.cpp's MoE prompts ran at about half a dense model's efficiency (an RTX 5090 on
    Qwen3-30B-A3B at 0.26x of the dense rule, a Strix Halo on it and on gpt-oss-120b at
    0.47-0.53x); MLX's did not (an M4 Max at 1.04x): a factor per family, none pooled."""
    rules = load_rules()
    assert 0.3 < rules.moe_prefill["llama.cpp"] < 0.9
    assert "*" not in rules.moe_prefill
    moe, dense = QWEN3_30B_A3B, LLAMA_8B
    for engine, factor in (("llama.cpp", rules.moe_prefill["llama.cpp"]),
                           ("mlx", rules.moe_prefill.get("mlx", 1.0)),
                           ("vllm", 1.0)):  # fmt: skip
        flat = dataclasses.replace(rules, moe_prefill={})
        quant = find_quant(
            "Q4_K_M" if engine == "llama.cpp" else "4bit" if engine == "mlx" else "bf16"
        )
        with_it = estimate_speed(moe, quant, context=512, engine=engine, device=GPU, rules=rules)
        without = estimate_speed(moe, quant, context=512, engine=engine, device=GPU, rules=flat)
        assert with_it.prefill_tok_s == pytest.approx(without.prefill_tok_s * factor, rel=1e-6)
        d1 = estimate_speed(dense, quant, context=512, engine=engine, device=GPU, rules=rules)
        d2 = estimate_speed(dense, quant, context=512, engine=engine, device=GPU, rules=flat)
        assert d1.prefill_tok_s == pytest.approx(d2.prefill_tok_s)  # a dense model: untouched


def test_a_moe_prompt_on_a_capped_gpu_tops_out_at_the_ceiling_times_its_moe_factor() -> None:
    """An H200's gpt-oss-20b prefill in llama.cpp had met the dense ceiling (201 TFLOPS done,
    an RTX 4090 on a dense model): a MoE's kernels top out lower by its MoE factor."""
    rules = load_rules()
    ceiling = rules.prefill_flops_max["llama.cpp"]
    factor = rules.moe_prefill["llama.cpp"]
    fast = DeviceSpeed(4.8e12, 989e12, kind="gpu")
    quant = find_quant("Q4_K_M")
    moe = estimate_speed(QWEN3_30B_A3B, quant, context=512, engine="llama.cpp", device=fast,
                         rules=rules)  # fmt: skip
    dense = estimate_speed(LLAMA_8B, quant, context=512, engine="llama.cpp", device=fast,
                           rules=rules)  # fmt: skip
    from hwadvisor.advise.serve.speed import prefill_flops_per_token as per_token

    assert moe.prefill_tok_s * per_token(QWEN3_30B_A3B, 512) == pytest.approx(ceiling * factor)
    assert dense.prefill_tok_s * per_token(LLAMA_8B, 512) == pytest.approx(ceiling)


@pytest.mark.parametrize("context", [1024, 8192, 65536])
def test_decode_is_timed_at_the_depth_asked_and_given_with_the_context_full(context: int) -> None:
    def at(depth: int | None, users: int = 1) -> ServeSpeed:
        return estimate_speed(
            LLAMA_8B, Q4, context=context, engine="llama.cpp", device=GPU, rules=FLAT,
            depth=depth, users=users, target_tok_s=5.0,
        )  # fmt: skip

    full = at(None)
    assert full.decode_full_context_tok_s is None  # timed at the context already
    depths = sorted([0, 128, 640, context // 2, context, 4 * context])
    speeds = [at(d) for d in depths]
    # Deeper reads more KV: never faster; past the context it is the context's.
    for a, b in itertools.pairwise(speeds):
        assert b.decode_tok_s <= a.decode_tok_s
        assert b.per_user_tok_s <= a.per_user_tok_s
    assert speeds[-1].decode_tok_s == pytest.approx(full.decode_tok_s)
    for d, s in zip(depths, speeds, strict=True):
        if d < context:
            # one user with the whole context: the step at the context's depth
            assert s.decode_full_context_tok_s == pytest.approx(full.decode_tok_s)
            assert s.decode_tok_s > full.decode_tok_s
        per_token = WEIGHTS_8B_Q4 + 2 * 32 * 8 * 128 * 2 * min(d, context)
        assert s.bytes_per_token == pytest.approx(per_token)


def test_users_at_target_stop_at_the_cap_the_memory_sets() -> None:
    from hwadvisor.advise.serve.speed import _largest_users

    for knee in (0, 1, 3, 17, 100, 5000):

        def per_user(n: int, knee: int = knee) -> float:
            return 20.0 if n <= knee else 5.0  # the target is kept up to the knee

        free = _largest_users(per_user, 10.0)
        assert free == min(knee, 4096)
        for cap in (None, 0, 1, 2, 16, 64, 10_000):
            got = _largest_users(per_user, 10.0, cap)
            assert got == (free if cap is None else min(free, cap))


def test_a_calibration_row_is_the_device_an_estimate_of_its_hardware_sizes() -> None:
    """Every single-device GPU or unified-memory row whose hardware the catalog knows is fitted
    as the device the answer sizes for that hardware typed with --assume-gpu: the same kind
    (an AMD APU ``unified-amd``, not Apple's ``unified``) and, for a GGUF engine, the same FP16
    rate (the figure times the fast-matmul factor).
    Strix Halo's rows were fitted at its listed FP32 rate and estimated at twice it, which put
    its prefill at 2.6x what was measured."""
    from hwadvisor.advise.names import resolve_gpu
    from hwadvisor.advise.serving import _assumed_candidate

    data = load_calibration()
    checked = 0
    for raw, row in zip(data["speed"], speed_rows(data), strict=True):
        if raw["kind"] not in ("gpu", "unified") or row.device.count != 1:
            continue
        if find_gpu_peak(raw["hardware"], fallback=False) is None:
            continue
        resolved = resolve_gpu(raw["hardware"])
        if resolved.peak.vendor == "apple":
            continue  # a Mac's memory varies: its speed figures are the chip's either way
        family = find_quant(raw["quant"]).family
        candidate, _ = _assumed_candidate(resolved, raw["hardware"], 1, family)
        assert row.device.kind == candidate.speed.kind, raw["hardware"]
        # the FP16 rate a GGUF engine's matmuls reach, as the estimate takes it
        ours = row.device.flops_s * row.device.fast_matmul
        theirs = candidate.speed.flops_s * candidate.speed.fast_matmul
        if raw["engine"] in ("llama.cpp", "ollama"):
            assert ours == pytest.approx(theirs, rel=0.05), raw["hardware"]
            assert row.device.int8_dot == candidate.speed.int8_dot, raw["hardware"]
        checked += 1
    assert checked >= 100


def test_pascal_runs_llama_cpps_quantized_matmuls_at_its_dp4a_rate() -> None:
    """Every NVIDIA GPU of compute capability 6.1 to 6.x in the catalog (Pascal but the P100)
    multiplies GGUF's integer formats at four times its FP32 figure (DP4A), no other GPU gets
    that factor, and 16-bit weights on it are not sized at it."""
    seen = 0
    for row in load_catalog():
        try:
            capability = float(row.target or "")
        except ValueError:
            capability = 0.0
        dp4a = row.vendor == "nvidia" and 6.1 <= capability < 7.0
        assert int8_dot_factor(row) == (4.0 if dp4a else None), row.name
        seen += dp4a
    assert seen >= 10
    p40 = find_gpu_peak("Tesla P40")
    assert p40 is not None
    device = catalog_devices(p40, 1, "gguf-legacy")
    assert device is not None
    speed = device[0]
    assert prefill_kind("llama.cpp", speed.kind, speed, find_quant("Q4_0")) == "gpu-legacy"
    assert prefill_kind("llama.cpp", speed.kind, speed, find_quant("F16")) == "gpu"
    assert prefill_kind("vllm", speed.kind, speed, find_quant("F16")) == "gpu-legacy"
    flat = dict(context=512, engine="llama.cpp", device=speed, rules=FLAT)
    q4 = estimate_speed(LLAMA_8B, find_quant("Q4_0"), **flat)
    f16 = estimate_speed(LLAMA_8B, find_quant("F16"), **flat)
    assert q4.prefill_tok_s == pytest.approx(4 * f16.prefill_tok_s, rel=0.01)
    p100 = find_gpu_peak("Tesla P100 PCIe 16GB")  # compute capability 6.0: no DP4A
    assert p100 is not None and int8_dot_factor(p100) is None
    found = catalog_devices(p100, 1, "gguf-legacy")
    assert found is not None
    assert prefill_kind("llama.cpp", found[0].kind, found[0], find_quant("Q4_0")) == "gpu"


def test_a_pascal_prompt_is_predicted_from_other_sources_within_1_5x() -> None:
    """Leaving the one source of Pascal prompt runs out (a P40's quantized llama-bench runs),
    the rule fitted on the other GPUs predicts its 4- and 5-bit runs within 1.5x (0.68-0.73x)
    and none beyond 2.1x (its Q3_K_S, 0.48x): at the DP4A rate. At the FP32 figure they read
    2.7-2.9x (Q3_K_S 1.9x)."""
    rows = [row for row in speed_rows(load_calibration()) if row.family not in HOST_FAMILIES]
    pascal = [row for row in rows if row.kind == "gpu-legacy" and row.prefill_tok_s]
    groups = {row.group for row in pascal}
    assert len(pascal) >= 5
    rules = fit_rules([row for row in rows if row.group not in groups])
    ratios = {row.quant: predict(row, rules, "prefill") for row in pascal}
    assert all(r is not None and 1 / 2.1 <= r <= 2.1 for r in ratios.values()), ratios
    near = [q for q, r in ratios.items() if r is not None and 1 / 1.5 <= r <= 1.5]
    assert len(near) >= len(ratios) - 1, ratios


def _nf4_one_source_out(rules_for: Callable[[list[SpeedRow]], Rules]) -> list[float]:
    rows = speed_rows(load_calibration())
    nf4 = [r for r in rows if r.family in HOST_FAMILIES and r.quant == "bnb-4bit"]
    ratios = []
    for group in sorted({r.group for r in nf4}):
        rules = rules_for([r for r in rows if r.group != group])
        ratios += [x for r in nf4 if r.group == group and (x := predict(r, rules, "decode"))]
    return ratios


def test_a_dequantized_linear_adds_its_time_to_an_eager_forward_pass() -> None:
    """transformers runs bitsandbytes' 4-bit by dequantizing each Linear's weights before its
    matmul: an extra kernel a layer, which on a fast GPU costs more than the bytes it saves
    (an H100 decoded Llama 3.1 8B at 41 tok/s in BF16 and 24 in NF4). The fitted time per
    dequantized Linear (tens of microseconds) carries the published NF4 runs, each machine's
    left out of the fit, within 1.5x on 6 of 9 (without it 2 of 9: every NF4 run sized as a
    16-bit run's host time); the RTX 4090's machine, whose host is faster than any other's,
    reads 2.6x either way it is left out."""
    rules = fit_rules(speed_rows(load_calibration()))
    per_linear = rules.eager_linear_s["nf4"]
    assert 20e-6 <= per_linear <= 100e-6
    within = _nf4_one_source_out(fit_rules)
    without = _nf4_one_source_out(
        lambda rows: dataclasses.replace(fit_rules(rows), eager_linear_s={})
    )
    assert len(within) == len(without) >= 9

    def near(ratios: list[float]) -> int:
        return sum(1 / 1.5 <= r <= 1.5 for r in ratios)

    assert near(within) >= 6 and near(without) <= 3, (within, without)
    # the host's time grows by exactly that time for each Linear a forward pass runs
    geom = LLAMA_8B
    device = DeviceSpeed(1.0e12, 165e12, kind="gpu")
    sixteen = estimate_speed(geom, find_quant("bf16"), context=512, engine="transformers",
                             device=device, rules=rules)  # fmt: skip
    four = estimate_speed(geom, find_quant("bnb-4bit"), context=512, engine="transformers",
                          device=device, rules=rules)  # fmt: skip
    host = rules.host_time("torch", "gpu", geom.layers)
    assert host is not None and quantized_linears(geom) == 7 * geom.layers
    assert 1 / four.decode_tok_s == pytest.approx(host + per_linear * 7 * geom.layers, rel=1e-6)
    assert four.decode_tok_s < sixteen.decode_tok_s  # host-bound: the dequantizing costs more
    assert "dequantizing 224 Linear layers" in four.basis


def test_vllms_bitsandbytes_takes_its_4bit_kins_efficiency_and_says_so() -> None:
    rules = load_rules()
    assert "vllm/nf4" not in rules.decode  # no vLLM run in it was fitted
    for kind in ("gpu", "gpu-hbm", "cpu"):
        assert rules.efficiency("decode", "vllm", "nf4", kind) == rules.efficiency(
            "decode", "vllm", "int4", kind
        )
    device = DeviceSpeed(0.96e12, 364e12, kind="gpu")
    est = estimate_speed(LLAMA_8B, find_quant("bnb-4bit"), context=512, engine="vllm",
                         device=device, rules=rules)  # fmt: skip
    assert "sized at int4's efficiency" in est.basis
    eager = estimate_speed(LLAMA_8B, find_quant("bnb-4bit"), context=512,
                           engine="transformers", device=device, rules=rules)  # fmt: skip
    assert "sized at int4's" not in eager.basis  # transformers' NF4 runs were fitted


def test_llama_cpp_on_a_scanned_cpu_is_its_own_kind_fitted_on_this_projects_runs() -> None:
    """This machine's CPU is sized from its scan (triad and matmul, not a chip's peaks):
    llama.cpp there decoded at about twice what the laptop-fitted CPU rule put on those
    figures. Its own kind, fitted on this project's runs (benchmarks/
    inference_reference_llamacpp.py), carries them within 1.25x decode and 1.5x prefill in
    sample; they are scored apart from the published runs' one-source-out figures."""
    from hwadvisor.advise.serve.calib import reference_run
    from hwadvisor.advise.serve.speed import SCANNED_CPU
    from hwadvisor.advise.serving import machine_options
    from hwadvisor.model.load import load_profile

    rows = speed_rows(load_calibration())
    ours = [r for r in rows if r.kind == SCANNED_CPU]
    assert len(ours) >= 12 and all(reference_run(r) and r.family == "llama.cpp" for r in ours)
    rules = fit_rules(rows)
    for row in ours:
        for phase, bound in (("decode", 1.25), ("prefill", 1.5)):
            ratio = predict(row, rules, phase)
            assert ratio is not None and 1 / bound <= ratio <= bound, (row.geom.name, phase)
    profile = load_profile(ROOT / "tests" / "fixtures" / "reports" / "cpu-only.json")
    cpu = [c for c in machine_options(profile) if not c.gpus]
    assert cpu and all(c.speed.kind == SCANNED_CPU and c.speed.measured for c in cpu)
    # other engines take the CPU kind's rules: the eager reference runs' host time
    assert rules.host_time("torch", SCANNED_CPU, 16) == rules.host_time("torch", "cpu", 16)
