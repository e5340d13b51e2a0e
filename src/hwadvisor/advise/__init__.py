"""The advice: from a profile and a workload to a scenario, estimates and a rule trace.

A package of small modules, each stage importing only those before it:

* :mod:`.names` — GPU names as people type them (the catalog row, or the nearest names);
* :mod:`.files` — the rules file (scenarios, hardware ladder, rules) and the prices file;
* :mod:`.trust` — which of a profile's facts and measurements an estimate may rest on;
* :mod:`.rates` — how fast each piece of hardware trains a workload, and how it fits memory;
* :mod:`.engine` — the rules tried in order, the verdict, scale-out, what-ifs, assumptions.

Nothing here imports torch or touches hardware: it works on saved and imported profiles.
"""

from hwadvisor.advise.engine import MAX_SCALE_OUT_GPUS, advise, decide, scale_out
from hwadvisor.advise.files import (
    GB,
    ROLES,
    TYPICAL_MATMUL_EFFICIENCY,
    Candidate,
    Prices,
    Rule,
    Rules,
    RulesError,
    check_prices,
    is_datacenter,
    load_prices,
    load_rules,
    parse_candidate,
)
from hwadvisor.advise.names import nearest_gpus, resolve_gpu
from hwadvisor.advise.rates import (
    Rate,
    candidate_rate,
    memory_needed,
    memory_plan,
    this_machine_rates,
)
from hwadvisor.advise.trust import bench_device, plausible

__all__ = [
    "GB",
    "MAX_SCALE_OUT_GPUS",
    "ROLES",
    "TYPICAL_MATMUL_EFFICIENCY",
    "Candidate",
    "Prices",
    "Rate",
    "Rule",
    "Rules",
    "RulesError",
    "advise",
    "bench_device",
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
    "this_machine_rates",
]
