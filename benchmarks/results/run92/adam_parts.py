"""Run 93: where FlatAdam's update time goes (the gradients' copy, the step counts' increment, the kernel) and the
kernel's BLOCK and warps, on the parameter shapes of run 92; each piece replayed from a CUDA graph, us."""
import json
import sys

from deeppot.kernels import adam as kernel
from deeppot.train import adam

sys.path.insert(0, "benchmarks/results/run92")
from adam_flat import MODELS, make, timed


def parts(name: str, dtype, shapes, block: int) -> dict:
    kernel.BLOCK = block
    _, opt = make(adam.FlatAdam, dtype, shapes)
    flat = opt.flats[0]
    live = flat.gather_grads()
    row = {"case": name, "block": block, "whole_us": timed(opt.step), "copy_us": timed(flat.gather_grads),
           "count_us": timed(lambda: flat.steps.add_(live))}
    for warps in (4, 8, 16):
        row[f"kernel_w{warps}_us"] = timed(lambda w=warps: kernel._adam_kernel[(flat.owner.numel(),)](
            flat.param, flat.grad, flat.exp_avg, flat.exp_avg_sq, flat.owner, flat.steps, live, opt._lr,
            opt._hyper, DECOUPLED=False, DECAY=False, LIBDEVICE=True, BLOCK=block, num_warps=w))
    return row


if __name__ == "__main__":
    for name, (dtype, shapes) in MODELS.items():
        for block in (1024, 2048, 4096):
            print(json.dumps(parts(name, dtype, shapes, block)), flush=True)
