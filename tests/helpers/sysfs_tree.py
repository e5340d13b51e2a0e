"""Recorded sysfs trees (``tests/fixtures/system/<name>/``) made whole in a temporary folder.

The repository keeps no symlinks, but sysfs is made of them (``/sys/class/net/eth0`` points into
``/sys/devices/...``, ``device/driver`` at the bound driver). A tree's ``links.txt`` lists them,
one ``path -> target`` a line, relative to the tree; :func:`build` copies the tree and creates
them. A tree's ``errors.txt`` lists reads the kernel refuses, one ``path ERRNO`` a line (the speed
of a link that is not running: ``EINVAL``; ``product_serial`` for a user: ``EACCES``):
:func:`reader` raises them as the kernel would.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from hwadvisor.probes.roots import Roots
from hwadvisor.probes.sysfs import Reader, read_attribute

SYSTEM = Path(__file__).resolve().parent.parent / "fixtures" / "system"

_META = ("links.txt", "errors.txt")


def build(name: str, dest: Path) -> Path:
    """A copy of the recorded tree ``name`` under ``dest``, its symlinks created."""
    source = SYSTEM / name
    tree = dest / name
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns(*_META))
    links = source / "links.txt"
    if links.exists():
        for line in links.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            path, _, target = (part.strip() for part in line.partition(" -> "))
            link = tree / path
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, link)
    return tree


def roots(tree: Path) -> Roots:
    return Roots.under(tree)


def reader(name: str, tree: Path) -> Reader:
    """:func:`read_attribute`, raising the errors ``errors.txt`` of tree ``name`` records."""
    refused: dict[Path, int] = {}
    errors = SYSTEM / name / "errors.txt"
    if errors.exists():
        for line in errors.read_text(encoding="utf-8").splitlines():
            if line.strip():
                path, code = line.split()
                refused[tree / path] = getattr(errno, code)

    def read(path: Path) -> str:
        if path in refused:
            code = refused[path]
            raise OSError(code, os.strerror(code), str(path))
        return read_attribute(path)

    return read
