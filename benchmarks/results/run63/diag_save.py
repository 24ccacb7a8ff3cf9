"""Run 64 diagnosis: train_bench alloy:float32:compile ends in "NaN detected at batch 1000" although every lcurve row
is finite. Train as train_bench does, checking the weights and the step's metrics around each validation and at the
final save."""

import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, "benchmarks")
from train_bench import make_config, parse_case

from deeppot.train.trainer import RunOptions, Trainer


def finite_weights(t: Trainer) -> list[str]:
    return [n for n, p in t.model.named_parameters() if not bool(torch.isfinite(p).all())]


def main(case: str, steps: int) -> None:
    c = parse_case(case)
    config = make_config(Path(".peer/inputs"), Path(".peer/data"), c, steps)
    t = Trainer(config, RunOptions(workdir=Path(tempfile.mkdtemp()), device=torch.device("cuda"),
                                   cuda_graph=c["graph"], progress=False, fused_kernels=c["fused"]))
    validate, save = t._validate, t._save

    def checked_validate(lr):
        before = finite_weights(t)
        out = validate(lr)
        print("validate: non-finite weights before", before, "after", finite_weights(t), "rmse", out.get("rmse"),
              flush=True)
        return out

    def checked_save(step, metrics):
        print("save", step, "rmse", float(metrics["rmse"]), "non-finite weights", finite_weights(t), flush=True)
        return save(step, metrics)

    t._validate, t._save = checked_validate, checked_save
    try:
        t.run()
    except Exception as err:  # report, then the weights' state
        print("stopped:", type(err).__name__, str(err)[:200])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
