"""tanh inside the Triton kernels: the embedding nets', the fitting nets' and their tangents' activation.

All forms are stable for any |z| and without branches:
- float32 on a GPU: 1 - 2 / (1 + e^2z) from the special-function unit's 2^x and 1/x (`ex2.approx.ftz`,
  `rcp.approx.ftz`): five instructions, no sign to restore (e^2z = inf gives 1, 0 gives -1). Triton's own exp and
  `/` are the same approximations with range checks for subnormal arguments. The absolute error is within ~2.5
  float32 eps (it cancels near 0, as 1 - exp(-2|z|) did).
- float32 in Triton's interpreter (the CPU tests), which has no inline PTX: sign(z) (1 - t) / (1 + t),
  t = exp(-2|z|), with exp and `/`.
- float32 of a pre-scaled argument (`_tanh_prescaled`): the caller folds the factor of 2^x into its bias and its
  product's scale, and the skip into the constant 1, saving two of a layer's instructions an element.
- float64: -m / (2 + m), m = exp(-2|z|) - 1 by Cody-Waite reduction and a Taylor polynomial, the division by
  one Newton step from float32's reciprocal and a correction of the quotient; within 2 eps relative of tanh
  everywhere (no cancellation at small |z|).
  libdevice's exp and the IEEE division have a rarely taken slow path each, a branch for every element that keeps
  the compiler from interleaving elements' dependent chains.
Tests: tests/kernels/test_activation.py.
"""

from __future__ import annotations

import math
import os

TANH_SCALE = 2.0 / math.log(2.0)  # exp(2z) = 2^(z TANH_SCALE); `_tanh_prescaled` takes z TANH_SCALE

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the PyTorch path is used
    triton = None

if triton is not None:
    _PTX = tl.constexpr(os.environ.get("TRITON_INTERPRET") != "1")
    _P2LOG2E = tl.constexpr(TANH_SCALE)
    _LOG2E = tl.constexpr(1.0 / math.log(2.0))
    _LN2_HI = tl.constexpr(float.fromhex("0x1.62e42ffp-1"))  # ln 2 in 32 bits: n * _LN2_HI is exact
    _LN2_LO = tl.constexpr(-4.200915072681084729e-11)  # ln 2 - _LN2_HI
    _ROUND = tl.constexpr(6755399441055744.0)  # 1.5 * 2^52: x + _ROUND is x rounded to an integer, in its low bits
    _ROUND_BITS = tl.constexpr(4843621399236968448)  # the bits of _ROUND as an int64
    _INV_FACTORIAL = tl.constexpr(tuple(1.0 / math.factorial(c) for c in range(12)))

    @triton.jit
    def _ex2_ftz(x):
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)

    @triton.jit
    def _rcp_ftz(x):
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)

    @triton.jit
    def _expm1_neg64(x):
        """exp(x) - 1 for float64 x in [-40, 0] (NaN stays NaN), accurate where it is small: e^x = 2^n e^r with
        |r| <= ln 2 / 2, e^r - 1 from its Taylor series to r^13 / 13! (below 1e-17 relative). Python floats go into
        binary operators, which make them float64 constants (`tl.fma` would round them to float32); the compiler
        fuses each multiply-add on the GPU."""
        k = x * _LOG2E + _ROUND
        n = k - _ROUND
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = r * (1.0 / 6227020800.0) + 1.0 / 479001600.0
        for c in tl.static_range(11, 0, -1):
            p = p * r + _INV_FACTORIAL[c]
        scale = ((k.to(tl.int64, bitcast=True) - _ROUND_BITS + 1023) << 52).to(tl.float64, bitcast=True)  # 2^n
        return scale * (p * r) + (scale - 1.0)

    @triton.jit
    def _tanh_abs64(a):
        """tanh(a) for float64 a >= 0 (or NaN) as -m / (2 + m), m = exp(-2a) - 1: no cancellation for small a."""
        m = _expm1_neg64(-2.0 * tl.where(a > 20.0, 20.0, a))  # tanh(20) rounds to 1; NaN passes the where
        d = 2.0 + m
        # 1/d to ~2^-22 from float32, one Newton step to ~2^-44; q's correction leaves q's error times y's (~2^-88),
        # so a second Newton step (before run 253) bought nothing: float64 water T 20.69 -> 20.43 ms, copper 19.25 ->
        # 18.98. libdevice's fast_dividef here (no range check) made the loops longer (ptxas) and T 12% slower.
        y = (1.0 / d.to(tl.float32)).to(tl.float64)
        y = y + y * (1.0 - d * y)
        q = -m * y
        return q + (-m - d * q) * y

    @triton.jit
    def _tanh_abs_plain(a):
        """tanh(a) for a >= 0 with Triton's exp and `/`."""
        t = tl.exp(-2.0 * a)
        return (1.0 - t) / (1.0 + t)

    @triton.jit
    def _tanh(z, FAST64: tl.constexpr = True):
        """tanh(z); float64 without FAST64 keeps libdevice's exp and the IEEE division (see `embedding`'s training
        kernels for where that is faster)."""
        if z.dtype == tl.float64:
            a = tl.abs(z)
            y = _tanh_abs64(a) if FAST64 else _tanh_abs_plain(a)
            y = tl.where(z < 0, -y, y)
        elif _PTX:  # 1 - 2 / (1 + e^2z): no sign to restore; e^2z = inf gives 1
            y = 1.0 - 2.0 * _rcp_ftz(1.0 + _ex2_ftz(z * _P2LOG2E))
        else:
            y = _tanh_abs_plain(tl.abs(z))
            y = tl.where(z < 0, -y, y)
        return y

    @triton.jit
    def _tanh_prescaled(zs, one_plus):
        """tanh(z) + one_plus - 1 (float32) from zs = z TANH_SCALE: one_plus - 2 / (1 + 2^zs), where a layer with a
        skip x passes one_plus = 1 + x (made before the skip's doubling, on half the elements) and its bias times
        TANH_SCALE, so that bias and scale are one multiply-add with its product (`embedding._mm`'s SCALE)."""
        if _PTX:
            return one_plus - 2.0 * _rcp_ftz(1.0 + _ex2_ftz(zs))
        else:  # the interpreter's twin
            return _tanh(zs * (1.0 / _P2LOG2E)) + (one_plus - 1.0)
