"""Profiles through log streams: ``hwadvisor fleet emit`` writes a profile as a few short,
checked lines that log pipelines keep intact, and ``hwadvisor fleet ingest`` finds profiles in
a log stream (``kubectl logs --prefix``, a pod's log file under ``/var/log/pods``, a log agent's
output) and puts them back together.

A line of format 1::

    hwadvisor-profile v1 <id> <i>/<n> <crc> <payload>

- ``id``: 16 hex digits, the start of the SHA-256 of the profile's compact JSON, which the lines
  carry: every line of one profile has it, and the joined profile is checked against it;
- ``i/n``: the line's place (from 1) and how many lines the profile has;
- ``crc``: 8 hex digits, the CRC-32 of ``<id> <i>/<n> <payload>``: a line cut short or changed
  on its way is found;
- ``payload``: the ``i``-th piece of the base64 of the zlib-compressed compact JSON.

A line is found wherever it starts in a log line, so the prefixes log tools add (kubectl's
``[pod/NAME/CONTAINER]``, RFC 3339 time stamps, CRI log files' ``TIME stdout F``, others) do not
matter. A profile printed whole on one line (``{"schema_version":…}``, as older collectors
did) is read too. Everything else in the stream is someone else's log line, and is passed over.

This module only parses and writes text: the fleet store (:mod:`hwadvisor.fleet.store`) stores
what it finds.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hwadvisor.fleet.linesize import DEFAULT_LINE_BYTES, MAX_LINE_BYTES, MIN_LINE_BYTES

MARKER = "hwadvisor-profile"
#: The format of the lines this hwadvisor writes and reads.
FORMAT = 1

#: A log line (partial lines joined) longer than this is no profile's: a profile of a 16-GPU
#: machine with every benchmark is under 1 MB.
MAX_LINE = 4 * 1024 * 1024
#: The largest profile a stream may hold, decompressed.
MAX_PROFILE = 16 * 1024 * 1024
#: The most lines one profile may be cut into.
MAX_PARTS = 100_000

_MARKER_B = MARKER.encode("ascii") + b" v"
_CHUNK_RE = re.compile(
    rb"hwadvisor-profile v(\d{1,9}) ([0-9a-f]{16}) (\d{1,9})/(\d{1,9}) ([0-9a-f]{8}) "
    rb"([A-Za-z0-9+/=]*)"
)
_VERSION_RE = re.compile(rb"hwadvisor-profile v(\d{1,9})(?: (\S{1,64}))?")
_JSON_START = b'{"schema_version":'

# The prefixes log tools put before a line.
_KUBECTL_RE = re.compile(rb"\[((?:pod/)?[^\]\s/]{1,253}/[^\]\s]{1,253})\] ")
_TIME_RE = re.compile(
    rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?: |$)"
)
_CRI_RE = re.compile(rb"(stdout|stderr) ([PF])(?::\S*)?(?: |$)")

#: What the stream held for a temporary copy of standard input.
_STDIN_DIR = "hwadvisor-stdin-"


def display_name(path: str) -> str:
    """The name a file of the stream is known by: ``-`` for standard input's copy."""
    parent, name = os.path.split(path)
    return "-" if name == "-" and os.path.basename(parent).startswith(_STDIN_DIR) else path


@contextlib.contextmanager
def stdin_sources(sources: list[Path], stdin: IO[bytes] | None = None) -> Iterator[list[Path]]:
    """``sources`` with ``-`` replaced by a temporary copy of standard input (read whole
    first, so that worker processes can read it too; named ``-`` in the fleet)."""
    if Path("-") not in sources:
        yield sources
        return
    folder = tempfile.mkdtemp(prefix=_STDIN_DIR)
    try:
        copy = Path(folder) / "-"
        with copy.open("wb") as out:
            shutil.copyfileobj(stdin or sys.stdin.buffer, out, 1024 * 1024)
        yield [copy if s == Path("-") else s for s in sources]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Writing


def encode(doc: dict[str, Any], line_bytes: int = DEFAULT_LINE_BYTES) -> list[str]:
    """The lines (each with its newline, at most ``line_bytes`` bytes) that carry ``doc``."""
    if not MIN_LINE_BYTES <= line_bytes <= MAX_LINE_BYTES:
        raise ValueError(f"line_bytes must be {MIN_LINE_BYTES:,} to {MAX_LINE_BYTES:,}")
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    pid = hashlib.sha256(raw).hexdigest()[:16]
    payload = base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
    count = 1
    while True:
        # The header with the widest "i/n" of this count, and the newline.
        room = line_bytes - len(f"{MARKER} v{FORMAT} {pid} {count}/{count} 00000000 \n")
        needed = max(1, -(-len(payload) // room))
        if needed <= count:
            break
        count = needed
    count = needed
    lines = []
    for i in range(count):
        piece = payload[i * room : (i + 1) * room]
        body = f"{pid} {i + 1}/{count} {piece}"
        crc = zlib.crc32(body.encode("ascii"))
        lines.append(f"{MARKER} v{FORMAT} {pid} {i + 1}/{count} {crc:08x} {piece}\n")
    return lines


# --------------------------------------------------------------------------------------------
# Reading


@dataclass
class Part:
    """One profile found in a stream, or why one could not be read."""

    where: str
    """``<stream>#pod/NAME/CONTAINER line N`` or ``<stream>#line N``: its first line."""
    text: str | None = None
    """The profile's JSON."""
    reason: str | None = None


@dataclass
class _Pending:
    """The lines of one profile seen so far."""

    where: str
    count: int
    pieces: dict[int, bytes] = field(default_factory=dict)
    bad: set[int] = field(default_factory=set)
    conflict: str | None = None
    trusted: bool = False
    """Whether ``count`` comes from a line whose checksum holds."""


@dataclass
class StreamStats:
    profiles: int = 0
    skipped: int = 0
    repeats: int = 0
    other_lines: int = 0

    def summary(self) -> str:
        return (
            f"log stream: {self.profiles:,} profiles, {self.skipped:,} skipped, "
            f"{self.repeats:,} repeated, {self.other_lines:,} other lines"
        )


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes, int]]:
    """(line number, line without its end, its length) for each line; a line longer than
    :data:`MAX_LINE` is given cut to that length (with its real length), never held whole."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            length = len(line)
            while True:  # the rest of an overlong line, read and dropped
                more = handle.readline(1024 * 1024)
                length += len(more.rstrip(b"\r\n"))
                if not more or more.endswith(b"\n"):
                    break
            yield number, line[:MAX_LINE], length
            continue
        line = line.rstrip(b"\r\n")
        yield number, line, len(line)


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1_000_000 else f"{n:,} bytes"


class StreamReader:
    """Finds the profiles of one stream, line by line (:meth:`parts`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = StreamStats()
        self._pending: dict[bytes, _Pending] = {}
        self._done: set[bytes] = set()
        self._partial: dict[tuple[str, bytes], tuple[int, list[bytes], int]] = {}
        self._versions: set[tuple[bytes, bytes]] = set()

    def _where(self, pod: str, number: int) -> str:
        return f"{self.name}#{pod} line {number}" if pod else f"{self.name}#line {number}"

    def _skip(self, where: str, reason: str) -> Part:
        self.stats.skipped += 1
        return Part(where, reason=reason)

    def parts(self, lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Part]:
        """Every profile (and every profile that could not be read) of ``lines``."""
        for number, line, length in lines:
            pod, cri, stream, pos = "", b"", b"", 0
            for _ in range(4):  # the prefixes, in whatever order the tools put them
                if m := _KUBECTL_RE.match(line, pos):
                    pod = m.group(1).decode("utf-8", "surrogateescape")
                elif m := _TIME_RE.match(line, pos):
                    if c := _CRI_RE.match(line, m.end()):
                        stream, cri, m = c.group(1), c.group(2), c
                else:
                    break
                pos = m.end()
            message = line[pos:]
            if cri:
                # A CRI log file: a long line is cut into partial (P) lines, then a final (F).
                key = (pod, stream)
                first, pieces, total = self._partial.pop(key, (number, [], 0))
                total += len(message) if length <= MAX_LINE else length
                if total <= MAX_LINE:
                    pieces.append(message)
                else:
                    pieces = []
                if cri == b"P":
                    self._partial[key] = (first, pieces, total)
                    continue
                message, number, length = b"".join(pieces), first, total
            yield from self._message(message, number, length, pod)
        for (pod, _stream), (first, pieces, total) in list(self._partial.items()):
            # A partial line never finished: read as far as it goes (checks find a cut).
            yield from self._message(b"".join(pieces), first, total, pod)
        self._partial.clear()
        yield from self._finish()

    def _message(self, message: bytes, number: int, length: int, pod: str) -> Iterator[Part]:
        where = self._where(pod, number)
        at = message.find(_MARKER_B)
        if at >= 0:
            yield from self._chunk(message, at, where)
            return
        if length > MAX_LINE:
            yield self._skip(
                where,
                f"a line of {_size(length)}: longer than any profile's (4 MiB), not read",
            )
            return
        at = message.find(_JSON_START)
        if at < 0:
            self.stats.other_lines += 1
            return
        body = message[at:].rstrip()
        if not body.endswith(b"}"):
            yield self._skip(
                where,
                "a profile cut off in its line (a log pipeline's line limit? "
                "hwadvisor fleet emit writes lines that fit)",
            )
            return
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            yield self._skip(where, "a profile line that is not UTF-8 (damaged on its way)")
            return
        key = hashlib.sha256(body).digest()[:16]
        if key in self._done:
            self.stats.repeats += 1
            return
        self._done.add(key)
        self.stats.profiles += 1
        yield Part(where, text=text)

    def _chunk(self, message: bytes, at: int, where: str) -> Iterator[Part]:
        m = _CHUNK_RE.match(message, at)
        if m is None or int(m.group(1)) != FORMAT:
            v = _VERSION_RE.match(message, at)
            version = int(v.group(1)) if v else None
            if version is not None and version != FORMAT:
                key = (v.group(1) if v else b"", (v.group(2) if v else None) or b"")
                if key not in self._versions:  # once per profile, not per line
                    self._versions.add(key)
                    yield self._skip(
                        where,
                        f"{MARKER} lines of format {version}: this hwadvisor reads format "
                        f"{FORMAT} (upgrade hwadvisor)",
                    )
                return
            yield self._skip(where, f"an {MARKER} line that cannot be read (cut or damaged)")
            return
        pid, index, count, crc, payload = (
            m.group(2),
            int(m.group(3)),
            int(m.group(4)),
            int(m.group(5), 16),
            m.group(6),
        )
        if pid in self._done:
            self.stats.repeats += index == 1
            return
        pending = self._pending.get(pid)
        if pending is None:
            if not 1 <= count <= MAX_PARTS:
                yield self._skip(where, f"an {MARKER} line of {count:,} parts: damaged")
                return
            pending = self._pending[pid] = _Pending(where, count)
        if zlib.crc32(b"%s %d/%d %s" % (pid, index, count, payload)) != crc:
            pending.bad.add(index)
            return
        if not pending.trusted:  # the count of a damaged line, until a sound one says
            pending.count, pending.trusted = count, True
        if count != pending.count or not 1 <= index <= count:
            pending.conflict = pending.conflict or (
                f"its lines disagree on their count ({pending.count} and {count})"
            )
            return
        known = pending.pieces.get(index)
        if known is not None and known != payload:
            pending.conflict = pending.conflict or (
                f"line {index} of {count} appears twice with different contents"
            )
            return
        pending.pieces[index] = payload
        if len(pending.pieces) == count and pending.conflict is None:
            del self._pending[pid]
            self._done.add(pid)
            yield self._assemble(pid, pending)

    def _assemble(self, pid: bytes, pending: _Pending) -> Part:
        joined = b"".join(pending.pieces[i] for i in range(1, pending.count + 1))
        try:
            packed = base64.b64decode(joined, validate=True)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, MAX_PROFILE)
            if inflater.unconsumed_tail:
                return self._skip(pending.where, f"a profile of more than {_size(MAX_PROFILE)}")
            if not inflater.eof:
                raise zlib.error("incomplete")
        except (binascii.Error, ValueError, zlib.error):
            return self._skip(
                pending.where, f"its {pending.count} lines do not join into a profile (damaged)"
            )
        if hashlib.sha256(raw).hexdigest()[:16].encode("ascii") != pid:
            return self._skip(pending.where, "its joined lines do not match its id (damaged)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return self._skip(pending.where, "a profile that is not UTF-8")
        self.stats.profiles += 1
        return Part(pending.where, text=text)

    def _finish(self) -> Iterator[Part]:
        for pending in self._pending.values():
            missing = [i for i in range(1, pending.count + 1) if i not in pending.pieces]
            if pending.conflict:
                reason = pending.conflict
            elif set(missing) & pending.bad:
                bad = sorted(set(missing) & pending.bad)
                reason = (
                    f"{_numbers(bad)} of its {pending.count} {_verb(bad, 'fails', 'fail')} "
                    "the checksum (cut or damaged on the way)"
                )
            else:
                reason = (
                    f"{_numbers(missing)} of its {pending.count} {_verb(missing, 'is', 'are')} "
                    "missing (lost, or still to be written)"
                )
            yield self._skip(pending.where, reason)
        self._pending.clear()


def _verb(values: list[int], one: str, many: str) -> str:
    return one if len(values) == 1 else many


def _numbers(values: list[int]) -> str:
    shown = ", ".join(str(v) for v in values[:5])
    more = f" and {len(values) - 5:,} more" if len(values) > 5 else ""
    word = "line" if len(values) == 1 else "lines"
    return f"{word} {shown}{more}"


# --------------------------------------------------------------------------------------------
# Recognising a stream


def _is_stream(head: bytes, blocks: Iterator[bytes]) -> bool:
    """Whether a file holds log lines with profiles: a line of :data:`MARKER`, or a profile
    on one line after something else (a prefix, another line) — but not one profile alone."""
    start = len(head) - len(head.lstrip(b"\xef\xbb\xbf \t\r\n"))
    tail = b""
    first = True
    for block in [head, *blocks] if head else blocks:
        data = tail + block
        if _MARKER_B in data:
            return True
        found = data.find(_JSON_START, start + 1 if first else 0)
        if found >= 0 and (found > start or not first):
            return True
        first, start = False, 0
        tail = data[-32:]
    return False


class Stream:
    """A log stream file: its profiles (:meth:`parts`), then what it held (:attr:`stats`)."""

    def __init__(self, path: str, handle: IO[bytes]) -> None:
        self.path = path
        self.name = display_name(path)
        self.handle = handle
        self.reader = StreamReader(self.name)
        self.error: str | None = None

    @property
    def stats(self) -> StreamStats:
        return self.reader.stats

    def parts(self) -> Iterator[Part]:
        """The profiles, as they are found; an error reading the file stops here, and says so
        in :attr:`error`."""
        try:
            with self.handle:
                yield from self.reader.parts(_lines(self.handle))
        except OSError as exc:
            self.error = f"cannot be read: {exc.strerror or exc}"


_SNIFF = 1024 * 1024


def open_stream(path: str) -> Stream | None:
    """The log stream at ``path``, or None where it is not one (or cannot be opened: the
    ordinary reader says why)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None
    try:
        head = handle.read(_SNIFF)
        stream = _is_stream(head, iter(lambda: handle.read(_SNIFF), b""))
        if stream:
            handle.seek(0)
    except OSError:
        stream = False
    if not stream:
        handle.close()
        return None
    return Stream(path, handle)


# --------------------------------------------------------------------------------------------
# fleet emit


def emit_lines(
    source: str, *, line_bytes: int = DEFAULT_LINE_BYTES, full: bool = False
) -> list[str]:
    """The lines ``hwadvisor fleet emit`` prints for the profile file ``source`` (``-``:
    standard input): checked as ``hwadvisor report`` would, serials and addresses left out
    unless ``full``. :class:`~hwadvisor.errors.InputError` for a file that is not a profile."""
    from hwadvisor.errors import InputError, UsageError
    from hwadvisor.inputfile import MAX_INPUT_BYTES, decode_text, read_input
    from hwadvisor.model.load import parse_profile
    from hwadvisor.redact import log_copy

    if source == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("fleet emit: name a profile file, or pipe one in (-)")
        try:
            raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise InputError(f"-: standard input cannot be read: {exc.strerror or exc}") from exc
        if len(raw) > MAX_INPUT_BYTES:
            raise InputError("-: more than a profile can be: is it the right input?")
        text = decode_text(raw, "-")
    else:
        text = read_input(Path(source))
    profile = parse_profile(text, source)
    doc = profile.model_dump(mode="json")
    return encode(doc if full else log_copy(doc), line_bytes)
