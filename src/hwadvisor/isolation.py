"""Run a function in a child process with a time limit, and leave nothing behind.

Probes that can hang (NVML stuck in D state, py-cpuinfo under Rosetta) or that must not touch
the parent (CUDA initialisation: a CUDA context does not survive ``fork``) run here. The child is a
fresh interpreter (never ``fork``), in its own process session, so that on timeout the whole group,
grandchildren included, is killed. The result travels back as JSON on a private file descriptor:
whatever the probed libraries print goes to stderr and cannot corrupt it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ChildStatus = Literal["ok", "failed", "timeout"]

#: How long a killed child may take to be reaped before we give up on it.
_REAP_SECONDS = 2.0

_BOOTSTRAP = (
    "import json,os,sys;"
    "sys.path[:0]=json.loads(os.environ.pop('HWADVISOR_CHILD_PATH','[]'));"
    "from hwadvisor.isolation import child_main;child_main()"
)


@dataclass
class ChildResult:
    """What came back from a child: a JSON value, or why there is none."""

    status: ChildStatus
    value: Any = None
    error: str | None = None
    error_type: str | None = None
    seconds: float = 0.0
    stderr_tail: str = ""
    items: list[Any] = field(default_factory=list)
    """What a generator target yielded before it finished, failed or was stopped."""


@dataclass
class _Live:
    procs: set[subprocess.Popen[bytes]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: bool = False
    """Set by :func:`kill_all_children`: no child may start after it (a worker thread that was
    about to start one would otherwise leave an orphan)."""


_LIVE = _Live()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def kill_all_children() -> None:
    """Kill every child still running (used on Ctrl-C: children live in their own session and do
    not receive the terminal's SIGINT)."""
    with _LIVE.lock:
        _LIVE.stopping = True
        procs = list(_LIVE.procs)
    for proc in procs:
        _kill_group(proc)


def allow_children() -> None:
    """Let children start again after :func:`kill_all_children` (for a long-lived caller that
    handled an interruption and goes on; the command line never does)."""
    with _LIVE.lock:
        _LIVE.stopping = False


def run_isolated(
    target: str,
    kwargs: dict[str, Any] | None = None,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    on_item: Callable[[Any], float | None] | None = None,
) -> ChildResult:
    """Call ``target`` (``"package.module:function"``) with ``kwargs`` in a fresh interpreter.

    The function returns a JSON-serialisable value or a pydantic model, or is a generator: then
    each item it yields travels back as soon as it is yielded, ``on_item`` is called with it, and
    all of them are in ``ChildResult.items`` even if the child later hangs or dies. ``on_item`` may
    return a new time limit, in seconds from now (a long case starting, say).

    Returns within the time limit plus the time to kill and reap the child; never raises for what
    the child does.
    """
    request = json.dumps({"target": target, "kwargs": kwargs or {}}).encode()
    child_env = dict(os.environ if env is None else env)
    child_env["HWADVISOR_CHILD_PATH"] = json.dumps([p for p in sys.path if p])
    read_fd, write_fd = os.pipe()
    child_env["HWADVISOR_RESULT_FD"] = str(write_fd)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=child_env,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        return ChildResult(
            "failed", error=f"could not start a child process: {exc}", error_type=type(exc).__name__
        )
    os.close(write_fd)
    with _LIVE.lock:
        stopping = _LIVE.stopping
        _LIVE.procs.add(proc)
    if stopping:
        _kill_group(proc)
        with _LIVE.lock:
            _LIVE.procs.discard(proc)
        os.close(read_fd)
        return ChildResult("failed", error="stopped: hwadvisor is exiting", error_type="Stopped")
    try:
        return _follow(proc, read_fd, request, timeout_s, on_item, started)
    finally:
        # The probe may have started grandchildren in its session; none may outlive it.
        _kill_group(proc)
        with _LIVE.lock:
            _LIVE.procs.discard(proc)


def _follow(
    proc: subprocess.Popen[bytes],
    read_fd: int,
    request: bytes,
    timeout_s: float,
    on_item: Callable[[Any], float | None] | None,
    started: float,
) -> ChildResult:
    lines: queue.Queue[bytes | None] = queue.Queue()
    stderr_chunks: list[bytes] = []

    def read_results() -> None:
        with os.fdopen(read_fd, "rb") as reader:
            for line in reader:
                lines.put(line)
        lines.put(None)

    def read_stderr() -> None:
        _keep_tail(proc.stderr, stderr_chunks)

    threads = [threading.Thread(target=f, daemon=True) for f in (read_results, read_stderr)]
    for thread in threads:
        thread.start()
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(request)
        proc.stdin.close()

    items: list[Any] = []
    final: dict[str, Any] | None = None
    deadline = started + timeout_s
    limit = timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            _kill_group(proc)
            _reap(proc, threads)
            return ChildResult(
                "timeout",
                error=f"did not finish within {limit:g} s and was stopped",
                seconds=time.monotonic() - started,
                stderr_tail=_tail(b"".join(stderr_chunks)),
                items=items,
            )
        if line is None:
            break
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            final = {
                "ok": False,
                "error": f"unreadable result from child: {exc}",
                "error_type": "ProtocolError",
            }
            break
        if isinstance(message, dict) and "item" in message:
            items.append(message["item"])
            if on_item is not None:
                new_limit = on_item(message["item"])
                if new_limit is not None:
                    limit = new_limit
                    deadline = time.monotonic() + new_limit
        else:
            final = message
    _reap(proc, threads)
    elapsed = time.monotonic() - started
    tail = _tail(b"".join(stderr_chunks))
    if final is None:
        how = f"exit status {proc.returncode}"
        if proc.returncode is not None and proc.returncode < 0:
            how = f"killed by signal {-proc.returncode}"
        return ChildResult(
            "failed",
            error=f"child process ended without a result ({how})",
            error_type="ChildCrashed",
            seconds=elapsed,
            stderr_tail=tail,
            items=items,
        )
    if final.get("ok"):
        return ChildResult(
            "ok", value=final.get("value"), seconds=elapsed, stderr_tail=tail, items=items
        )
    return ChildResult(
        "failed",
        error=final.get("error"),
        error_type=final.get("error_type"),
        seconds=elapsed,
        stderr_tail=tail,
        items=items,
    )


def _reap(proc: subprocess.Popen[bytes], threads: list[threading.Thread]) -> None:
    try:
        proc.wait(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:  # still running after its result, or unkillable (D state)
        _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_REAP_SECONDS)
    _kill_group(proc)  # grandchildren holding the pipes open
    for thread in threads:
        thread.join(timeout=_REAP_SECONDS)


def _keep_tail(stream: Any, chunks: list[bytes]) -> None:
    """Read ``stream`` to its end, keeping only its last few chunks in ``chunks`` (a child's
    stderr: what it said last explains how it ended)."""
    assert stream is not None
    while chunk := stream.read(65536):
        chunks.append(chunk)
        del chunks[:-4]


def _tail(data: bytes | None, limit: int = 2000) -> str:
    if not data:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


def _to_jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


def child_main() -> None:
    """Entry point inside the child: read the request, call the target, send the result.

    Each message is one JSON line: ``{"item": ...}`` for every item a generator yields, then
    ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": ..., "error_type": ...}``.
    """
    result_fd = int(os.environ.pop("HWADVISOR_RESULT_FD"))
    # Anything printed on stdout by the probed libraries (C code included) goes to stderr.
    os.dup2(2, 1)
    request = json.loads(sys.stdin.buffer.read() or b"{}")
    module_name, _, func_name = str(request.get("target", "")).partition(":")
    with os.fdopen(result_fd, "wb", buffering=0) as out:

        def send(message: dict[str, Any]) -> None:
            out.write(json.dumps(message, allow_nan=False).encode() + b"\n")

        try:
            func = getattr(importlib.import_module(module_name), func_name)
            value = func(**request["kwargs"])
            if inspect.isgenerator(value):
                for item in value:
                    send({"item": _to_jsonable(item)})
                value = None
            send({"ok": True, "value": _to_jsonable(value)})
        except BaseException as exc:  # noqa: BLE001 - the child reports every failure to the parent
            send(
                {
                    "ok": False,
                    "error": f"{type(exc).__name__}: {exc}",
                    "error_type": type(exc).__name__,
                }
            )
    sys.stdout.flush()
    # Skip interpreter teardown: CUDA/NVML atexit handlers have been seen to hang.
    os._exit(0)


@dataclass
class CommandResult:
    """What a command run by :func:`run_command` left: its output, or why there is none."""

    status: ChildStatus
    stdout: bytes = b""
    returncode: int | None = None
    error: str | None = None
    seconds: float = 0.0
    stderr_tail: str = ""


#: The most of a command's standard output kept (a torch report is a few kB).
MAX_COMMAND_OUTPUT = 8 * 1024 * 1024


def run_command(
    argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None
) -> CommandResult:
    """Run ``argv`` (another program: an interpreter, a wrapper script) as an isolated child:
    its own session, no stdin, a time limit after which the whole group is killed, and killed
    with the others on Ctrl-C (:func:`kill_all_children`). Never raises for what it does.

    The caller reads the result from ``stdout`` (at most :data:`MAX_COMMAND_OUTPUT` bytes)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ if env is None else env),
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return CommandResult("failed", error=f"cannot run {argv[0]!r}: {why}")
    with _LIVE.lock:
        stopping = _LIVE.stopping
        _LIVE.procs.add(proc)
    try:
        if stopping:
            return CommandResult("failed", error="stopped: hwadvisor is exiting")
        return _follow_command(proc, timeout_s, started)
    finally:
        _kill_group(proc)
        with _LIVE.lock:
            _LIVE.procs.discard(proc)


def _follow_command(
    proc: subprocess.Popen[bytes], timeout_s: float, started: float
) -> CommandResult:
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def read_stdout() -> None:
        assert proc.stdout is not None
        kept = 0
        while chunk := proc.stdout.read(65536):
            if kept < MAX_COMMAND_OUTPUT:
                out_chunks.append(chunk[: MAX_COMMAND_OUTPUT - kept])
                kept += len(chunk)

    def read_stderr() -> None:
        _keep_tail(proc.stderr, err_chunks)

    threads = [threading.Thread(target=f, daemon=True) for f in (read_stdout, read_stderr)]
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout=max(0.0, started + timeout_s - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _reap(proc, threads)
        return CommandResult(
            "timeout",
            error=f"did not finish within {timeout_s:g} s and was stopped",
            seconds=time.monotonic() - started,
            stderr_tail=_tail(b"".join(err_chunks)),
        )
    _reap(proc, threads)
    return CommandResult(
        "ok",
        stdout=b"".join(out_chunks),
        returncode=proc.returncode,
        seconds=time.monotonic() - started,
        stderr_tail=_tail(b"".join(err_chunks)),
    )
