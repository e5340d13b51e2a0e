"""``python -m hwadvisor``."""

from hwadvisor.launch import run

run()
