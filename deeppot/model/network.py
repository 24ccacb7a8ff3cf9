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


def hasskip_connection(n_in: int, n_out: int) -> bool:
    return n_out == n_in or n_out == 2 * n_in


def dense_layer(x: Tensor, matrix: Tensor, bias: Tensor, idt: Tensor | None,
                act: Callable[[Tensor], Tensor], resnet: bool) -> Tensor:
    """One DeePMD layer. x: (..., n_in) -> (..., n_out)."""
    z = act(x @ matrix + bias)
    return skip_connection(x, z if idt is None else z * idt, resnet)


def _init_layer(n_in: int, n_out: int, timestep: bool, generator: torch.Generator | None) -> tuple[Tensor, ...]:
    """spec §4.8: W ~ N(0, 1/(n_in+n_out)), b ~ N(0, 1), idt ~ N(0.1, 0.001^2), drawn in that order (float64)."""
    w = torch.randn(n_in, n_out, generator=generator, dtype=torch.float64) / math.sqrt(n_in + n_out)
    b = torch.randn(n_out, generator=generator, dtype=torch.float64)
    idt = torch.randn(n_out, generator=generator, dtype=torch.float64) * 0.001 + 0.1 if timestep else None
    return w, b, idt


class StackedLayer(nn.Module):
    """One layer of `nnets` same-shaped nets: matrix (nnets, n_in, n_out), bias and idt (nnets, 1, n_out)."""

    def __init__(self, nnets: int, n_in: int, n_out: int, use_timestep: bool, activation_function: str,
                 resnet: bool, dtype: torch.dtype) -> None:
        super().__init__()
        timestep = use_timestep and hasskip_connection(n_in, n_out)  # DeePMD: idt only where a skip exists
        self.matrix = nn.Parameter(torch.zeros(nnets, n_in, n_out, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(nnets, 1, n_out, dtype=dtype))
        self.idt = nn.Parameter(torch.zeros(nnets, 1, n_out, dtype=dtype)) if timestep else None
        self.activation_function, self.resnet = activation_function, resnet
        self.act = activation(activation_function)

    @torch.no_grad()
    def init_net(self, k: int, generator: torch.Generator | None) -> None:
        w, b, idt = _init_layer(self.matrix.shape[1], self.matrix.shape[2], self.idt is not None, generator)
        self.matrix[k] = w
        self.bias[k, 0] = b
        if self.idt is not None:
            self.idt[k, 0] = idt

    def forward_all(self, x: Tensor) -> Tensor:
        """Every net on its own rows: x (nnets or 1, P, n_in) -> (nnets, P, n_out); one batched GEMM with bias."""
        z = self.act(torch.baddbmm(self.bias, x.expand(self.matrix.shape[0], -1, -1), self.matrix))
        return skip_connection(x, z if self.idt is None else z * self.idt, self.resnet)

    def forward_one(self, x: Tensor, k: int) -> Tensor:
        """Net k on x (..., n_in)."""
        idt = None if self.idt is None else self.idt[k, 0]
        return dense_layer(x, self.matrix[k], self.bias[k, 0], idt, self.act, self.resnet)


def skip_connection(x: Tensor, z: Tensor, resnet: bool) -> Tensor:
    if resnet and z.shape[-1] == x.shape[-1]:
        return z + x
    if resnet and z.shape[-1] == 2 * x.shape[-1]:
        return z + torch.cat([x, x], dim=-1)
    return z


class StackedMLP(nn.Module):
    """`nnets` DeePMD nets of one shape (the per-type embedding or fitting nets), parameters stacked.

    Embedding nets: in_dim 1, every layer a resnet layer, no output layer.
    Fitting nets: the same hidden layers plus a linear output layer n_L -> out_dim (no skip, no idt).
    `forward_all` runs every net at once with batched GEMMs (few kernels: the GPU path);
    `forward_one` runs one net (no wasted arithmetic: the CPU path). `self[k]` is a view of net k.
    """

    def __init__(self, nnets: int, in_dim: int, neuron: list[int], activation_function: str, resnet_dt: bool,
                 dtype: torch.dtype, out_dim: int | None = None, seed: int | None = None) -> None:
        super().__init__()
        widths = [in_dim, *neuron]
        layers = [StackedLayer(nnets, widths[i], widths[i + 1], resnet_dt, activation_function, True, dtype)
                  for i in range(len(neuron))]
        if out_dim is not None:
            layers.append(StackedLayer(nnets, widths[-1], out_dim, False, "none", False, dtype))
        self.layers = nn.ModuleList(layers)
        self.nnets, self.in_dim, self.neuron, self.out_dim = nnets, in_dim, list(neuron), out_dim
        self.activation_function, self.resnet_dt, self.dtype = activation_function, resnet_dt, dtype
        for k in range(nnets):  # each net draws from its own generator, layer after layer
            generator = None if seed is None else torch.Generator().manual_seed(seed + k)
            for layer in self.layers:
                layer.init_net(k, generator)

    def forward_all(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer.forward_all(x)
        return x

    def forward_one(self, x: Tensor, k: int) -> Tensor:
        for layer in self.layers:
            x = layer.forward_one(x, k)
        return x

    def __len__(self) -> int:
        return self.nnets

    def __getitem__(self, k: int) -> NetView:
        if not 0 <= k < self.nnets:
            raise IndexError(k)
        return NetView(self, k)

    def __iter__(self):
        return (self[k] for k in range(self.nnets))


class LayerView:
    """Layer l of net k: matrix (n_in, n_out), bias (n_out,), idt (n_out,) or None, as views of the stack."""

    def __init__(self, layer: StackedLayer, k: int) -> None:
        self.matrix, self.bias = layer.matrix[k], layer.bias[k, 0]
        self.idt = None if layer.idt is None else layer.idt[k, 0]
        self.activation_function, self.resnet = layer.activation_function, layer.resnet


class NetView:
    """Net k of a StackedMLP with the attributes of a single net (for serialisation and tests)."""

    def __init__(self, stack: StackedMLP, k: int) -> None:
        self.stack, self.k = stack, k
        self.layers = [LayerView(layer, k) for layer in stack.layers]
        self.in_dim, self.neuron, self.out_dim = stack.in_dim, stack.neuron, stack.out_dim
        self.activation_function, self.resnet_dt, self.dtype = stack.activation_function, stack.resnet_dt, stack.dtype

    def __call__(self, x: Tensor) -> Tensor:
        return self.stack.forward_one(x, self.k)
