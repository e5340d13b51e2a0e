"""Keep a GPU busy with a loop of large bf16 matmuls, as another user's training job would.

    python scripts/gpu_busy.py [--device cuda:0] [--seconds 300] [--n 8192]

Prints ``busy: …`` once the first products have run (the validation waits for that line), then
loops until the time is up or it is stopped (SIGTERM/SIGINT end it at once, exit 0).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args(argv)
    stop = False

    def handler(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    import torch

    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    a = torch.randn(args.n, args.n, device=args.device, dtype=dtype)
    b = torch.randn(args.n, args.n, device=args.device, dtype=dtype)
    cuda = args.device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    end = time.monotonic() + args.seconds
    started = time.perf_counter()
    for _ in range(4):
        torch.matmul(a, b)
    sync()
    rate = 4 * 2 * args.n**3 / (time.perf_counter() - started) / 1e12
    print(f"busy: {args.device} {dtype} matmuls of {args.n}², {rate:,.1f} TFLOP/s", flush=True)
    loops = 0
    while not stop and time.monotonic() < end:
        for _ in range(8):
            torch.matmul(a, b)
        sync()
        loops += 1
    print(f"stopped after {loops * 8} more products", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
