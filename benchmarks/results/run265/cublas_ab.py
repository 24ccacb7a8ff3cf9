"""Run 265: whole prebuilt-list calls with dE/dD on cuBLAS from gz1's float16 parts (`fitting_stack.CUBLAS_INPUT_GRAD`,
"cublas") and with `fitting_gemm.product_t` ("product_t"), run 250's `variant_probe.py` runner.
Usage (GPU, repository root): python cublas_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import fitting_stack


def set_variant(name):
    fitting_stack.CUBLAS_INPUT_GRAD = name == "cublas"


if __name__ == "__main__":
    main(("product_t", "cublas"), set_variant,
         keep=("_persistent_kernel", "_stack_kernel", "_t_bar_kernel", "gemm", "xmma", "Kernel", "elementwise"))
