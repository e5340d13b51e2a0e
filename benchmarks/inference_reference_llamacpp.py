"""Measured decode and prefill of llama.cpp on this machine's CPU, on random-weight Llama-shaped
GGUFs, against what the serving model predicts from this machine's measured triad and matmul.

    python benchmarks/inference_reference_llamacpp.py [--sizes 100m,300m,1b]
                                                      [--quants Q4_0,Q8_0] [--threads N]
                                                      [--json FILE]

Needs llama-cpp-python (llama.cpp's library, built from source by pip) and gguf, neither a
dependency of hwadvisor: ``.venv/bin/pip install llama-cpp-python gguf``. Nothing is
downloaded: each model is written as an F16 GGUF with random weights and a synthetic
vocabulary (the shapes of ``benchmarks/inference_reference.py``), quantized by llama.cpp,
then timed batch 1: a 512-token prompt in one pass (prefill), and 64 tokens one at a time
after a 128-token prompt (decode); the best of two runs. The machine's figures are measured
as the scan measures them (``inference_reference.machine_figures``: the triad, and the faster
of a bf16 and an fp32 matmul), in the same run.
Prints measured, predicted and their ratio (the serving answer for this machine sizes its
CPU from these figures).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from inference_reference import SIZES, VOCAB, machine_figures

from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.speed import SCANNED_CPU, DeviceSpeed, estimate_speed
from hwadvisor.catalog.llm_geometry import LlmGeometry

PROMPT_DECODE = 128
NEW_TOKENS = 64
PROMPT_PREFILL = 512
FTYPES = {"Q4_0": 2, "Q8_0": 7}
"""llama.cpp's file types (``LLAMA_FTYPE_MOSTLY_*``)."""


def write_gguf(gguf: Any, np: Any, name: str, path: str) -> LlmGeometry:
    """An F16 Llama GGUF of shape ``name`` with random weights and a vocabulary of byte
    tokens and placeholders; its geometry as the serving model reads it."""
    s = SIZES[name]
    h, layers, ff = s["hidden"], s["layers"], s["intermediate"]
    head_dim = h // s["heads"]
    kvd = s["kv_heads"] * head_dim
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    scores += [0.0] * 256
    types += [6] * 256
    while len(tokens) < VOCAB:
        tokens.append(f"\u2581t{len(tokens)}")
        scores.append(-float(len(tokens)))
        types.append(1)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def weight(*shape: int) -> Any:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    norm = np.ones(h, dtype=np.float32)
    w.add_tensor("token_embd.weight", weight(VOCAB, h))
    for i in range(layers):
        for key, value in (
            ("attn_norm", norm),
            ("attn_q", weight(h, h)),
            ("attn_k", weight(kvd, h)),
            ("attn_v", weight(kvd, h)),
            ("attn_output", weight(h, h)),
            ("ffn_norm", norm),
            ("ffn_gate", weight(ff, h)),
            ("ffn_up", weight(ff, h)),
            ("ffn_down", weight(h, ff)),
        ):
            w.add_tensor(f"blk.{i}.{key}.weight", value)
    w.add_tensor("output_norm.weight", norm)
    w.add_tensor("output.weight", weight(VOCAB, h))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    params = float(VOCAB * h * 2 + layers * (2 * h * h + 2 * h * kvd + 3 * h * ff + 2 * h) + h)
    return LlmGeometry(
        name=f"llama-random-{name}",
        params_total=params,
        params_active=params - VOCAB * h,
        layers=layers,
        hidden=h,
        heads=s["heads"],
        kv_heads=s["kv_heads"],
        head_dim=head_dim,
        vocab=VOCAB,
        intermediate=ff,
    )


def measure(llama_cpp: Any, path: str, threads: int) -> tuple[float, float]:
    """(decode, prefill) tokens/s of the GGUF at ``path``, the best of two runs each."""
    llm = llama_cpp.Llama(
        model_path=path, n_ctx=1024, n_threads=threads, n_threads_batch=threads,
        n_batch=PROMPT_PREFILL, n_ubatch=PROMPT_PREFILL, verbose=False,
    )  # fmt: skip
    prompt = [3 + (i * 37) % (VOCAB - 3) for i in range(PROMPT_PREFILL)]
    prefill = decode = 0.0
    for _ in range(2):
        llm.reset()
        t = time.perf_counter()
        llm.eval(prompt)
        prefill = max(prefill, PROMPT_PREFILL / (time.perf_counter() - t))
    for _ in range(2):
        llm.reset()
        llm.eval(prompt[:PROMPT_DECODE])
        t = time.perf_counter()
        for i in range(NEW_TOKENS):
            llm.eval([5 + i])
        decode = max(decode, NEW_TOKENS / (time.perf_counter() - t))
    del llm
    return decode, prefill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100m,300m,1b")
    parser.add_argument("--quants", default="Q4_0,Q8_0")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args()
    try:
        import gguf
        import llama_cpp
        import numpy as np
        import torch
    except ImportError as exc:
        raise SystemExit(
            f"inference_reference_llamacpp: needs llama-cpp-python, gguf, numpy and torch "
            f"({exc.name} is missing): .venv/bin/pip install llama-cpp-python gguf"
        ) from None
    torch.set_num_threads(args.threads)
    # the scan's figures: the triad, and the faster of its bf16 and fp32 matmuls (as the
    # serving answer takes this machine's CPU)
    bandwidth, fp32 = machine_figures(torch, "cpu", torch.float32)
    flops = max(fp32, machine_figures(torch, "cpu", torch.bfloat16)[1])
    print(
        f"cpu: threads {args.threads}, triad {bandwidth / 1e9:.1f} GB/s, matmul "
        f"{flops / 1e12:.3f} TFLOPS (the faster of bf16 and fp32); llama.cpp "
        f"{llama_cpp.__version__}"
    )
    speed = DeviceSpeed(bandwidth, flops, kind=SCANNED_CPU)
    print(f"{'model':18} {'quant':6} {'phase':8} {'measured':>9} {'predicted':>9} {'ratio':>6}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.sizes.split(","):
            f16 = os.path.join(folder, f"{name}-F16.gguf")
            geom = write_gguf(gguf, np, name.strip(), f16)
            for quant in args.quants.split(","):
                path = os.path.join(folder, f"{name}-{quant}.gguf")
                params = llama_cpp.llama_model_quantize_default_params()
                params.ftype = FTYPES[quant]
                params.nthread = args.threads
                if llama_cpp.llama_model_quantize(
                    f16.encode(), path.encode(), ctypes.byref(params)
                ):
                    raise SystemExit(
                        f"inference_reference_llamacpp: llama.cpp could not write {quant}"
                    )
                decode, prefill = measure(llama_cpp, path, args.threads)
                est = estimate_speed(
                    geom, find_quant(quant), context=PROMPT_DECODE + NEW_TOKENS // 2,
                    engine="llama.cpp", device=speed, prompt_tokens=PROMPT_PREFILL,
                )  # fmt: skip
                for phase, got, want in (
                    ("decode", decode, est.decode_tok_s),
                    ("prefill", prefill, est.prefill_tok_s),
                ):
                    print(
                        f"{geom.name:18} {quant:6} {phase:8} {got:9.1f} {want:9.1f} "
                        f"{got / want:6.2f}",
                        flush=True,
                    )
                    rows.append(
                        {"model": geom.name, "quant": quant, "phase": phase, "measured": got,
                         "predicted": want}
                    )  # fmt: skip
                os.remove(path)
            os.remove(f16)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"triad_gb_s": bandwidth / 1e9, "matmul_tflops": flops / 1e12, "rows": rows},
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
