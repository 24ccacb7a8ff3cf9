"""Run 260: a fitting net's value and dE/dT in three launches (`fitting_tail`, MODE "fused"), in five (the stack
alone, MODE "stack") and as the tree runs them (MODE "tree"), whole prebuilt-list calls timed in one process on
trained models with run 250's `variant_probe.py` runner, profiling the fitting and dE/dT kernels.

Needs `tail.patch` (beside this file) applied: `main` has no `fitting_tail`. Per model and variant: the call's wall
ms (a fresh `DeepPot` each), those kernels' CUDA ms a call (torch.profiler), and the largest deviation of energy and
forces from the first variant's.
Usage (GPU, repository root): python tail_probe.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import fitting_tail

VARIANTS = ("tree", "stack", "fused")


def set_mode(name):
    fitting_tail.MODE = name


if __name__ == "__main__":
    main(VARIANTS, set_mode, keep=("_persistent_kernel", "_stack_kernel", "_fold_kernel", "_t_bar_kernel",
                                   "_grad_kernel", "gemv"))
