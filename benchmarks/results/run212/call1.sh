#!/bin/bash
# Run 212: where a mid-size DeepPot.eval call goes (stage_probe.py: the list, the evaluation eager and replayed from
# a graph), float32 and float64; whether torch.nonzero_static syncs on this torch (for a list of static sizes).
# Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
for p in float32 float64; do
  PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 150 python3 benchmarks/results/run212/stage_probe.py $p 2 4 8 2>&1 \
    | grep atoms | tee -a $OUT/run212_stage_probe.txt
  echo "== $p $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY' 2>&1 | tee $OUT/run212_nonzero_static.txt
import torch
x = torch.rand(100000, device="cuda") > 0.5
torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode("error")
try:
    idx = torch.nonzero_static(x, size=60000, fill_value=-1)
    print("nonzero_static: no sync", idx.shape)
except RuntimeError as e:
    print("nonzero_static syncs:", str(e)[:200])
finally:
    torch.cuda.set_sync_debug_mode("default")
print(torch.__version__)
PY
nvidia-smi --query-gpu=name --format=csv,noheader
