"""The advice: from a profile, a workload and a deadline to the whole answer.

A package of small modules, each stage importing only those before it:

* :mod:`.names` — GPU names as people type them (the catalog row, or the nearest names);
* :mod:`.files` — the rules file (scenario classes, the default deadline, the hardware ladder);
* :mod:`.pricing` — the price catalog and a user's prices: what each option costs;
* :mod:`.trust` — which of a profile's facts and measurements an estimate may rest on;
* :mod:`.rates` — how fast each piece of hardware trains a workload, and how it fits memory;
* :mod:`.figures` — the key figures behind a verdict;
* :mod:`.engine` — the options and their classes, the scenario, the recommendation, the
  verdict, what would change it.

Nothing here imports torch or touches hardware: it works on saved and imported profiles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Where each public name lives. The package loads a module on first use of one of its names
#: (PEP 562): `advise --serve` needs pricing but not the training engine, and every command's
#: start-up pays only for what it uses.
_WHERE = {
    "MAX_SCALE_OUT_GPUS": "engine",
    "advise": "engine",
    "decide": "engine",
    "scale_out": "engine",
    "GB": "files",
    "GIB": "files",
    "ROLES": "files",
    "TYPICAL_MATMUL_EFFICIENCY": "files",
    "Candidate": "files",
    "Rules": "files",
    "RulesError": "files",
    "is_datacenter": "files",
    "load_rules": "files",
    "parse_candidate": "files",
    "scenario_class": "files",
    "ResolvedGpu": "names",
    "nearest_gpus": "names",
    "resolve_gpu": "names",
    "split_count": "names",
    "Prices": "pricing",
    "builtin_prices": "pricing",
    "check_prices": "pricing",
    "load_prices": "pricing",
    "Rate": "rates",
    "candidate_rate": "rates",
    "memory_needed": "rates",
    "memory_plan": "rates",
    "this_machine_rates": "rates",
    "bench_device": "trust",
    "plausible": "trust",
}

if TYPE_CHECKING:
    from hwadvisor.advise.engine import MAX_SCALE_OUT_GPUS, advise, decide, scale_out
    from hwadvisor.advise.files import (
        GB,
        GIB,
        ROLES,
        TYPICAL_MATMUL_EFFICIENCY,
        Candidate,
        Rules,
        RulesError,
        is_datacenter,
        load_rules,
        parse_candidate,
        scenario_class,
    )
    from hwadvisor.advise.names import ResolvedGpu, nearest_gpus, resolve_gpu, split_count
    from hwadvisor.advise.pricing import Prices, builtin_prices, check_prices, load_prices
    from hwadvisor.advise.rates import (
        Rate,
        candidate_rate,
        memory_needed,
        memory_plan,
        this_machine_rates,
    )
    from hwadvisor.advise.trust import bench_device, plausible


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'hwadvisor.advise' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hwadvisor.advise.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "GB",
    "GIB",
    "MAX_SCALE_OUT_GPUS",
    "ROLES",
    "TYPICAL_MATMUL_EFFICIENCY",
    "Candidate",
    "Prices",
    "Rate",
    "ResolvedGpu",
    "Rules",
    "RulesError",
    "advise",
    "bench_device",
    "builtin_prices",
    "candidate_rate",
    "check_prices",
    "decide",
    "is_datacenter",
    "load_prices",
    "load_rules",
    "memory_needed",
    "memory_plan",
    "nearest_gpus",
    "parse_candidate",
    "plausible",
    "resolve_gpu",
    "scale_out",
    "scenario_class",
    "split_count",
    "this_machine_rates",
]
