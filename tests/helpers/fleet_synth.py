"""Synthetic fleets for the fleet tests and ``benchmarks/fleet_speed.py``.

Every profile starts from a recorded fixture (``tests/fixtures/reports/*.json``: a real 2-CPU
scan, an imported RTX 3080 and an imported 8× A100 node) and varies what differs between real
hosts: hostname and machine id, scan time, driver and torch versions, the GPU model and memory
among catalog rows, and every measured figure by a normal spread around its recorded value.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
TEMPLATES = ("cpu-only", "single-gpu", "eight-gpu")

#: (name, catalog name, VRAM GiB, gpu class): what a template's GPUs may be swapped for.
GPU_MODELS = (
    ("NVIDIA A100-SXM4-40GB", "A100 40GB", 40, "datacenter"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB", 80, "datacenter"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 80, "datacenter"),
    ("NVIDIA L4", "L4", 24, "datacenter"),
    ("NVIDIA GeForce RTX 3080", "GeForce RTX 3080", 10, "consumer"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 24, "consumer"),
    ("NVIDIA RTX A6000", "RTX A6000", 48, "workstation"),
)
DRIVERS = (("535.183.01", "12.2"), ("550.90.07", "12.4"), ("560.35.03", "12.6"))
TORCH = ("2.3.1+cu121", "2.4.1+cu124", "2.5.1+cu124", "2.13.0+cpu")


def template(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def machine_id(i: int, salt: str = "") -> str:
    return "sha256:" + hashlib.sha256(f"{salt}{i}".encode()).hexdigest()[:16]


def _fact(value: Any, source: str = "nvml") -> dict[str, Any]:
    return {"value": value, "source": source, "reason": None}


def make_host(
    base: dict[str, Any],
    i: int,
    rng: random.Random,
    *,
    spread: float = 0.025,
    gpu_model: tuple[str, str, int, str] | None = None,
    day: int = 0,
    hostname: str | None = None,
    salt: str = "",
) -> dict[str, Any]:
    """One host's profile from ``base``: identity, time, stack and figures varied."""
    doc = copy.deepcopy(base)
    doc["imported"] = None  # a fleet host scanned itself, whatever the template was read from
    doc["host"] = {
        "hostname": _fact(hostname or f"node-{i:05d}", "os"),
        "machine_id": _fact(machine_id(i, salt), "os"),
    }
    doc["created_utc"] = f"2026-11-{1 + day % 20:02d}T{i % 24:02d}:{i % 60:02d}:00Z"
    driver, cuda = DRIVERS[i % len(DRIVERS)]
    if doc.get("gpus"):
        doc["nvml"]["driver_version"] = _fact(driver)
        doc["nvml"]["cuda_driver_version"] = _fact(cuda)
        doc["nvml"]["status"] = "ok"
    doc["frameworks"]["torch"]["version"] = _fact(TORCH[i % len(TORCH)], "torch")
    if gpu_model is not None:
        name, catalog, gib, klass = gpu_model
        for gpu in doc["gpus"]:
            gpu["name"] = _fact(name)
            gpu["catalog_name"] = _fact(catalog, "catalog")
            gpu["gpu_class"] = _fact(klass, "catalog")
            gpu["vram_total_bytes"] = _fact(gib * 2**30)
    for n, gpu in enumerate(doc.get("gpus") or []):
        gpu["uuid"] = _fact(f"GPU-{hashlib.md5(f'{salt}{i}-{n}'.encode()).hexdigest()}")
    for m in (doc.get("benchmarks") or {}).get("measurements") or []:
        if isinstance(m.get("best"), (int, float)):
            m["best"] = round(m["best"] * rng.gauss(1.0, spread), 3)
    return doc


def slow_down(doc: dict[str, Any], device: str, factor: float) -> None:
    """Make every figure of ``device`` ``factor`` times what it was (a degraded GPU)."""
    for m in doc["benchmarks"]["measurements"]:
        if m["device"] == device and m.get("best") is not None and m.get("higher_is_better", True):
            m["best"] = round(m["best"] * factor, 3)


def mixed_fleet(count: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """``count`` hosts of every kind: CPU-only, one GPU of several models, 8-GPU nodes."""
    rng = random.Random(seed)
    bases = {name: template(name) for name in TEMPLATES}
    for i in range(count):
        kind = TEMPLATES[i % 3]
        model = None
        if kind == "single-gpu":
            model = GPU_MODELS[3 + i % 4]
        elif kind == "eight-gpu":
            model = GPU_MODELS[i % 3]
        yield make_host(bases[kind], i, rng, gpu_model=model, day=i % 20)


def write(folder: Path, docs: Iterator[dict[str, Any]]) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for doc in docs:
        name = doc["host"]["hostname"]["value"]
        (folder / f"{name}.json").write_text(json.dumps(doc, separators=(",", ":")))
        n += 1
    return n
