"""Reading sysfs attributes so that a probe can never hang or read without bound.

An attribute is opened non-blocking (a FIFO planted in a recorded tree, or a device node, must not
stall the scan), must be a regular file, and is read up to :data:`MAX_ATTRIBUTE` bytes. Errors are
``OSError`` with the errno the kernel gave: callers turn ``ENOENT``, ``EACCES`` and ``EINVAL``
into their own reasons.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

#: More than any sysfs attribute holds (a page): a larger "attribute" is not one.
MAX_ATTRIBUTE = 4096

#: A reader: the stripped text of one attribute, or ``OSError``. Probes take one as a parameter
#: so that tests can make a read fail as the kernel would (``EACCES`` for a non-root user).
Reader = Callable[[Path], str]


def read_attribute(path: Path) -> str:
    """The text of one sysfs attribute, stripped (NULs too: device-tree strings end in one)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            # No errno: EINVAL would read as the kernel's "link not running" (speed).
            raise OSError("not a regular file")
        data = os.read(fd, MAX_ATTRIBUTE)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace").strip().strip("\x00").strip()


def why_unreadable(exc: OSError, what: str) -> str:
    """A reason for a fact from ``exc``: missing, root-only, or the error as the kernel put it."""
    if exc.errno == errno.ENOENT:
        return f"no {what}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "readable by root only"
    return f"{what} unreadable: {exc.strerror or exc}"


def link_name(path: Path) -> str | None:
    """The last part of the target of the symlink ``path`` (``device/driver`` → ``mlx5_core``)."""
    try:
        return os.path.basename(os.readlink(path)) or None
    except (OSError, ValueError):
        return None


def is_virtual(path: Path) -> bool:
    """Whether a class entry (``/sys/class/net/docker0``) is a virtual device: it resolves under
    ``devices/virtual`` (bridges, veth, tun, loopback, soft-RoCE)."""
    try:
        target = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return f"{os.sep}devices{os.sep}virtual{os.sep}" in target + os.sep
