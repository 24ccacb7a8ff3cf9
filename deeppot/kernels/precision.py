"""Which tensor-core scheme the fused inference kernels use for a float32 model's products.

Both keep float32-level accuracy (22 significant bits in each operand, products summed in float32):
- "tf32x3": Triton's three TF32 products of each operand's two TF32 parts;
- "f16x3": three float16 products (`deeppot.kernels.embedding._mm`): each operand split into a float16 high part
  and a float16 remainder scaled by 2^11. The float16 tensor cores run at twice TF32's rate and the parts take
  half the registers (fewer spills in the embedding kernels), but float16 holds only |x| < 65504, and entries
  below ~6e-5 keep an absolute accuracy of ~1.5e-11 instead of a relative one.

`float32_products` picks "f16x3" for a model whose values provably stay within float16's range (bounds below,
from the weights and the environment statistics, for any neighbour farther than R_FLOOR), on the GPUs where it
was measured (Hopper class, benchmarks/results run 144); "tf32x3" otherwise.
"""

from __future__ import annotations

import functools
import logging
import weakref

import torch
from torch import Tensor

log = logging.getLogger(__name__)

# The largest operand magnitude allowed: half of float16's largest finite value (65504). A split needs both parts
# finite, and the low part (x - hi) 2^11 is at most |x| in size. A quarter (2^14) would keep the alloy trained on the
# shared data on tf32x3: its data's statistics (dstd down to ~0.05) put its descriptor's bound (`descriptor_bound`)
# at ~2.0e4 (benchmarks/results run 247), where fresh models (dstd 1), which the benchmarks time, stay far below.
LIMIT = 2.0**15
# `embedding._mm_stacked` takes an input's high part times 2^11 as a float16 operand: inputs up to this size
STACKED_LIMIT = LIMIT / 2.0**11
WEIGHT_FLOOR = 2.0**-12  # a matrix whose largest weight is below this keeps tf32x3 (its parts would be subnormal)
R_FLOOR = 0.5  # Å: the closest neighbour the environment bound covers (no Deep Potential is trained closer)


def float32_products(model, device: torch.device) -> str:
    """The products' scheme for `model`'s fused inference kernels on `device` ("f16x3" or "tf32x3")."""
    return _scheme(model.descriptor.dtype, device, lambda: f16_range_problem(model), "float32 products")


def embedding_products(d, device: torch.device) -> str:
    """The products' scheme for the training embedding kernels (`embedding.embed_all`) of float32 descriptor d:
    "f16x3" where the nets' weights and tangent bound stay within float16's range, "tf32x3" otherwise. Checked once,
    on the weights the trainer holds when it chooses its kernels (a --restart's are loaded after); the bound is far
    above the real values, which overflow float16 only in a training that has diverged, and then the trainer stops
    on the NaN loss. The backward scales each chunk's incoming gradients by a power of two, so a loss's gradients
    need no bound."""
    return _scheme(d.dtype, device, lambda: _embedding_range_problem(d), "embedding products")


@functools.cache
def hopper_or_newer(index: int) -> bool:
    """Whether CUDA device `index` is of compute capability 9.0 or newer (Hopper class: warp-group GEMMs, TMA),
    where the fused float32 products were measured; cached for the launch paths (`_scheme` asks anew, once a model)."""
    return torch.cuda.get_device_capability(index) >= (9, 0)


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The GPU's streaming multiprocessors, for persistent kernels' grids."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def has_tma(device: torch.device) -> bool:
    """Whether kernels on `device` can read by TMA: sm_90 and newer; Triton's interpreter on a CPU runs it too."""
    return device.type != "cuda" or hopper_or_newer(device.index)


def _scheme(dtype: torch.dtype, device: torch.device, problem, what: str) -> str:
    """"f16x3" for float32 on the GPUs where it was measured, unless problem() names a reason against it."""
    if dtype != torch.float32 or device.type != "cuda" or torch.cuda.get_device_capability(device) < (9, 0):
        return "tf32x3"
    reason = problem()
    if reason is not None:
        log.info("%s as tf32x3, not f16x3: %s", what, reason)
        return "tf32x3"
    return "f16x3"


def _weights_problem(matrices: list[Tensor]) -> str | None:
    """A weight matrix whose largest entry leaves [WEIGHT_FLOOR, LIMIT], or None."""
    for w in matrices:
        largest = float(w.detach().abs().max())
        if not WEIGHT_FLOOR <= largest <= LIMIT:
            return f"a weight matrix of shape {tuple(w.shape)} has largest entry {largest:.3g}"
    return None


def _embedding_range_problem(d) -> str | None:
    reason = _weights_problem([layer.matrix for layer in d.nets.layers])
    if reason is not None:
        return reason
    tangent = embedding_bounds(d)[1]
    return f"the embedding tangent may reach {tangent:.3g}" if tangent > LIMIT else None


def f16_range_problem(model) -> str | None:
    """Why some operand of the model's products could leave float16's range, or None when none can."""
    d, nets = model.descriptor, model.fitting.nets
    matrices = [layer.matrix for layer in nets.layers]
    if not d.compressed:
        matrices += [layer.matrix for layer in d.nets.layers]
    reason = _weights_problem(matrices)
    if reason is not None:
        return reason
    tangent = embedding_bounds(d)[1]
    bounds = {"the embedding tangent": tangent, "the environment rows": environment_bound(d),
              "the descriptor": descriptor_bound(d)}
    bounds.update(fitting_bounds(nets, bounds["the descriptor"]))
    for name, bound in bounds.items():
        if bound > LIMIT:
            return f"{name} may reach {bound:.3g} (float16's range ends at 65504)"
    return None


def environment_bound(d) -> float:
    """A bound on the normalised environment rows (R~ - davg) / dstd for neighbours beyond R_FLOOR: each entry of
    R~ is at most s = 1/r in size."""
    return float(((1.0 / R_FLOOR + d.davg.abs()) / d.dstd.abs()).max())


def descriptor_bound(d) -> float:
    """A bound on the descriptor D[a, b] = T[:, a] . T[:, b] (T = sum_j R~_j^T G_j / nnei, 4 x M1): by
    Cauchy-Schwarz |D[a, b]| <= |T[:, a]| |T[:, b]|, and a column of T has its radial entry within r0 g and its
    three direction entries, as one vector, within r_dir g, since a row's direction part s (x, y, z) / r has norm s
    (so r_dir bounds (s + |davg|) / dstd over the three together). Models trained on the shared data (run 247's
    check): water 8.6e3, copper 7.4e3, the alloy 2.0e4, where 4 (largest entry of a row)^2 g^2 gave 2.4e4, 2.0e4
    and 5.9e4."""
    g_max = embedding_bounds(d)[0]
    s_max, davg, dstd = 1.0 / R_FLOOR, d.davg.abs(), d.dstd.abs()
    r0 = float(((s_max + davg[..., 0]) / dstd[..., 0]).max())
    r_dir = float(((s_max + davg[..., 1:].norm(dim=-1)) / dstd[..., 1:].amin(dim=-1)).max())
    return g_max**2 * (r0**2 + r_dir**2)


def _column_sums(w: Tensor) -> Tensor:
    """max over nets and outputs of sum_in |W[in, out]|: how much a layer can grow a bounded input."""
    return w.detach().abs().sum(dim=1).max()


def _row_sums(w: Tensor) -> Tensor:
    """max over nets and inputs of sum_out |W[in, out]|: the same for the transposed product."""
    return w.detach().abs().sum(dim=2).max()


def embedding_bounds(d) -> tuple[float, float]:
    """Bounds on the embedding nets' outputs G and on their tangent dG/ds (0 for tables, which have no GEMM):
    each tanh layer adds at most 1 to its skip's share, the tangent grows by the layer's column sums."""
    if d.compressed:
        layers = len(d.neuron)
        return float(layers), 0.0
    value, tangent = 0.0, 0.0
    for i, layer in enumerate(d.nets.layers):
        n_in, n_out = layer.matrix.shape[1:]
        skip = i > 0 and n_out in (n_in, 2 * n_in)
        grown = float(_column_sums(layer.matrix)) * (tangent if i > 0 else 1.0)
        value = (value if skip else 0.0) + 1.0
        tangent = (tangent if skip else 0.0) + grown
    return value, tangent


def fitting_bounds(nets, d_max: float) -> dict[str, float]:
    """Bounds on the fitting nets' layer inputs forward and their gradients backward (the products' operands):
    a hidden layer adds at most idt to its skip's share ([h, h] for a doubling layer); backward, g' grows by the
    layer's row sums times gz = g' idt (1 - a^2), plus the skip's share (the two halves' sum when doubling)."""
    value, largest_value, hidden = d_max, d_max, []
    for layer in nets.layers[:-1]:
        n_in, n_out = layer.matrix.shape[1:]
        idt = 1.0 if layer.idt is None else float(layer.idt.detach().abs().max())
        skip = 2.0 if n_out == 2 * n_in else 1.0 if n_out == n_in else 0.0
        hidden.append((layer.matrix, skip, idt))
        value = (value if skip else 0.0) + idt
        largest_value = max(largest_value, value)
    grad = float(_row_sums(nets.layers[-1].matrix))  # dE/dh of the last hidden layer: |w_out|
    largest_grad = grad
    for matrix, skip, idt in reversed(hidden[1:]):
        gz = grad * idt
        grad = float(_row_sums(matrix)) * gz + grad * skip
        largest_grad = max(largest_grad, gz, grad)
    largest_grad = max(largest_grad, grad * hidden[0][2])  # gz of the first layer: dE/dD = gz W^T
    return {"the fitting activations": largest_value, "the fitting gradients": largest_grad}


# Weights' float16 parts: by (id of the tensor they view, view, layout), with a weak reference to that tensor that
# drops the entry when it goes, its version (in-place updates; FlatAdam bumps it for its kernel's) and its data
# pointer (`p.data = ...` keeps the version); a plain dict: a lookup costs ~1 us against ~8 us for torch's weak-keyed
# one, and a fitting net looks up its parts a dozen times a call
_PARTS: dict = {}


def _forget(key: tuple, ref: weakref.ref) -> None:
    if key in _PARTS and _PARTS[key][0] is ref:
        del _PARTS[key]


def weight_parts(w: Tensor, transposed: bool = False) -> tuple[Tensor, Tensor]:
    """W's (or W^T's) float16 parts (hi, lo) as the kernels' `_f16_parts` splits them, W = hi + lo / 2^11, each
    (nets, k, n) contiguous: a product reads them straight into the tensor cores instead of splitting W's tile
    again in every program and k step (`fitting_gemm`; run 172, H100, 65,536 rows: the 1600-wide layer 0.424 ->
    0.393 ms, dE/dD 0.596 -> 0.539). Kept per weight until it changes (`_kept`)."""
    def make():
        return _split((w.detach().transpose(1, 2) if transposed else w.detach()).contiguous())
    return _kept(w, transposed, make)


def within_stacked_limit(w: Tensor) -> bool:
    """Whether w's entries are at most `STACKED_LIMIT` in size; kept per weight until it changes (`_kept`)."""
    return _kept(w, "stacked", lambda: float(w.detach().abs().max()) <= STACKED_LIMIT)


def scaled(b: Tensor, factor: float) -> Tensor:
    """b times factor; kept per tensor until it changes (`_kept`)."""
    return _kept(b, ("scaled", factor), lambda: b.detach() * factor)


def padded_parts(w: Tensor, rows: tuple[int, int, int], cols: tuple[int, int, int]) -> Tensor:
    """W's float16 parts as the embedding kernels hold W in registers (`embedding._load_parts`): (nets, 2, P_in,
    P_out), hi then lo, W's rows and columns in the register layouts `rows` and `cols` ((P, H, NH), see
    `embedding._layouts`), padding zero, so that a kernel reads them with whole unmasked vector loads (run 236,
    H100, water's atom tiles at 98,304 atoms: T 3.77 -> 3.56 ms, the gradient 4.75 -> 4.71; splitting them with
    masked loads of float32 weights in every chunk had taken a fifth of T's loop). Kept per weight until it
    changes."""
    def make():
        padded = torch.nn.functional.pad(w.detach(), (0, 1, 0, 1))  # index -1: a zero row and column
        at_rows, at_cols = (_layout_index(*layout).to(w.device) for layout in (rows, cols))
        return torch.stack(_split(padded[:, at_rows][:, :, at_cols]), dim=1).contiguous()
    return _kept(w, (rows, cols), make)


def _layout_index(p: int, h: int, nh: int) -> Tensor:
    """The logical index each of a layout's p registers holds, -1 for padding (`embedding._columns`)."""
    q = torch.arange(p)
    return torch.where(q % h < nh, (q // h) * nh + q % h, -1)


def _split(w: Tensor) -> tuple[Tensor, Tensor]:
    hi = w.to(torch.float16)
    return hi, ((w - hi.to(w.dtype)) * 2048.0).to(torch.float16)


def _kept(w: Tensor, layout, make, also: tuple[Tensor, ...] = ()):
    """make()'s parts of w, kept per (weight, view, layout) until the weight, or one of `also` (other tensors make()
    reads), changes; not kept from inside a CUDA graph capture (its memory belongs to the graph), where the warm-up
    run before the capture has made them."""
    base = w if w._base is None else w._base
    key = (id(base), w.storage_offset(), tuple(w.shape), tuple(w.stride()), layout)
    # inference tensors keep no version (nor change outside inference mode)
    now = tuple((0 if t.is_inference() else t._version, t.data_ptr()) for t in (w, *also))
    kept = _PARTS.get(key)
    if kept is not None and kept[0]() is base and kept[1] == now:
        return kept[2]
    parts = make()
    if not (w.is_cuda and torch.cuda.is_current_stream_capturing()):
        _PARTS[key] = weakref.ref(base, functools.partial(_forget, key)), now, parts
    return parts
