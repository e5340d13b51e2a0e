"""The time model of one ladder rung (hwadvisor.advise.rates): arithmetic, memory traffic and
the host's kernel launches, whichever is slowest."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hwadvisor import advise
from hwadvisor.advise import rates
from hwadvisor.catalog.peaks import find_gpu_peak
from hwadvisor.workloads import (
    VECTOR_EFFICIENCY,
    custom_workload,
    get_workload,
    total_training_flops,
)

RULES = advise.load_rules()


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
    w = _bert_large(precision="fp32", flash_attention=True, batch_size=256)
    peak = find_gpu_peak("V100 SXM2")
    assert peak is not None and peak.fp32_tflops
    seconds = _seconds(w, "V100 SXM2")
    expected = total_training_flops(w) / (
        peak.fp32_tflops * 1e12 * VECTOR_EFFICIENCY["transformer"]
    )
    assert seconds == pytest.approx(expected, rel=0.03)  # 2 significant figures


def test_a_model_without_a_shape_has_no_launch_or_traffic_term() -> None:
    w = custom_workload(parameters=330_000_000, tokens=10**10, precision="bf16", batch_size=1)
    assert rates._traffic_per_flop(w) is None
    peak = find_gpu_peak("H100 SXM")
    assert peak is not None
    est = rates._gpu_estimate(w, peak, 1, "datacenter-gpu", RULES)
    assert est is not None and "bound" not in est.basis
