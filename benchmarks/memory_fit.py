"""How hwadvisor's memory model agrees with documented practice.

Prints each documented case (src/hwadvisor/catalog/memory_cases.toml: the source of each is
quoted there), what the source says, hwadvisor's verdict and whether the two agree; then the
count. Cases marked known_disagreement are shown apart: they document where the model and the
source part ways. Exit status 1 when any other case disagrees.

    python benchmarks/memory_fit.py [--usable-fraction 0.9] [--sources]

``--usable-fraction`` re-runs every case with another share of device memory usable, to see
which verdicts sit close to the edge.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from hwadvisor.memory import GIB, agrees, fit_verdict, load_memory_cases, memory_per_gpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--usable-fraction",
        type=float,
        default=None,
        help="override every case's usable share of device memory (default: the model's)",
    )
    parser.add_argument("--sources", action="store_true", help="print each case's source too")
    args = parser.parse_args(argv)

    cases = load_memory_cases()
    agreed = disagreed = known = 0
    width = max(len(c.id) for c in cases)
    print(f"{'case':<{width}}  {'source says':<13} {'hwadvisor':<13} need/usable GiB  agrees")
    for case in cases:
        spec = case.spec
        if args.usable_fraction is not None:
            spec = replace(spec, usable_fraction=args.usable_fraction)
        verdict = fit_verdict(spec, case.device_bytes)
        need = memory_per_gpu(spec).total / GIB
        usable = case.device_bytes * spec.usable_fraction / GIB
        ok = agrees(case.expect, verdict)
        if case.known_disagreement:
            known += 1
            mark = "known" if not ok else "AGREES NOW (drop known_disagreement)"
        elif ok:
            agreed += 1
            mark = "yes"
        else:
            disagreed += 1
            mark = "NO"
        print(
            f"{case.id:<{width}}  {case.expect:<13} {verdict.kind:<13} "
            f"{need:6.1f}/{usable:6.1f}    {mark}"
        )
        print(f"{'':<{width}}  claim: {case.claim}")
        print(f"{'':<{width}}  hwadvisor: {verdict.message}")
        if case.known_disagreement:
            print(f"{'':<{width}}  known disagreement: {case.known_disagreement}")
        if args.sources:
            print(f"{'':<{width}}  source: {case.source}")
    total = agreed + disagreed
    print(
        f"\n{agreed} of {total} documented cases agree"
        + (f"; {known} known disagreement(s) shown apart" if known else "")
    )
    return 0 if disagreed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
