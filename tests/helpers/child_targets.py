"""Functions the isolation tests run in child processes (importable by path)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any


def echo(value: Any) -> dict[str, Any]:
    print("library noise on stdout")  # must not corrupt the result
    os.write(1, b"C-level noise on fd 1\n")
    return {"echo": value}


def hang(pid_file: str) -> None:
    """Start a grandchild, record both pids, then never return."""
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(pid_file, "w") as handle:
        handle.write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(300)


def boom() -> None:
    raise RuntimeError("probe exploded")


def die() -> None:
    os._exit(7)


def nan() -> float:
    return float("nan")


def sleep_forever() -> None:
    time.sleep(300)


def garbage() -> dict[str, Any]:
    return {"nvml": {"status": 42}, "gpus": "not a list"}


def nvml_two_h100() -> dict[str, Any]:
    """NVML on a fake 2-GPU machine, run in the child like the real probe."""
    from hwadvisor.probes.nvml import collect_nvml
    from tests.fakes.fake_pynvml import FakeGpu, make_fake_pynvml

    gpus = [FakeGpu(), FakeGpu(uuid="GPU-1", serial="2", bus_id="00000000:18:00.0")]
    return collect_nvml(make_fake_pynvml(gpus)).model_dump(mode="json")


def torch_cpu_only() -> dict[str, Any]:
    from hwadvisor.probes.torch_stack import collect_torch
    from tests.fakes.fake_torch import cpu_only

    return collect_torch(cpu_only()).model_dump(mode="json")


def nvml_one_lost() -> dict[str, Any]:
    from hwadvisor.probes.nvml import collect_nvml
    from tests.fakes.fake_pynvml import NVML_ERROR_GPU_IS_LOST, FakeGpu, err, make_fake_pynvml

    gone = FakeGpu(
        uuid="GPU-2", bus_id="00000000:19:00.0", handle_error=err(NVML_ERROR_GPU_IS_LOST)
    )
    gpus = [FakeGpu(), gone]
    return collect_nvml(make_fake_pynvml(gpus)).model_dump(mode="json")


def count_then_hang(n: int, hang_after: bool) -> Any:
    for i in range(n):
        yield {"i": i}
    if hang_after:
        time.sleep(300)
    return None


def fake_bench(plan: dict[str, Any]) -> Any:
    """A benchmark child that follows the event protocol; cases can hang or crash on request."""
    for case in plan["cases"]:
        params = case["params"]
        yield {"event": "start", "id": case["id"]}
        if params.get("hang"):
            time.sleep(300)
        if params.get("crash"):
            os._exit(3)
        data = {
            "case": case["case"],
            "device": case["device"],
            "precision": case["precision"],
            "unit": "GFLOP/s",
            "best": params.get("value", 1.0),
            "median": params.get("value", 1.0),
            "blocks": 4,
            "reps_per_block": 1,
        }
        yield {"event": "result", "id": case["id"], "kind": "measurement", "data": data}
        yield {"event": "end", "id": case["id"]}


def hang_nvml() -> None:
    """An NVML probe whose init never returns (pid file from the environment)."""
    hang(os.environ["HWADVISOR_TEST_PID_FILE"])
