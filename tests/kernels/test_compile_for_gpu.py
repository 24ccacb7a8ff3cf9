"""The fused kernels compile for an H100 (sm_90) on a machine without one.

The Triton interpreter (CI's way of running kernels on a CPU) accepts code that Triton's GPU compiler refuses: a
string default of a jit function's parameter ran in the interpreter and broke every fused training step on the GPU
(benchmarks/results run 240). Compiling for the GPU's target needs no GPU, so the main kernel families compile here
as `embed_all` and the atom tiles would launch them, in each precision and products' scheme, and the persistent
fitting products and the fitting nets' hidden stack within an H100's shared memory. The compiler runs in a child
process: this process's Triton may be the interpreter (tests/kernels/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
TRAINING = [(kernel, precision, products) for kernel in ("_embed_fwd_kernel", "_embed_bwd_kernel")
            for precision, products in [("float32", "tf32x3"), ("float32", "f16x3"), ("float32", "tf32"),
                                        ("float64", "ieee")]]
ATOM_TILES = [(kernel, precision, products) for kernel in ("t", "grad")
              for precision, products in [("float32", "tf32x3"), ("float32", "f16x3"), ("float64", "ieee")]]

COMPILE_ALL = """
import json, sys
import torch, triton
import kernel_registers as kr
from deeppot.kernels import atom_tiles, embedding
SHARED_LIMIT = 232448  # an H100's shared memory a program may have (227 KB)
neuron, sel = [25, 50, 100], [46, 92]  # the water example's nets
cases = json.loads(sys.argv[1])
def source(family, kernel, precision, products):
    if family == "fitting":  # the persistent products, the hidden stack
        return kr.persistent_source() if kernel == "persistent" else kr.stack_source()
    if family == "training":
        fn = getattr(embedding, kernel)
        return kr.training_source(fn, neuron, sel, precision, True, products=products), embedding.NUM_WARPS
    tile = atom_tiles._tile_of(products, getattr(torch, precision), kernel)
    return kr.atom_tile_source(kernel, precision, tile, neuron, sel, products, rows=precision == "float32",
                               aligned=True)
results = {}
for case in cases:
    try:
        src, options = source(*case)
        options = options if isinstance(options, dict) else {"num_warps": options}
        shared = triton.compile(src, target=kr.TARGET, options=options).metadata.shared
        results[" ".join(case)] = "compiled" if shared <= SHARED_LIMIT else f"{shared} B of shared memory"
    except Exception as error:
        results[" ".join(case)] = f"{type(error).__name__}: {error}"[-2000:]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def compiled() -> dict[str, str]:
    cases = [("training", *c) for c in TRAINING] + [("atom_tiles", *c) for c in ATOM_TILES] + \
        [("fitting", "persistent", "float32", "f16x3"), ("fitting", "stack", "float32", "f16x3")]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "benchmarks"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", COMPILE_ALL, json.dumps(cases)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_inference_fitting_products_fit_the_shared_memory(compiled):
    """The persistent f16x3 products on their tile take at most what a program may have (229,424 of 232,448 B: a
    deeper pipeline or a larger tile does not launch; run 259's probe of x's float16 parts asked for 262,168)."""
    assert compiled["fitting persistent float32 f16x3"] == "compiled"


def test_inference_fitting_stack_compiles(compiled):
    """The hidden stack (`fitting_stack._stack_kernel`) at its tile, persistent, for water's 240-wide nets."""
    assert compiled["fitting stack float32 f16x3"] == "compiled"


@pytest.mark.parametrize(("kernel", "precision", "products"), TRAINING)
def test_training_embedding_kernels_compile(compiled, kernel, precision, products):
    assert compiled[f"training {kernel} {precision} {products}"] == "compiled"


@pytest.mark.parametrize(("kernel", "precision", "products"), ATOM_TILES)
def test_inference_atom_tile_kernels_compile(compiled, kernel, precision, products):
    assert compiled[f"atom_tiles {kernel} {precision} {products}"] == "compiled"
