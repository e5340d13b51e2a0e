"""The ``hwadvisor`` command's entry point, before the command line is parsed.

For ``hwadvisor report`` the PDF helper is forked first thing, so that WeasyPrint loads while
this process imports typer, pydantic and the models, reads the profile and draws the page (see
:func:`hwadvisor.render.pdf.start_early`). Everything else goes straight to
:func:`hwadvisor.cli.run`.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Console-script entry point."""
    if "report" in sys.argv[1:]:  # no other command loads the PDF module this early
        from hwadvisor.render.pdf import start_early

        start_early(sys.argv[1:])
    from hwadvisor.cli import run as run_cli

    run_cli()


__all__ = ["run"]
