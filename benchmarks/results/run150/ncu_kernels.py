"""Run 150: one 98,304-atom water evaluation on a prebuilt list under Nsight Compute (issues 9, 10): where the
kernels of one configuration stand against the H100's ceilings (pipes, L1/L2, stalls).
Usage: ncu --profile-from-start off ... python ncu_kernels.py TMPDIR PRECISION COMPRESSED(0|1)
Only the last call is profiled (torch.cuda.profiler.start/stop around it); run 128's setup."""
import sys
from pathlib import Path

import torch
from infer_bench import frame_min_dist, load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.io import save_model
from deeppot.io.compress import compress_model

data, inputs, tmp = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
precision, compressed = sys.argv[2], sys.argv[3] == "1"
coord, box, atype = load_frame(data, "water")
c, b, t = replicate(coord, box, atype, 8)
model = make_model(inputs, "water", precision)
if compressed:
    model.min_nbor_dist.fill_(frame_min_dist(data, "water"))
    model = compress_model(model)
path = tmp / f"water_{precision}_{compressed}.dp"
save_model(model, path)
dp = DeepPot(str(path))
natoms, dev = len(t), dp.evaluator.device
ct = torch.as_tensor(c, dtype=torch.float64, device=dev).reshape(1, natoms, 3)
tt = torch.as_tensor(t, dtype=torch.int64, device=dev).reshape(1, natoms)
bt = torch.as_tensor(b, dtype=torch.float64, device=dev).reshape(1, 3, 3)
flat = dp.evaluator.neighbors(ct, tt, bt)
for _ in range(3):
    dp.evaluator.evaluate_neighbors(flat)
torch.cuda.synchronize()
print(f"== water {precision} compressed={compressed} {natoms} atoms, products {dp.evaluator.products}", flush=True)
torch.cuda.profiler.start()
dp.evaluator.evaluate_neighbors(flat)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
