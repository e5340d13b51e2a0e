"""Strict JSON out: no NaN/Infinity, stable key order, atomic writes that never overwrite."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
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
            # mkstemp creates 0600; a report is an ordinary file: the user's umask decides.
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _link_exclusive(Path(tmp_name), path)
    except FileExistsError as exc:
        raise OutputError(
            f"{path} already exists; hwadvisor never overwrites a file: "
            "choose another name or folder"
        ) from exc
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
