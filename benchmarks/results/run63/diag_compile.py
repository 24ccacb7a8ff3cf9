"""Run 64 diagnosis: the compiled alloy step with the padding-skipping kernels ended in NaN (run 63). Step trainers
side by side (uncompiled fused, compiled fused; CUDA graph or not) and report the first step whose loss is not
finite or departs from the uncompiled one."""

import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, "benchmarks")
from train_bench import make_config, parse_case

from deeppot.train.trainer import RunOptions, Trainer


def trainer(case: str, compiled: bool, graph: bool, steps: int) -> Trainer:
    c = parse_case(case)
    config = make_config(Path(".peer/inputs"), Path(".peer/data"), c, steps)
    options = RunOptions(workdir=Path(tempfile.mkdtemp()), device=torch.device("cuda"), cuda_graph=graph,
                         progress=False, fused_kernels=True, compile=compiled)
    return Trainer(config, options)


def main(case: str, steps: int, validate: bool) -> None:
    runs = {"plain": trainer(case, False, False, steps), "compiled+graph": trainer(case, True, True, steps)}
    for step in range(steps):
        m = {k: t.step(step) for k, t in runs.items()}
        ref = float(m["plain"]["rmse"])
        line = {k: float(v["rmse"]) for k, v in m.items()}
        bad = any(not torch.isfinite(torch.tensor(v)) or abs(v - ref) > 1e-2 * abs(ref) for v in line.values())
        if bad or step % 100 == 0:
            print(step, line, flush=True)
        if step % 100 == 99 and validate:
            val = {k: t._validate(t.lr.value(step))["rmse"] for k, t in runs.items()}
            print("validation", step, val, flush=True)
        if bad:
            for k, t in runs.items():
                print(k, "finite weights:", all(bool(torch.isfinite(p).all()) for p in t.model.parameters()))
            break


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), "validate" in sys.argv[3:])
