"""The time model of one ladder rung (hwadvisor.advise.rates): arithmetic, memory traffic and
the host's kernel launches, whichever is slowest."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hwadvisor import advise
from hwadvisor.advise import rates
from hwadvisor.catalog.model import model_params
from hwadvisor.catalog.peaks import find_gpu_peak
from hwadvisor.workloads import (
    custom_workload,
    get_workload,
    total_training_flops,
    vector_efficiency,
    width_factor,
)

#: The steps alone: no start-up, no evaluation.
RULES = replace(advise.load_rules(), startup_seconds=0.0, eval_fraction=0.0)


def _bert_large(**changes: object) -> object:
    w = custom_workload(
        parameters=330_000_000,
        tokens=10**10,
        sequence_length=384,
        layers=24,
        hidden=1024,
        heads=16,
        precision="fp16",
        batch_size=32,
    )
    return replace(w, **changes)


def _seconds(w: object, gpu: str, gpus: int = 1, device_class: str = "datacenter-gpu") -> float:
    peak = find_gpu_peak(gpu)
    assert peak is not None
    est = rates._gpu_estimate(w, peak, gpus, device_class, RULES)  # type: ignore[arg-type]
    assert est is not None
    return est.seconds


def test_long_sequences_without_fused_attention_are_memory_bound() -> None:
    w = _bert_large()
    peak = find_gpu_peak("H100 SXM")
    assert peak is not None
    est = rates._gpu_estimate(w, peak, 1, "datacenter-gpu", RULES)  # type: ignore[arg-type]
    assert est is not None and "memory-bound" in est.basis
    # Never storing the attention scores moves less memory: never slower.
    fused = _seconds(replace(w, flash_attention=True), "H100 SXM")
    assert fused < est.seconds


def test_more_bandwidth_helps_a_memory_bound_step() -> None:
    # Same tensor peak class, the memory-bound step follows bandwidth: H100 (3.35 TB/s) beats
    # A100 80GB (2.0 TB/s) by less than its 3x tensor peak.
    w = _bert_large()
    a100, h100 = _seconds(w, "A100 SXM4 80GB"), _seconds(w, "H100 SXM")
    assert 1.3 < a100 / h100 < 2.5


def test_small_batches_are_launch_bound() -> None:
    big = get_workload("bert-base-finetune")
    tiny = replace(big, batch_size=1)
    peak = find_gpu_peak("H100 SXM")
    assert peak is not None
    est = rates._gpu_estimate(tiny, peak, 1, "datacenter-gpu", RULES)
    assert est is not None and "launch-bound" in est.basis
    # Per token, batch 1 is several times slower than batch 32 on a fast GPU.
    assert est.seconds > 5 * _seconds(big, "H100 SXM")


@pytest.mark.parametrize("batch", [1, 2, 4, 8, 16, 32, 64, 128])
def test_a_larger_batch_is_never_slower(batch: int) -> None:
    w = get_workload("bert-base-finetune")
    assert _seconds(replace(w, batch_size=batch * 2), "RTX 4090", device_class="consumer-gpu") <= (
        _seconds(replace(w, batch_size=batch), "RTX 4090", device_class="consumer-gpu")
    )


def test_fp32_transformers_on_cuda_cores_use_the_vector_efficiency() -> None:
    """Off the tensor cores: the FP32 peak × the vector efficiency × the width factor, plus at
    most the overlap share of the (FlashAttention-small) memory time."""
    w = _bert_large(precision="fp32", flash_attention=True, batch_size=256)
    peak = find_gpu_peak("V100 SXM2")
    assert peak is not None and peak.fp32_tflops
    seconds = _seconds(w, "V100 SXM2")
    vector = vector_efficiency(w)
    assert vector is not None
    compute = total_training_flops(w) / (peak.fp32_tflops * 1e12 * vector * width_factor(w))
    assert compute * 0.97 <= seconds <= compute * (1 + model_params().overlap) * 1.03


def test_a_model_without_a_shape_gets_the_standard_ones_bounds_and_says_so() -> None:
    """Parameters and tokens only, as people ask: a standard shape is assumed, so the memory
    traffic and launch bounds still count (never silently dropped) and the advice says so."""
    w = custom_workload(parameters=330_000_000, tokens=10**10, precision="bf16", batch_size=1)
    assert w.shape_assumed and w.layers and w.hidden
    assert rates._traffic_per_flop(w) is not None
    peak = find_gpu_peak("H100 SXM")
    assert peak is not None
    est = rates._gpu_estimate(w, peak, 1, "datacenter-gpu", RULES)
    assert est is not None and "launch-bound" in est.basis  # batch 1 of a 24-layer model


# --------------------------------------------------------------------------------------------
# Several GPUs: the links between them


def _peak(name: str):  # type: ignore[no-untyped-def]
    peak = find_gpu_peak(name)
    assert peak is not None
    return peak


def test_links_rank_nvlink_over_pcie_over_consumer_pcie() -> None:
    h100, _ = rates.link_bandwidth(_peak("H100 SXM"))
    a100_pcie, what = rates.link_bandwidth(_peak("A100 PCIe 80GB"))
    rtx4090, via_host = rates.link_bandwidth(_peak("RTX 4090"))
    assert h100 > a100_pcie > rtx4090
    assert "PCIe 4.0" in what and "host memory" in via_host
    assert rates.link_bandwidth(_peak("H100 PCIe"))[0] > a100_pcie  # PCIe 5.0


def test_data_parallel_when_the_states_fit_sharded_when_not() -> None:
    small = custom_workload(parameters=100_000_000, tokens=10**9, precision="bf16", batch_size=8)
    big = custom_workload(parameters=7_000_000_000, tokens=10**9, precision="bf16", batch_size=1)
    assert rates.sharding(small, _peak("H100 SXM"), 8, RULES) == "ddp"
    assert rates.sharding(big, _peak("H100 SXM"), 8, RULES) == "fsdp"
    assert rates.sharding(big, _peak("H100 SXM"), 1, RULES) == "ddp"
    plan = rates.memory_plan(big, int(80e9), 8, RULES)
    assert plan is not None and plan.message.endswith("(states sharded with FSDP)")
    plan = rates.memory_plan(small, int(80e9), 8, RULES)
    assert plan is not None and plan.message.endswith("(plain data parallel)")


def _llm(batch: int) -> object:
    return custom_workload(
        parameters=1_300_000_000,
        tokens=10**10,
        sequence_length=512,
        layers=24,
        hidden=2048,
        heads=16,
        flash_attention=True,
        batch_size=batch,
        precision="bf16",
    )


def test_a_gradient_exchange_the_step_cannot_hide_costs_time() -> None:
    # Batch 1 of 512 tokens on PCIe consumer cards: the step is short, the gradients large.
    w = _llm(1)
    peak = _peak("RTX 6000 Ada")
    est = rates._gpu_estimate(w, peak, 4, "consumer-gpu", RULES)  # type: ignore[arg-type]
    assert est is not None and "gradient exchange" in est.basis and "PCIe" in est.basis
    one = _seconds(w, "RTX 6000 Ada", 1, "consumer-gpu")
    assert est.seconds > one / (1 + 3 * RULES.multi_gpu_scaling) * 1.2
    # NVLink costs the same exchange a smaller share of the step.
    ideal = 1 + 3 * RULES.multi_gpu_scaling
    pcie_cost = est.seconds / (one / ideal)
    nvlink_cost = _seconds(w, "H100 SXM", 4) / (_seconds(w, "H100 SXM", 1) / ideal)
    assert 1.0 <= nvlink_cost < pcie_cost


@pytest.mark.parametrize("network", [1.0, 3.0, 12.5, 25.0, 50.0])
def test_a_faster_network_is_never_slower(network: float) -> None:
    w = _llm(1)
    slow = replace(RULES, network_gbs_per_gpu=network)
    fast = replace(RULES, network_gbs_per_gpu=network * 2)
    peak = _peak("H100 SXM")
    a = rates._gpu_estimate(w, peak, 64, "datacenter-gpu", slow)  # type: ignore[arg-type]
    b = rates._gpu_estimate(w, peak, 64, "datacenter-gpu", fast)  # type: ignore[arg-type]
    assert a is not None and b is not None and b.seconds <= a.seconds


def test_the_network_setting_is_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from importlib import resources

    text = resources.files("hwadvisor.catalog").joinpath("rules.toml").read_text(encoding="utf-8")
    for bad in ("0", "-5", "true", '"fast"', "1e9"):
        path = tmp_path / "rules.toml"
        path.write_text(
            text.replace("network_gbs_per_gpu = 25", f"network_gbs_per_gpu = {bad}"),
            encoding="utf-8",
        )
        with pytest.raises(advise.RulesError, match="network_gbs_per_gpu"):
            advise.load_rules(path)
    path.write_text(text.replace("network_gbs_per_gpu = 25", "network_gbs_per_gpu = 3"))
    assert advise.load_rules(path).network_gbs_per_gpu == 3.0
