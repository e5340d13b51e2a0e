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
import json
import os
import signal
import subprocess
import sys
import threading
import time
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


@dataclass
class _Live:
    procs: set[subprocess.Popen[bytes]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


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
        procs = list(_LIVE.procs)
    for proc in procs:
        _kill_group(proc)


def run_isolated(
    target: str,
    kwargs: dict[str, Any] | None = None,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
) -> ChildResult:
    """Call ``target`` (``"package.module:function"``) with ``kwargs`` in a fresh interpreter.

    The function's return value must be JSON-serialisable or a pydantic model. Returns within
    ``timeout_s`` plus the time to kill and reap the child; never raises for what the child does.
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
        _LIVE.procs.add(proc)

    chunks: list[bytes] = []

    def _drain() -> None:
        with os.fdopen(read_fd, "rb") as reader:
            while chunk := reader.read(65536):
                chunks.append(chunk)

    reader_thread = threading.Thread(target=_drain, daemon=True)
    reader_thread.start()
    try:
        try:
            _, stderr = proc.communicate(request, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                _, stderr = proc.communicate(timeout=_REAP_SECONDS)
            except subprocess.TimeoutExpired:  # unkillable (D state): abandon it, don't hang
                stderr = b""
            return ChildResult(
                "timeout",
                error=f"did not finish within {timeout_s:g} s and was stopped",
                seconds=time.monotonic() - started,
                stderr_tail=_tail(stderr),
            )
        finally:
            # The probe may have started grandchildren in its session; none may outlive it.
            _kill_group(proc)
        reader_thread.join(timeout=_REAP_SECONDS)
    finally:
        with _LIVE.lock:
            _LIVE.procs.discard(proc)

    elapsed = time.monotonic() - started
    tail = _tail(stderr)
    raw = b"".join(chunks)
    if not raw:
        how = f"exit status {proc.returncode}"
        if proc.returncode is not None and proc.returncode < 0:
            how = f"killed by signal {-proc.returncode}"
        return ChildResult(
            "failed",
            error=f"child process ended without a result ({how})",
            error_type="ChildCrashed",
            seconds=elapsed,
            stderr_tail=tail,
        )
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ChildResult(
            "failed",
            error=f"unreadable result from child: {exc}",
            error_type="ProtocolError",
            seconds=elapsed,
            stderr_tail=tail,
        )
    if message.get("ok"):
        return ChildResult("ok", value=message.get("value"), seconds=elapsed, stderr_tail=tail)
    return ChildResult(
        "failed",
        error=message.get("error"),
        error_type=message.get("error_type"),
        seconds=elapsed,
        stderr_tail=tail,
    )


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
    """Entry point inside the child: read the request, call the target, send the result."""
    result_fd = int(os.environ.pop("HWADVISOR_RESULT_FD"))
    # Anything printed on stdout by the probed libraries (C code included) goes to stderr.
    os.dup2(2, 1)
    request = json.loads(sys.stdin.buffer.read() or b"{}")
    module_name, _, func_name = str(request.get("target", "")).partition(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        payload: dict[str, Any] = {"ok": True, "value": _to_jsonable(func(**request["kwargs"]))}
        data = json.dumps(payload, allow_nan=False)
    except BaseException as exc:  # noqa: BLE001 - the child reports every failure to the parent
        data = json.dumps(
            {"ok": False, "error": f"{type(exc).__name__}: {exc}", "error_type": type(exc).__name__}
        )
    with os.fdopen(result_fd, "wb") as out:
        out.write(data.encode())
    sys.stdout.flush()
    # Skip interpreter teardown: CUDA/NVML atexit handlers have been seen to hang.
    os._exit(0)
