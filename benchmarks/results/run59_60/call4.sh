#!/bin/bash
# Run 62 (one H100): 10,000 water float64 steps, the whole command (launch to the last checkpoint; the default
# path), with trimmed lists and with .old (459715e), twice each, alternating.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
for k in 1 2; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B water:float64:10000 >> $OUT/run62_train.jsonl 2>> $OUT/run62_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/$B water:float64:10000 >> $OUT/run62_train_before.jsonl 2>> $OUT/run62_err.txt
done
python3 - $OUT <<'PY'
import json, sys
for name in ("run62_train_before.jsonl", "run62_train.jsonl"):
    for line in open(f"{sys.argv[1]}/{name}"):
        r = json.loads(line)
        print(name, r["case"], r.get("ms_per_step"), r.get("wall_s"), r.get("launch_to_first_step_s"), r.get("final"))
PY
