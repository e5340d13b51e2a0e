"""Measured decode and prefill of random-weight Llama-shaped models on this machine's CPU,
against what the serving model predicts from this machine's measured bandwidth and FLOPs.

    python benchmarks/inference_reference.py [--sizes 100m,300m,1b] [--device cpu|cuda]
                                             [--json FILE]

Builds each model from a ``LlamaConfig`` (transformers, random weights, nothing downloaded),
in fp32 on the CPU (bf16 on a GPU, built there: "8b" is Llama-3-8B's shape), then:
- decode: a manual loop with the KV cache, one token at a time after a 128-token prompt
  (warm-up steps first), batch 1;
- prefill: one forward pass over a 512-token prompt (after a warm-up pass);
- the machine's figures the way the scan measures them (probes/bench/cpu.py): a
  ``torch.add(a, b, alpha=3, out=c)`` triad over 2**25 fp32 elements (12 bytes each) for the
  bandwidth, a square matmul for the FLOPs; the best of several runs.
Prints measured, predicted and their ratio (target: decode within 1.25x, prefill within 1.5x).
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from pathlib import Path
from typing import Any

from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.speed import DeviceSpeed, estimate_speed
from hwadvisor.catalog.llm_geometry import LlmGeometry

SIZES: dict[str, dict[str, int]] = {
    # hidden, layers, heads, kv heads, intermediate (vocab 32000, head_dim = hidden / heads)
    "100m": {"hidden": 768, "layers": 10, "heads": 12, "kv_heads": 4, "intermediate": 2048},
    "300m": {"hidden": 1024, "layers": 20, "heads": 16, "kv_heads": 8, "intermediate": 2816},
    "1b": {"hidden": 2048, "layers": 16, "heads": 32, "kv_heads": 8, "intermediate": 5632},
    "3b": {"hidden": 3072, "layers": 28, "heads": 24, "kv_heads": 8, "intermediate": 8192},
    "8b": {"hidden": 4096, "layers": 32, "heads": 32, "kv_heads": 8, "intermediate": 14336},
}
VOCAB = 32000
PROMPT_DECODE = 128
NEW_TOKENS = 32
PROMPT_PREFILL = 512


def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _best(fn: Any, torch: Any, device: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        _sync(torch, device)
        t0 = time.perf_counter()
        fn()
        _sync(torch, device)
        best = min(best, time.perf_counter() - t0)
    return best


def gpu_speed(torch: Any) -> tuple[DeviceSpeed, str]:
    """The GPU as the serving model sees a scanned one: a device-to-device copy (bytes read
    and written) and a 4096 bf16 matmul, as peak equivalents of the catalog row
    (serving.gpu_figures)."""
    from hwadvisor.advise.serving import gpu_figures
    from hwadvisor.catalog.peaks import find_gpu_peak

    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t = _best(lambda: dst.copy_(src), torch, "cuda", 10)
    copy_gbs = 2.0 * src.numel() / t / 1e9
    m = 4096
    x = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    torch.mm(x, y)
    t = _best(lambda: [torch.mm(x, y) for _ in range(20)], torch, "cuda", 5) / 20
    matmul_gflops = 2.0 * m**3 / t / 1e9
    name = torch.cuda.get_device_name()
    row = find_gpu_peak(name, torch.cuda.get_device_properties(0).total_memory)
    bandwidth, flops, note = gpu_figures(row, copy_gbs, matmul_gflops)
    assert bandwidth and flops
    said = (
        f"cuda: {name}, copy {copy_gbs:,.0f} GB/s, bf16 matmul {matmul_gflops / 1e3:,.0f} "
        f"TFLOPS -> bandwidth {bandwidth / 1e9:,.0f} GB/s, {flops / 1e12:,.0f} TFLOPS ({note})"
    )
    return DeviceSpeed(bandwidth, flops, kind="gpu", note=note), said


def machine_figures(torch: Any, device: str, dtype: Any) -> tuple[float, float]:
    """(bytes/s, FLOP/s) measured like the scan's triad and matmul."""
    n = 1 << 25
    a = torch.randn(n, device=device)
    b = torch.randn(n, device=device)
    c = torch.empty(n, device=device)
    t = _best(lambda: torch.add(a, b, alpha=3.0, out=c), torch, device, 10)
    bandwidth = 12.0 * n / t
    m = 2048 if device == "cpu" else 8192
    x = torch.randn(m, m, device=device, dtype=dtype)
    y = torch.randn(m, m, device=device, dtype=dtype)
    t = _best(lambda: torch.mm(x, y), torch, device, 5)
    return bandwidth, 2.0 * m**3 / t


def build(name: str, torch: Any, device: str, dtype: Any) -> tuple[Any, LlmGeometry]:
    from transformers import LlamaConfig, LlamaForCausalLM

    s = SIZES[name]
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=s["hidden"],
        intermediate_size=s["intermediate"],
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"],
        max_position_embeddings=4096,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):  # an 8B model's random init on the CPU takes minutes
            model = LlamaForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default)
    params = float(sum(p.numel() for p in model.parameters()))
    geom = LlmGeometry(
        name=f"llama-random-{name}",
        params_total=params,
        # the input embedding is a lookup of one row: decode does not read the table
        params_active=params - VOCAB * s["hidden"],
        layers=s["layers"],
        hidden=s["hidden"],
        heads=s["heads"],
        kv_heads=s["kv_heads"],
        head_dim=s["hidden"] // s["heads"],
        vocab=VOCAB,
        intermediate=s["intermediate"],
    )
    return model, geom


def measure(model: Any, torch: Any, device: str) -> tuple[float, float]:
    """(decode tok/s, prefill tok/s)."""
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, VOCAB, (1, PROMPT_DECODE), generator=gen).to(device)
    # transformers 5 calls the KV cache ``cache`` (``past_key_values`` before, still read there)
    key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    with torch.inference_mode():

        def decode(steps: int) -> float:
            out = model(input_ids=prompt, use_cache=True)
            past = getattr(out, key)
            nxt = out.logits[:, -1:].argmax(-1)
            _sync(torch, device)
            t0 = time.perf_counter()
            for _ in range(steps):
                out = model(input_ids=nxt, use_cache=True, **{key: past})
                past = getattr(out, key)
                nxt = out.logits[:, -1:].argmax(-1)
            _sync(torch, device)
            return steps / (time.perf_counter() - t0)

        decode(NEW_TOKENS)  # warm-up: the first steps allocate and pick kernels
        decode_tok_s = max(decode(NEW_TOKENS) for _ in range(2))
        long = torch.randint(0, VOCAB, (1, PROMPT_PREFILL), generator=gen).to(device)
        t = _best(lambda: model(input_ids=long, use_cache=False), torch, device, 3)
    return decode_tok_s, PROMPT_PREFILL / t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100m,300m,1b")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args()
    try:
        import torch
        import transformers  # noqa: F401  (the models are built from its LlamaConfig)
    except ImportError as exc:
        raise SystemExit(
            f"inference_reference: needs torch and transformers ({exc.name} is missing): "
            ".venv/bin/pip install transformers"
        ) from None

    device = args.device
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    quant = find_quant("fp32" if device == "cpu" else "bf16")
    if device == "cuda":
        speed, said = gpu_speed(torch)
        print(said)
    else:
        bandwidth, flops = machine_figures(torch, device, dtype)
        print(
            f"{device}: threads {torch.get_num_threads()}, triad {bandwidth / 1e9:.1f} GB/s, "
            f"matmul {flops / 1e12:.3f} TFLOPS ({str(dtype).split('.')[-1]})"
        )
        speed = DeviceSpeed(bandwidth, flops, kind="cpu")
    bandwidth, flops = speed.bandwidth_bytes_s, speed.flops_s
    print(f"{'model':18} {'params':>7} {'phase':8} {'measured':>9} {'predicted':>9} {'ratio':>6}")
    rows: list[dict[str, Any]] = []
    for name in args.sizes.split(","):
        model, geom = build(name.strip(), torch, device, dtype)
        decode, prefill = measure(model, torch, device)
        est = estimate_speed(
            geom,
            quant,
            context=PROMPT_DECODE + NEW_TOKENS // 2,
            engine="transformers",
            device=speed,
            prompt_tokens=PROMPT_PREFILL,
        )
        for phase, got, want in (
            ("decode", decode, est.decode_tok_s),
            ("prefill", prefill, est.prefill_tok_s),
        ):
            print(
                f"{geom.name:18} {geom.params_total / 1e6:6.0f}M {phase:8} {got:9.1f} "
                f"{want:9.1f} {got / want:6.2f}",
                flush=True,
            )
            rows.append({"model": geom.name, "phase": phase, "measured": got, "predicted": want})
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
        if args.json:  # after each model: a step stopped on time keeps what it measured
            args.json.write_text(
                json.dumps(
                    {
                        "device": device,
                        "bandwidth": bandwidth,
                        "flops": flops,
                        "engine": "transformers",
                        "rows": rows,
                    },
                    indent=1,
                ),
                encoding="utf-8",
            )


if __name__ == "__main__":
    main()
