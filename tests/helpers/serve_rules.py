"""Flat serving rules and a round-figured GPU, for tests of the speed model's arithmetic."""

from __future__ import annotations

from hwadvisor.advise.serve.speed import DeviceSpeed, Rules

FLAT = Rules(
    decode={"*": 0.5},
    prefill={"*": 0.25},
    decode_low=0.8,
    decode_high=1.2,
    prefill_low=0.7,
    prefill_high=1.4,
)
"""One efficiency for everything: decode 0.5, prefill 0.25."""
GPU = DeviceSpeed(bandwidth_bytes_s=1000e9, flops_s=200e12, kind="gpu")
"""1,000 GB/s and 200 TFLOPS."""
