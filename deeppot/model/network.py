"""DeePMD's dense "resnet" layers: embedding nets and fitting nets (spec §4.3, §5.2).

A layer computes z = φ(x W + b), multiplied by the timestep `idt` when it has one, plus a skip connection when the
width stays the same (x) or doubles ([x, x]). `idt` exists only on layers that have a skip (DeePMD's rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x: Tensor) -> Tensor:
    # DeePMD's "gelu" is the tanh approximation (gelu_tf), not the exact erf form
    return 0.5 * x * (1.0 + torch.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "tanh": torch.tanh,
    "gelu": _gelu_tanh,
    "gelu_tf": _gelu_tanh,
    "relu": torch.relu,
    "relu6": lambda x: torch.clamp(x, 0.0, 6.0),
    "softplus": nn.functional.softplus,
    "sigmoid": torch.sigmoid,
    "silu": nn.functional.silu,
    "linear": lambda x: x,
    "none": lambda x: x,
}


def activation(name: str) -> Callable[[Tensor], Tensor]:
    try:
        return ACTIVATIONS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown activation function {name!r}; choose from {sorted(ACTIVATIONS)}") from None


def has_skip(n_in: int, n_out: int) -> bool:
    return n_out == n_in or n_out == 2 * n_in


def dense_layer(x: Tensor, matrix: Tensor, bias: Tensor, idt: Tensor | None,
                act: Callable[[Tensor], Tensor], resnet: bool) -> Tensor:
    """One DeePMD layer. x: (..., n_in) -> (..., n_out)."""
    z = act(x @ matrix + bias)
    if idt is not None:
        z = z * idt
    if resnet and matrix.shape[1] == matrix.shape[0]:
        z = z + x
    elif resnet and matrix.shape[1] == 2 * matrix.shape[0]:
        z = z + torch.cat([x, x], dim=-1)
    return z


class Layer(nn.Module):
    """Parameters of one layer: matrix (n_in, n_out), bias (n_out,), idt (n_out,) or None."""

    def __init__(self, n_in: int, n_out: int, use_timestep: bool, activation_function: str, resnet: bool,
                 dtype: torch.dtype, generator: torch.Generator | None = None) -> None:
        super().__init__()
        # spec §4.8: W ~ N(0, 1/(n_in+n_out)), b ~ N(0, 1), idt ~ N(0.1, 0.001^2), drawn in that order
        std = 1.0 / math.sqrt(n_in + n_out)
        self.matrix = nn.Parameter(torch.randn(n_in, n_out, generator=generator, dtype=torch.float64).mul(std)
                                   .to(dtype))
        self.bias = nn.Parameter(torch.randn(n_out, generator=generator, dtype=torch.float64).to(dtype))
        self.idt = None
        if use_timestep and has_skip(n_in, n_out):
            idt = torch.randn(n_out, generator=generator, dtype=torch.float64).mul(0.001).add(0.1)
            self.idt = nn.Parameter(idt.to(dtype))
        self.activation_function = activation_function
        self.act = activation(activation_function)
        self.resnet = resnet

    def forward(self, x: Tensor) -> Tensor:
        return dense_layer(x, self.matrix, self.bias, self.idt, self.act, self.resnet)


class MLP(nn.Module):
    """A stack of DeePMD layers.

    Embedding nets: in_dim 1, every layer a resnet layer, no output layer.
    Fitting nets: the same hidden layers plus a linear output layer n_L -> out_dim (no skip, no idt).
    """

    def __init__(self, in_dim: int, neuron: list[int], activation_function: str, resnet_dt: bool,
                 dtype: torch.dtype, out_dim: int | None = None, seed: int | None = None) -> None:
        super().__init__()
        generator = None
        if seed is not None:
            generator = torch.Generator().manual_seed(seed)
        widths = [in_dim, *neuron]
        layers = [Layer(widths[i], widths[i + 1], resnet_dt, activation_function, True, dtype, generator)
                  for i in range(len(neuron))]
        if out_dim is not None:
            layers.append(Layer(widths[-1], out_dim, False, "none", False, dtype, generator))
        self.layers = nn.ModuleList(layers)
        self.in_dim, self.neuron, self.out_dim = in_dim, list(neuron), out_dim
        self.activation_function, self.resnet_dt, self.dtype = activation_function, resnet_dt, dtype

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x
