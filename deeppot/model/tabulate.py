"""Model compression (spec §10): each embedding net tabulated as a piecewise quintic polynomial of s.

An embedding net maps the scalar s = R_ij,0 to G(s) (M1 values); it is evaluated for every neighbour slot, which
makes it the bulk of the inference cost. Compression replaces it by a table: on a grid of s (stride `step` over
the range the data can reach, then 10*step up to `extrapolate` times the upper bound) each interval holds the
quintic that matches G, G' and G'' at both ends (C2 everywhere inside the table). Evaluation is an interval
lookup and a Horner scheme: no GEMMs.

Tabulation runs in float64 with the derivatives written out through the layers (forward mode, exact up to
rounding). The table is what DeePMD-kit 3.2.0 builds (`deepmd.utils.tabulate.BaseTabulate.build`,
`deepmd.utils.tabulate_math.DPTabulate`); `tests/compress` compares both. Lookup and extrapolation follow
`deepmd.dpmodel.utils.tabulate.tabulate_fusion` of 3.2.0: linear (C1) outside [lower, e*upper].
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from deeppot.model.network import StackedMLP, activation, skip_connection

_C = math.sqrt(2.0 / math.pi)
_A = 0.044715


class CompressionError(ValueError):
    """The model cannot be compressed (or the compression settings are wrong); the message says why."""


def _gelu_jets(z: Tensor) -> tuple[Tensor, Tensor]:
    t = torch.tanh(_C * (z + _A * z**3))
    dt = _C * (1.0 - t * t) * (1.0 + 3 * _A * z * z)  # d tanh(...)/dz
    d1 = 0.5 * (1.0 + t) + 0.5 * z * dt
    d2 = dt + 0.5 * z * (-2.0 * t * dt * _C * (1.0 + 3 * _A * z * z) + _C * (1.0 - t * t) * 6 * _A * z)
    return d1, d2


def _sigmoid_jets(z: Tensor) -> tuple[Tensor, Tensor]:
    s = torch.sigmoid(z)
    return s * (1.0 - s), s * (1.0 - s) * (1.0 - 2.0 * s)


def _silu_jets(z: Tensor) -> tuple[Tensor, Tensor]:
    s = torch.sigmoid(z)
    ds = s * (1.0 - s)
    return s + z * ds, 2.0 * ds + z * ds * (1.0 - 2.0 * s)


def _zero(z: Tensor) -> Tensor:
    return torch.zeros_like(z)


# first and second derivative of each activation, from its input z and output a
ACTIVATION_JETS = {
    "tanh": lambda z, a: (1.0 - a * a, -2.0 * a * (1.0 - a * a)),
    "gelu": lambda z, a: _gelu_jets(z),
    "gelu_tf": lambda z, a: _gelu_jets(z),
    "relu": lambda z, a: ((z > 0).to(z.dtype), _zero(z)),
    "relu6": lambda z, a: (((z > 0) & (z < 6)).to(z.dtype), _zero(z)),
    "softplus": lambda z, a: (torch.sigmoid(z), _sigmoid_jets(z)[0]),
    "sigmoid": lambda z, a: _sigmoid_jets(z),
    "silu": lambda z, a: _silu_jets(z),
    "linear": lambda z, a: (torch.ones_like(z), _zero(z)),
    "none": lambda z, a: (torch.ones_like(z), _zero(z)),
}


def embedding_jets(nets: StackedMLP, k: int, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """y = G(x), y' and y'' of embedding net k at points x (n,), each (n, M1), in float64.

    Per layer z = h W + b, a = phi(z): a' = phi'(z) z', a'' = phi''(z) z'^2 + phi'(z) z'' (z' = h' W), then
    DeePMD's skip adds h, h', h'' (same width or doubled). No timestep: `check_compressible` refuses idt.
    """
    h = x.to(torch.float64)[:, None]
    dh, d2h = torch.ones_like(h), torch.zeros_like(h)
    for layer in nets.layers:
        w, b = layer.matrix[k].to(torch.float64), layer.bias[k, 0].to(torch.float64)
        z, dz, d2z = h @ w + b, dh @ w, d2h @ w
        a = activation(layer.activation_function)(z)
        d1, d2 = ACTIVATION_JETS[layer.activation_function.lower()](z, a)
        da, d2a = d1 * dz, d2 * dz * dz + d1 * d2z
        h, dh, d2h = (skip_connection(p, q, layer.resnet) for p, q in ((h, a), (dh, da), (d2h, d2a)))
    return h, dh, d2h


def quintic_coefficients(y: Tensor, dy: Tensor, d2y: Tensor, h: Tensor) -> Tensor:
    """Coefficients a0..a5 (spec §10.2) of the quintic on each interval [x_k, x_k + h_k] that matches y, y', y''
    at both ends. y, dy, d2y (nspline + 1, M1) at the grid points, h (nspline,) -> (nspline, 6 * M1)."""
    h = h[:, None]
    y0, y1, d0, d1, s0, s1 = y[:-1], y[1:], dy[:-1], dy[1:], d2y[:-1], d2y[1:]
    delta = y1 - y0
    a3 = (20 * delta - (8 * d1 + 12 * d0) * h - (3 * s0 - s1) * h * h) / (2 * h**3)
    a4 = (-30 * delta + (14 * d1 + 16 * d0) * h + (3 * s0 - 2 * s1) * h * h) / (2 * h**4)
    a5 = (12 * delta - 6 * (d1 + d0) * h + (s1 - s0) * h * h) / (2 * h**5)
    return torch.stack([y0, d0, 0.5 * s0, a3, a4, a5], dim=-1).reshape(y0.shape[0], -1)


def env_mat_range(d, min_nbor_dist: float) -> tuple[np.ndarray, np.ndarray]:
    """Per centre type, the integer bounds (lower, upper) of the normalised rows (spec §10.1).

    DeePMD-kit 3.2.0 takes them over all four columns of the first slot's davg/dstd (not the radial column only,
    as the spec's formula reads): the angular columns give lower 0 and upper ceil(w(r_min)/r_min / sigma_a),
    which can widen the range. We follow 3.2.0 so that the tables are the same.
    """
    r_min = float(min_nbor_dist)
    u = min(max((r_min - d.rcut_smth) / (d.rcut - d.rcut_smth), 0.0), 1.0)
    sw = u**3 * (-6 * u * u + 15 * u - 10) + 1
    davg = d.davg[:, 0, :].detach().cpu().double().numpy()  # (ntypes, 4)
    dstd = d.dstd[:, 0, :].detach().cpu().double().numpy()
    lower = np.floor(-davg / dstd).min(axis=1)
    upper = np.ceil((sw / r_min - davg) / dstd).max(axis=1)
    return lower, upper


def net_ranges(d, lower: np.ndarray, upper: np.ndarray) -> list[tuple[float, float] | None]:
    """(lower, upper) of each embedding net, or None for a net without a table.

    Two-sided net (a, b) at a + b*ntypes: the range of centre type a. One-sided net b: the hull over the centre
    types a with sel[a] > 0 (DeePMD-kit indexes sel by the centre type here). Exclusions neither narrow a range
    nor drop a net: padding slots are never excluded, so their rows (-davg/dstd, 0, 0, 0) still reach every net,
    and excluded slots have s = 0, inside every range. (DeePMD-kit 3.2.0 means to skip excluded pairs, but tests
    `(a, b) in exclude_types` against the list of lists read from input.json or a .dp file, which never matches:
    in practice it tabulates every net over these ranges too, and so do we; `tests/compress` compares tables.)
    """
    n = d.ntypes
    if not d.type_one_side:
        return [(float(lower[k % n]), float(upper[k % n])) for k in range(n * n)]
    centres = [a for a in range(n) if d.sel[a] > 0]
    return [(float(lower[centres].min()), float(upper[centres].max())) if centres else None for _ in range(n)]


def table_grid(lower: float, upper: float, step: float, extrapolate: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid points x (at least nspline + 1) and interval widths h (nspline,), built as DeePMD-kit does (NumPy
    arange in float64, so the point count and the interval count agree with its tables)."""
    stride1 = 10 * step
    x = np.arange(lower, upper, step, dtype=np.float64)
    x = np.append(x, np.arange(upper, extrapolate * upper, stride1, dtype=np.float64))
    x = np.append(x, np.array([extrapolate * upper], dtype=np.float64))
    nspline = int((upper - lower) / step + (extrapolate * upper - upper) / stride1)
    h = np.full(nspline, stride1)
    h[:int((upper - lower) / step)] = step
    return x, h


def tabulate_net(nets: StackedMLP, k: int, lower: float, upper: float, step: float,
                 extrapolate: float) -> Tensor:
    """The table data (nspline, 6*M1) of embedding net k over [lower, extrapolate*upper], float64."""
    x, h = table_grid(lower, upper, step, extrapolate)
    nspline = h.shape[0]
    if x.shape[0] < nspline + 1:
        raise CompressionError(f"table grid of {x.shape[0]} points for {nspline} intervals: check step/extrapolate")
    with torch.no_grad():
        y, dy, d2y = embedding_jets(nets, k, torch.as_tensor(x[:nspline + 1], device=nets.layers[0].matrix.device))
    return quintic_coefficients(y, dy, d2y, torch.as_tensor(h, dtype=torch.float64, device=y.device))


def table_lookup(data: Tensor, info: tuple[float, ...], x: Tensor) -> tuple[Tensor, Tensor]:
    """G(x) and dG/dx (..., M1) from one net's table data (nspline, 6*M1) and info (lower, upper, max, step,
    step1, check_frequency); x (...,).

    As DeePMD-kit 3.2.0 (`tabulate_fusion`): x < lower takes interval 0 at its left end, x >= max the last
    interval at its right end, and both extrapolate linearly with the derivative there (C1); inside, interval
    k = floor((x - lower)/step) or K0 + floor((x - upper)/step1) with K0 = floor((upper - lower)/step).
    """
    lower, upper, top, step, step1 = info[:5]
    nspline = data.shape[0]
    k0 = math.floor((upper - lower) / step)
    below, inside1, above = x < lower, x < upper, x >= top
    k = torch.where(inside1, torch.floor((x - lower) / step), k0 + torch.floor((x - upper) / step1))
    k = torch.where(below, 0.0, torch.where(above, nspline - 1.0, k)).clamp(0, nspline - 1)
    tau = torch.where(inside1, x - (k * step + lower), x - ((k - k0) * step1 + upper))
    tau = torch.where(below, 0.0, torch.where(above, top - ((nspline - 1 - k0) * step1 + upper), tau))
    beyond = torch.where(below, x - lower, torch.where(above, x - top, 0.0))
    # Horner from a5 down, one coefficient gathered at a time: no (..., M1, 6) intermediate (6x the size of G)
    coeff = data.reshape(nspline, -1, 6).permute(2, 0, 1).contiguous()  # (6, nspline, M1): ~1 MB a net
    rows = k.long().reshape(-1)
    t = tau.reshape(-1, 1)
    g = coeff[5].index_select(0, rows)
    dg = 5 * g
    for j in (4, 3, 2, 1):
        a = coeff[j].index_select(0, rows)
        g, dg = g * t + a, dg * t + j * a
    g = (g * t + coeff[0].index_select(0, rows)).reshape(*x.shape, -1)
    dg = dg.reshape(*x.shape, -1)
    return g + dg * beyond[..., None], dg


class CompressedTables(nn.Module):
    """The tables of a compressed descriptor: per embedding net, data (nspline, 6*M1) and info (6,) as buffers
    (so `.to(device)` moves them), both empty for a net that is not tabulated; the info also as Python floats,
    so a lookup needs no device-to-host copy."""

    def __init__(self, data: list[Tensor], info: list[Tensor]) -> None:
        super().__init__()
        if len(data) != len(info):
            raise CompressionError(f"{len(data)} compress_data arrays for {len(info)} compress_info arrays")
        self.nnets = len(data)
        for k, (table, values) in enumerate(zip(data, info, strict=True)):
            self.register_buffer(f"data_{k}", table)
            self.register_buffer(f"info_{k}", values)
        self.info_values = [tuple(float(v) for v in values.cpu().reshape(-1)) for values in info]

    def data(self, k: int) -> Tensor:
        return getattr(self, f"data_{k}")

    def info(self, k: int) -> Tensor:
        return getattr(self, f"info_{k}")

    def tabulated(self, k: int) -> bool:
        return self.data(k).numel() > 0

    def embed(self, k: int, s: Tensor) -> tuple[Tensor, Tensor]:
        """G(s) and dG/ds of net k from its table: s (..., 1) -> (..., M1) twice (as `analytic.embed_with_tangent`)."""
        return table_lookup(self.data(k), self.info_values[k], s[..., 0])


def check_compressible(d, min_nbor_dist: float) -> None:
    """Refuse descriptors the tables cannot represent, with the reason."""
    if getattr(d, "tables", None) is not None:
        raise CompressionError("the model is already compressed")
    if any(layer.idt is not None for layer in d.nets.layers):
        raise CompressionError("the embedding nets have resnet_dt (a timestep idt on their skip layers), which "
                               "DeePMD-kit's tabulation does not include: such models cannot be compressed")
    name = d.nets.activation_function.lower()
    if name not in ACTIVATION_JETS:
        raise CompressionError(f"no second derivative for the embedding activation {name!r}")
    if not min_nbor_dist > 0:
        raise CompressionError(f"min_nbor_dist is unknown ({min_nbor_dist}) in this model: give the training "
                               "data (-t input.json) so that it can be computed from the data")


def tabulate(d, min_nbor_dist: float, step: float = 0.01, extrapolate: float = 5.0,
             check_frequency: int = -1) -> CompressedTables:
    """The tables of every embedding net of descriptor d (spec §10.1-10.2), in the descriptor's precision."""
    check_compressible(d, min_nbor_dist)
    if not step > 0 or not extrapolate > 1:
        raise CompressionError(f"step must be > 0 and extrapolate > 1 (got step={step}, extrapolate={extrapolate})")
    lower, upper = env_mat_range(d, min_nbor_dist)
    data, info = [], []
    for k, bounds in enumerate(net_ranges(d, lower, upper)):
        empty = torch.zeros(0, dtype=d.dtype, device=d.davg.device)
        if bounds is None:
            data.append(empty)
            info.append(empty)
            continue
        lo, up = bounds
        data.append(tabulate_net(d.nets, k, lo, up, step, extrapolate).to(d.dtype))
        info.append(torch.tensor([lo, up, up * extrapolate, step, 10 * step, check_frequency], dtype=d.dtype,
                                 device=d.davg.device))
    return CompressedTables(data, info)


class TableNet:
    """Net k read from its table, callable like a `NetView` (s (..., 1) -> G (..., M1)): what the autograd
    reference path (`descriptor_from_blocks`) calls; the lookup is differentiable in s."""

    def __init__(self, tables: CompressedTables, k: int, neuron: list[int]) -> None:
        self.tables, self.k, self.neuron = tables, k, neuron

    def __call__(self, s: Tensor) -> Tensor:
        return self.tables.embed(self.k, s)[0]


class TabulatedNets:
    """The embedding nets of a compressed descriptor as `descriptor_from_blocks` indexes them: net k from its
    table, or the net itself where there is no table (an excluded pair: only padding rows reach it)."""

    def __init__(self, nets: StackedMLP, tables: CompressedTables) -> None:
        self.nets, self.tables = nets, tables

    def __getitem__(self, k: int):
        return TableNet(self.tables, k, self.nets.neuron) if self.tables.tabulated(k) else self.nets[k]
