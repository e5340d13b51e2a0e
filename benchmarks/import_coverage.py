"""How many recorded pastes ``hwadvisor import`` reads right: what a person reading each text
would state (GPU count and models, memory, driver, CPU model and cores, hostname, whether it was
cut off), from ``tests/fixtures/import/expected.toml``, against what the import read.

The issue's yardstick: 25 of 83 held-out real pastes read right before the importer registry.
Prints one line per paste that is not read right, then the count per format and in all.

    python benchmarks/import_coverage.py [--all]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.helpers.expectations import check, load  # noqa: E402

FOLDER = ROOT / "tests" / "fixtures" / "import"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="a line for every paste")
    args = parser.parse_args()
    entries = load(FOLDER / "expected.toml")
    verdicts = [check(entry, FOLDER) for entry in entries]
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for verdict in verdicts:
        total[verdict.format] += 1
        right[verdict.format] += verdict.right
        if args.all or not verdict.right:
            status = "right" if verdict.right else "; ".join(verdict.misses)
            print(f"{verdict.file}: {status}")
    print()
    for name in sorted(total):
        print(f"{name:34} {right[name]:3} of {total[name]:3}")
    recorded = sum(
        1 for path in FOLDER.iterdir() if path.suffix != ".md" and path.name != "expected.toml"
    )
    print(
        f"{'all':34} {sum(right.values()):3} of {len(verdicts):3} read right "
        f"({len(verdicts)} of {recorded} recorded pastes have expectations)"
    )
    return 0 if all(v.right for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
