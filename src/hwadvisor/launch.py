"""The ``hwadvisor`` command's entry point, before the command line is parsed.

For ``hwadvisor report`` the PDF helper is forked first thing, so that WeasyPrint loads while
this process imports typer, pydantic and the models, reads the profile and draws the page (see
:func:`hwadvisor.render.pdf.start_early`). Everything else goes straight to
:func:`hwadvisor.cli.run`. Ctrl-C while the modules load is exit 130 with one line, as later.
"""

from __future__ import annotations

import os
import sys

#: ``ExitStatus.INTERRUPTED``, without importing the module that defines it.
_INTERRUPTED = 130


def run() -> None:
    """Console-script entry point."""
    # hwadvisor's models are its own: third-party pydantic plugins (observability hooks) have
    # nothing to see in them, and looking for them scans every installed package's metadata
    # at the first model built (15 ms of each command's start). A user's own setting stands.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        if "report" in sys.argv[1:]:  # no other command loads the PDF module this early
            from hwadvisor.render.pdf import start_early

            start_early(sys.argv[1:])
        from hwadvisor.cli import run as run_cli
    except KeyboardInterrupt:
        stop_helper()
        sys.stderr.write("hwadvisor: error: interrupted\n")
        sys.exit(_INTERRUPTED)
    run_cli()


def stop_helper() -> None:
    """Stop a PDF helper forked at start that nobody took; loads nothing when none was."""
    render_pdf = sys.modules.get("hwadvisor.render.pdf")
    if render_pdf is not None:
        render_pdf.stop_early()


__all__ = ["run", "stop_helper"]
