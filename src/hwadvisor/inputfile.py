"""The one way hwadvisor reads a file a user hands it: profiles, imports, rules, prices, templates.

Regular files only (a FIFO, a device such as ``/dev/zero`` or a directory is refused at once,
never read: it could block forever or never end), up to a size cap, decoded as UTF-8 (with or
without the BOM some Windows editors write) or UTF-16 (PowerShell's ``>`` writes UTF-16 LE with a
BOM). Every problem is one :class:`~hwadvisor.errors.InputError` line naming the file (exit 5).
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

from hwadvisor.errors import InputError

__all__ = ["MAX_INPUT_BYTES", "decode_text", "read_input"]

#: The largest input hwadvisor reads. A profile of a 16-GPU machine with every benchmark is
#: under 1 MB, a collect_env paste a few kB; 32 MiB leaves room and keeps memory bounded.
MAX_INPUT_BYTES = 32 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def read_input(path: Path, *, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of the regular file at ``path``; :class:`InputError` for anything else."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a directory, not a file") from exc
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno == errno.ENOENT:
            why = "no such file"
        raise InputError(f"{path}: cannot be read: {why}") from exc
    try:
        info = os.fstat(fd)
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise InputError(f"{path}: is {kind}, not a regular file: hwadvisor reads files")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: not a regular file: hwadvisor reads files")
        if info.st_size > max_bytes:
            raise InputError(
                f"{path}: {_size(info.st_size)} is more than an input can be "
                f"({_size(max_bytes)}): is it the right file?"
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:  # grew while being read
                raise InputError(
                    f"{path}: more than an input can be ({_size(max_bytes)}): is it the right file?"
                )
            chunks.append(chunk)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    return decode_text(b"".join(chunks), str(path))


def _looks_utf16(raw: bytes) -> str | None:
    """UTF-16 without a BOM: ASCII text has a NUL in every other byte."""
    sample = raw[:4096]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def decode_text(raw: bytes, origin: str) -> str:
    """``raw`` as text: UTF-8 (BOM or not) or UTF-16 (BOM, or plain ASCII in UTF-16)."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding: str | None = "utf-16"
    elif raw.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    else:
        encoding = _looks_utf16(raw)
    not_text = f"{origin}: not text (neither UTF-8 nor UTF-16; a binary file?)"
    try:
        text = raw.decode(encoding or "utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(not_text) from exc
    if encoding in ("utf-16", "utf-16-le", "utf-16-be") and text:
        # Binary data decodes as UTF-16 more often than not; what hwadvisor reads (tool output,
        # JSON, TOML) is mostly ASCII, so a "UTF-16" file that is not is binary.
        ascii_share = sum(1 for ch in text if ch < "\x80") / len(text)
        if ascii_share < 0.8:
            raise InputError(not_text)
    return text
