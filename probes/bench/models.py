"""The small CNN of the training-step cases (CPU and GPU), and its FLOP count.

It is the cats-vs-dogs network of the source material (Chollet, *Deep Learning with Python*,
5.2): 150×150×3 inputs, four 3×3 convolutions (32, 64, 128, 128 filters, no padding) each
followed by ReLU and 2×2 max-pooling, then Dense(512)+ReLU and one logit — 3,453,121 parameters.
torch is passed in, never imported here.
"""

from __future__ import annotations

import math
from typing import Any

#: Channels, height, width of one input sample.
SMALL_CNN_INPUT: tuple[int, int, int] = (3, 150, 150)

_CONV_CHANNELS = (32, 64, 128, 128)
_KERNEL = 3
_HIDDEN = 512


def _conv_shapes() -> list[tuple[int, int, int, int]]:
    """(in channels, out channels, output height, output width) of each convolution."""
    channels, height, width = SMALL_CNN_INPUT
    shapes = []
    for out in _CONV_CHANNELS:
        height, width = height - _KERNEL + 1, width - _KERNEL + 1  # "valid" convolution
        shapes.append((channels, out, height, width))
        channels, height, width = out, height // 2, width // 2  # 2×2 max-pool, floor
    return shapes


def _flat_features() -> int:
    _, out, height, width = _conv_shapes()[-1]
    return out * (height // 2) * (width // 2)


def small_cnn(torch: Any) -> Any:
    """A fresh ``torch.nn.Module``: (N, 3, 150, 150) float inputs → (N, 1) logits."""
    nn = torch.nn
    layers: list[Any] = []
    for cin, cout, _, _ in _conv_shapes():
        layers += [nn.Conv2d(cin, cout, _KERNEL), nn.ReLU(), nn.MaxPool2d(2)]
    layers += [
        nn.Flatten(),
        nn.Linear(_flat_features(), _HIDDEN),
        nn.ReLU(),
        nn.Linear(_HIDDEN, 1),
    ]
    return nn.Sequential(*layers)


class SmallCnnAdam:
    """Adam (no weight decay), the update of ``torch.optim.Adam``'s default single-tensor path.

    Written out because constructing any ``torch.optim`` optimizer imports ``torch._dynamo``
    (sympy and ~800 modules: about 1 s on a 2-core machine), which would eat a CPU case's share
    and is no part of a training step's speed.
    """

    def __init__(
        self,
        torch: Any,
        params: Any,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.torch = torch
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps = lr, betas, eps
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def step(self) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        step_size = self.lr / (1 - beta1**self.steps)
        bias_correction2_sqrt = math.sqrt(1 - beta2**self.steps)
        with self.torch.no_grad():
            for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq, strict=True):
                if p.grad is None:
                    continue
                m.lerp_(p.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
                p.addcdiv_(m, denom, value=-step_size)


def small_cnn_optimizer(torch: Any, model: Any) -> SmallCnnAdam:
    """The optimizer of the training step: Adam at lr 1e-4, as most people train (the source
    used RMSprop, which costs the same per step). Has ``zero_grad()`` and ``step()``."""
    return SmallCnnAdam(torch, model.parameters(), lr=1e-4)


def small_cnn_parameters() -> int:
    """Number of trainable parameters (weights and biases)."""
    convs = sum(_KERNEL * _KERNEL * cin * cout + cout for cin, cout, _, _ in _conv_shapes())
    return convs + (_flat_features() + 1) * _HIDDEN + (_HIDDEN + 1)


def small_cnn_forward_flops_per_sample() -> float:
    """Multiply-adds ×2 of the convolutions and dense layers for one sample (activations,
    pooling and biases are negligible and not counted)."""
    convs = sum(2.0 * _KERNEL * _KERNEL * cin * cout * h * w for cin, cout, h, w in _conv_shapes())
    return convs + 2.0 * _flat_features() * _HIDDEN + 2.0 * _HIDDEN


def small_cnn_train_flops_per_sample() -> float:
    """FLOPs of one training step per sample: the forward pass, then in the backward pass the
    weight gradients of every layer and the input gradients of all but the first (≈ 3× forward,
    exactly what ``torch.utils.flop_counter`` counts). The optimizer's update is negligible."""
    cin, cout, h, w = _conv_shapes()[0]
    first_conv = 2.0 * _KERNEL * _KERNEL * cin * cout * h * w
    return 3.0 * small_cnn_forward_flops_per_sample() - first_conv
