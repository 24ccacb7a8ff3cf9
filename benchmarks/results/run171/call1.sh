#!/bin/bash
# Run 171: the float32 shared rows (run 166) with the other float32 product schemes: tf32x3 (models whose values
# may leave float16's range) and the tf32 opt-in, this tree against bd13675 (.old), trees alternating twice.
# Run from the repository root with carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 80 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --paths tf32x3 tf32 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run171_infer.jsonl 2>> $OUT/run171_err.txt
done
python3 -c "
import json
for l in open('$OUT/run171_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
tail -3 $OUT/run171_err.txt
