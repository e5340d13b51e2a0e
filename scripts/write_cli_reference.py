"""Write docs/cli.md, the command-line reference, from each command's ``--help``.

    python scripts/write_cli_reference.py          # write docs/cli.md
    python scripts/write_cli_reference.py --check  # exit 1 if docs/cli.md differs from --help

Run it after changing a command or an option: ``tests/test_readme.py`` fails while the page is
stale.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

TARGET = ROOT / "docs" / "cli.md"

HEADER = """# Command-line reference

Every command's `--help`, as printed at 80 columns. Written by
`python scripts/write_cli_reference.py` from the commands themselves; do not edit by hand.
Exit codes are explained in the [README](../README.md#exit-codes); how to read the output of
`scan` and `advise` in [commands.md](commands.md).
"""


def command_paths() -> list[list[str]]:
    """Every command and group, depth first, in the order ``--help`` lists them."""
    import typer.main

    from hwadvisor.cli import app

    root = typer.main.get_command(app)
    paths: list[list[str]] = []

    def visit(command: Any, path: list[str]) -> None:
        paths.append(path)
        if hasattr(command, "list_commands"):  # a group (typer's own copy of click's)
            ctx = command.context_class(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    visit(sub, [*path, name])

    visit(root, [])
    return paths


def help_text(path: list[str]) -> str:
    """``hwadvisor PATH --help`` at 80 columns."""
    from hwadvisor.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*path, "--help"])
    if code != 0:
        raise SystemExit(f"hwadvisor {' '.join(path)} --help exited {code}")
    return out.getvalue()


def reference() -> str:
    os.environ["COLUMNS"] = "80"
    parts = [HEADER]
    paths = command_paths()
    parts.append("Commands: " + ", ".join(f"[`{' '.join(p)}`](#{_anchor(p)})" for p in paths[1:]))
    parts.append("")
    for path in paths:
        title = " ".join(["hwadvisor", *path])
        parts += [f"## {title}", "", "```text", help_text(path).rstrip(), "```", ""]
    return "\n".join(parts)


def _anchor(path: list[str]) -> str:
    return "-".join(["hwadvisor", *path])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    args = parser.parse_args()
    text = reference()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/{Path(__file__).name}")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
