"""hwadvisor: is this machine enough for my deep-learning work, and if not, what do I need?"""

#: The one place the version is written: pyproject.toml reads it from here (setuptools'
#: dynamic version), so the package never needs importlib.metadata at start-up.
__version__ = "0.1.0"
