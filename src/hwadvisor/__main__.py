"""``python -m hwadvisor``."""

from hwadvisor.cli import run

run()
