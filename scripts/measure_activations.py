"""Count the activations a conv net keeps for its backward pass, per image, as the memory and
traffic models use them (``activation_bytes_per_sample``).

    python scripts/measure_activations.py [MODEL ...] [--size 224] [--precision mixed|fp32]

Needs torch and torchvision (not hwadvisor dependencies: a tool for whoever adds a conv net
to the calibration table or the presets). For each torchvision model: training mode, a batch of
4 and a batch of 2 at ``--size``² under autocast (bfloat16 on a CPU, the same 2 bytes an fp16
GPU run keeps) or in fp32; ``torch.autograd.graph.saved_tensors_hooks`` sums the distinct
storages the forward pass saves; the difference over 2 is one image's (the weights' own 16-bit
copies, saved once per batch, cancel out). The figure is the stored activations only, not the
transient gradients a backward pass adds.
"""

from __future__ import annotations

import argparse
import sys

DEFAULT_MODELS = (
    "resnet50",
    "resnet101",
    "resnet152",
    "efficientnet_b0",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "densenet121",
    "vgg16",
    "inception_v3",
    "convnext_tiny",
    "swin_b",
)


def saved_bytes(model: object, batch: int, size: int, mixed: bool) -> int:
    import torch

    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.randn(batch, 3, size, size)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if mixed:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)  # type: ignore[operator]
        else:
            out = model(x)  # type: ignore[operator]
    del out
    return sum(seen.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--precision", choices=("mixed", "fp32"), default="mixed")
    args = parser.parse_args()
    try:
        import torch
        import torchvision.models as tvm
    except ImportError as exc:
        print(f"error: needs torch and torchvision ({exc})", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    mixed = args.precision == "mixed"
    print(f"# activations kept for backward per image, {args.size}², {args.precision}")
    for name in args.models:
        kwargs = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
        size = 299 if name == "inception_v3" and args.size == 224 else args.size
        model = getattr(tvm, name)(**kwargs)
        model.train()
        params = sum(p.numel() for p in model.parameters())
        per_image = (saved_bytes(model, 4, size, mixed) - saved_bytes(model, 2, size, mixed)) / 2
        print(f"{name:22} {params / 1e6:7.1f}M parameters  {per_image / 1e6:8.1f} MB per image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
