"""Strict JSON out: no NaN/Infinity, stable key order, atomic writes that never overwrite."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hwadvisor.errors import OutputError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} in JSON output")


def to_json(model: BaseModel) -> str:
    """Serialise a model as strict, indented JSON (validated: it parses back without NaN)."""
    text = model.model_dump_json(indent=2)
    json.loads(text, parse_constant=_reject_constant)  # a guard, cheap next to the scan
    return text + "\n"


def write_new_file(path: Path, text: str | bytes) -> Path:
    """Write ``text`` (or bytes) to ``path`` atomically; fail if ``path`` already exists.

    The data goes to a temporary file in the same folder, is flushed to disk, then linked into
    place: readers never see a half-written file, an existing file is never replaced, and an
    interrupted write leaves nothing but (at most) the temporary file, which is removed.
    """
    try:
        return _write_via_temp(path, text, _link_exclusive)
    except FileExistsError as exc:
        raise OutputError(
            f"{path} already exists; hwadvisor never overwrites a file: "
            "choose another name or folder"
        ) from exc


def replace_file(path: Path, text: str | bytes) -> Path:
    """Write ``text`` to ``path``, replacing it atomically: the temporary file (named
    ``.<name>.<random>.tmp``) is renamed over ``path``. A reader sees the old file or the new
    one, never half of one; a failed write leaves the old file as it was. For files that exist
    to be replaced (a node_exporter textfile), never for reports."""
    if path.is_dir():
        raise OutputError(f"{path} is a folder: name the file to write")
    return _write_via_temp(path, text, os.replace)


def _write_via_temp(path: Path, text: str | bytes, place: Callable[[Path, Path], None]) -> Path:
    """Write to a temporary file beside ``path`` (mode from the umask, flushed to disk), then
    ``place(temporary, path)``; the temporary file never outlives a failure."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create output folder {folder}: {exc.strerror or exc}") from exc
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        data = text.encode("utf-8") if isinstance(text, str) else text
        if hasattr(os, "fchmod"):
            # mkstemp creates 0600; an output is an ordinary file (node_exporter often runs as
            # another user): the user's umask decides.
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        place(Path(tmp_name), path)  # a link leaves the temporary name to remove below
    except FileExistsError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _link_exclusive(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # atomic, and fails with EEXIST instead of replacing
    except OSError as exc:
        if exc.errno in (errno.EEXIST,):
            raise FileExistsError(errno.EEXIST, "File exists", str(dst)) from exc
        if exc.errno not in (
            errno.EPERM,
            errno.ENOTSUP,
            errno.EOPNOTSUPP,
            errno.EXDEV,
            errno.EMLINK,
        ):
            raise
        # No hard links on this filesystem: check then rename (a tiny race, never a torn file).
        if dst.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(dst)) from exc
        os.replace(src, dst)


def write_unique(folder: Path, stem: str, suffix: str, text: str) -> Path:
    """Write to ``folder/stem.suffix``, or ``stem-2.suffix`` ... if that name is taken."""
    for attempt in range(1, 1000):
        name = f"{stem}{suffix}" if attempt == 1 else f"{stem}-{attempt}{suffix}"
        try:
            return write_new_file(folder / name, text)
        except OutputError as exc:
            if not isinstance(exc.__cause__, FileExistsError):
                raise
    raise OutputError(f"too many files named {stem}* in {folder}")
