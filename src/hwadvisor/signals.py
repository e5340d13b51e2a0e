"""Signals: SIGINT, SIGTERM and SIGHUP stop hwadvisor at once, children and all.

Probes run in children with their own process session (a hung driver call must not take the
terminal's Ctrl-C with it), so the terminal's signals never reach them: the parent kills every
child's process group as soon as a signal arrives, whatever state a probe is in, then exits with
128 + the signal's number. Where a library runs Python code from C callbacks (WeasyPrint's font
handling), an exception raised there is printed and swallowed; :func:`deferred` holds signals
across such a call and acts on them after it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from hwadvisor.isolation import kill_all_children

#: The signals that end hwadvisor (Ctrl-C, kill, a closed terminal).
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Stopped(BaseException):
    """A stop signal arrived (a BaseException, like KeyboardInterrupt: no ``except Exception``
    may swallow it on its way out)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


#: The last stop signal acted on: a library that turns the exception raised in its call into
#: its own ("Query interrupted") loses which signal it was; this keeps it.
last_stop: int | None = None


def _stop(signum: int, _frame: FrameType | None) -> None:
    global last_stop
    last_stop = signum
    kill_all_children()
    raise Stopped(signum)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """While inside: every stop signal kills the children and raises :class:`Stopped` (main
    thread only); the previous handlers come back on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in STOP_SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            previous[sig] = signal.signal(sig, _stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals for the duration of a call that cannot be interrupted safely; the first
    one that arrived is acted on (children killed, :class:`Stopped`) when the call returns."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {}
    for sig in STOP_SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            previous[sig] = signal.signal(sig, lambda signum, _frame: arrived.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if arrived:
        kill_all_children()
        if arrived[0] == signal.SIGINT and previous.get(signal.SIGINT) is not _stop:
            raise KeyboardInterrupt  # outside the command line: Python's own Ctrl-C
        raise Stopped(arrived[0])
