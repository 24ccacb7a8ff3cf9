"""Run 156: kernel-level profile of one 98,304-atom water evaluation of a compressed model on a prebuilt list
(issue 10), float32 and float64, fresh weights: the top kernels by device time a call (run 128's script).
Usage: python infer_kernels.py OUT_DIR"""
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from infer_bench import frame_min_dist, load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.io import save_model
from deeppot.io.compress import compress_model

data, inputs, out = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
coord, box, atype = load_frame(data, "water")
c, b, t = replicate(coord, box, atype, 8)
for precision in ("float32", "float64"):
    for compressed in (True,):
        model = make_model(inputs, "water", precision)
        if compressed:
            model.min_nbor_dist.fill_(frame_min_dist(data, "water"))
            model = compress_model(model)
        path = out / f"water_{precision}_{compressed}.dp"
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
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                dp.evaluator.evaluate_neighbors(flat)
            torch.cuda.synchronize()
        kernels = sorted((e for e in prof.key_averages() if e.device_time_total > 0 and e.device_type.name == "CUDA"),
                         key=lambda e: e.device_time_total, reverse=True)
        busy = sum(e.device_time_total for e in kernels) / 5e3
        print(f"== water {precision} compressed={compressed} {natoms} atoms: device {busy:.2f} ms a call, "
              f"{sum(e.count for e in kernels) / 5:.0f} kernels")
        for e in kernels[:16]:
            print(f"{e.key[:90]:<90} {e.device_time_total / 5e3:8.3f} {e.count / 5:6.1f}")
        path.unlink()
