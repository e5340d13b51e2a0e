"""What the Jetson readers (:mod:`~hwadvisor.importers.tegrastats`,
:mod:`~hwadvisor.importers.jetson_release`) share: the modules hwadvisor knows, with the memory
and CPU cores that tell them apart when a tool names no module.

Memory and CPU cores from NVIDIA's Jetson module specifications (developer.nvidia.com/embedded/
jetson-modules); the catalog rows (``gpus.toml``) hold the GPU figures.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    name: str
    """The GPU catalog row."""
    memory_gib: float
    cpus: int
    orin: bool


MODULES = (
    Module("Jetson AGX Orin 64GB", 64, 12, True),
    Module("Jetson AGX Orin 32GB", 32, 8, True),
    Module("Jetson Orin NX 16GB", 16, 8, True),
    Module("Jetson Orin NX 8GB", 8, 6, True),
    Module("Jetson Orin Nano 8GB", 8, 6, True),
    Module("Jetson Orin Nano 4GB", 4, 6, True),
    Module("Jetson AGX Xavier", 32, 8, False),
    Module("Jetson AGX Xavier", 16, 8, False),
    Module("Jetson AGX Xavier", 64, 8, False),
    Module("Jetson Xavier NX", 8, 6, False),
    Module("Jetson Xavier NX", 16, 6, False),
)


def modules_for(memory_gib: float, cpus: int, orin: bool | None) -> list[Module]:
    """The modules with ``cpus`` cores whose memory is within 10 % above what Linux reports
    (the kernel and firmware keep some), of the Orin or earlier family when known."""
    return [
        m
        for m in MODULES
        if m.cpus == cpus
        and memory_gib <= m.memory_gib * 1.005
        and memory_gib >= m.memory_gib * 0.9
        and (orin is None or m.orin == orin)
    ]
