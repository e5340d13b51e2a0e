"""A `hwadvisor scan` whose NVML probe hangs (for the signal tests): run as a script with the
pid file for the hung child as the argument, then signal it."""

from __future__ import annotations

import sys

from hwadvisor import pipeline
from hwadvisor.cli import main


def _hung_targets(pid_file: str) -> None:
    original = pipeline.ScanOptions.__init__

    def init(self: pipeline.ScanOptions, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        self.targets = {**self.targets, "nvml": "tests.helpers.child_targets:hang_nvml"}

    pipeline.ScanOptions.__init__ = init  # type: ignore[method-assign]
    import os

    os.environ["HWADVISOR_TEST_PID_FILE"] = pid_file


if __name__ == "__main__":
    _hung_targets(sys.argv[1])
    sys.exit(main(["scan", "--no-bench", "--probe-timeout", "40", "--json", "-", "-q"]))
