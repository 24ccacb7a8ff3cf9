"""Run 71: where the 10,000-step command's time between steps goes (issue 11). Water float64, the default path,
2,000 steps, display every 100: wall time of the loop, of the display steps and their parts (the training
metrics' host read, validation, the lcurve line), each timed to the device's end."""
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from train_bench import make_config, parse_case

from deeppot.train.trainer import RunOptions, Trainer

case = parse_case(sys.argv[1] if len(sys.argv) > 1 else "water:float64")
steps = 2000
config = make_config(Path(".peer/inputs"), Path(".peer/data"), case, steps)
workdir = Path(tempfile.mkdtemp())
trainer = Trainer(config, RunOptions(workdir=workdir, device=torch.device("cuda"), cuda_graph=True, progress=False))
spent: dict[str, float] = {}


def timed(obj, name: str, label: str):
    real = getattr(obj, name)

    def wrapper(*args, **kwargs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = real(*args, **kwargs)
        torch.cuda.synchronize()
        spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0
        return out
    setattr(obj, name, wrapper)


timed(trainer, "_display", "display (all)")
timed(trainer, "_validate", "validation")
timed(trainer.loss, "display", "metrics host reads (train + valid)")
timed(trainer, "_save", "save")
torch.cuda.synchronize()
t0 = time.perf_counter()
trainer.run()
torch.cuda.synchronize()
wall = time.perf_counter() - t0
print(f"{case['name']}:{case['precision']}: {steps} steps in {wall:.2f} s ({1e3 * wall / steps:.3f} ms a step)")
for k, v in spent.items():
    print(f"  {k}: {v:.3f} s ({1e3 * v / (steps / 100):.2f} ms a display step)")
