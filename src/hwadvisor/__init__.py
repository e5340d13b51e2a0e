"""hwadvisor: is this machine enough for my deep-learning work, and if not, what do I need?"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hwadvisor")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
