"""Catalogs as data: the GPU peak table (``gpus.toml``) and the peak/efficiency logic. Every
data file (here and in :mod:`hwadvisor.workloads`, :mod:`hwadvisor.calibration`,
:mod:`hwadvisor.memory`, :mod:`hwadvisor.advise`) is read through :mod:`.schema`."""

from __future__ import annotations

from hwadvisor.catalog.peaks import (
    PRECISIONS,
    CatalogError,
    CpuPeak,
    GpuPeak,
    cpu_peak_details,
    cpu_peak_from_profile,
    cpu_peak_gflops,
    efficiency,
    find_gpu_peak,
    flops_per_cycle,
    load_catalog,
    peak_for,
)

__all__ = [
    "PRECISIONS",
    "CatalogError",
    "CpuPeak",
    "GpuPeak",
    "cpu_peak_details",
    "cpu_peak_from_profile",
    "cpu_peak_gflops",
    "efficiency",
    "find_gpu_peak",
    "flops_per_cycle",
    "load_catalog",
    "peak_for",
]
