"""Run 261: whole prebuilt-list calls on `main` with the fitting nets' hidden stack (`fitting_stack`, "stack"), with
it at 5 stages ("stack5": 72 KB of shared memory, 255 registers, no spill compiled for sm_90 on the CPU, where 4
stages take 56 KB and 249) and without it ("six": `fitting_gemm`'s six products a net), run 250's
`variant_probe.py` runner; the check that the landed code keeps call 2's gain.
Usage (GPU, repository root): python stack_ab.py water=.mid/water/model.dp ... --rounds 3
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import fitting_stack

STAGES = fitting_stack.STACK_TILE["stages"]


def set_variant(name):
    fitting_stack.ENABLED = name != "six"
    fitting_stack.STACK_TILE["stages"] = 5 if name == "stack5" else STAGES


if __name__ == "__main__":
    main(("six", "stack", "stack5"), set_variant,
         keep=("_persistent_kernel", "_stack_kernel", "_t_bar_kernel", "_grad_kernel", "gemv"))
