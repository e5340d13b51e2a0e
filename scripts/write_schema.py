"""Write the profile's JSON Schema where it is published, from the model.

    python scripts/write_schema.py          # write schema/profile.schema.json and the packaged copy
    python scripts/write_schema.py --check  # exit 1 if either file differs from the model

Run it after any change to the models in ``src/hwadvisor/model/``: ``tests/test_schema.py``
fails while the published files are stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hwadvisor.model.jsonschema import SCHEMA_FILE, schema_text  # noqa: E402

TARGETS = (ROOT / "schema" / SCHEMA_FILE, ROOT / "src" / "hwadvisor" / "model" / SCHEMA_FILE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only compare; exit 1 if a file is stale"
    )
    args = parser.parse_args()
    text = schema_text()
    stale = [path for path in TARGETS if not path.is_file() or path.read_text("utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python scripts/write_schema.py")
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
