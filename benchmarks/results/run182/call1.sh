#!/bin/bash
# Run 182: CUDA graphs whose fitting nets run on their own type's atoms (index lists copied in with the inputs):
# GPU tests of the graphs, the sync-free repeated evaluation and MD; graph_by_type.py (eager against graph replays
# with nets on every atom or by type, 192 to 98,304 atoms); MD at 98,304 atoms with and without graphs; then the
# kernel tests that run 181's time limit cut. Run from the repository root with carry [".peer", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 200 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short -x \
  tests/gpu/test_infer.py tests/gpu/test_md_gpu.py > $OUT/run182_gpu_tests.txt 2>&1
tail -15 $OUT/run182_gpu_tests.txt
el graphs
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run182/graph_by_type.py \
  > $OUT/run182_graphs.jsonl 2>> $OUT/run182_err.txt
python3 -c "
import json
for l in open('$OUT/run182_graphs.jsonl'):
    r=json.loads(l); print(r['case'], r['variant'], r['ms_median'], r['atom_steps_per_s'])"
el md
for g in off on off on; do
  timeout 90 env PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site python3 benchmarks/md_bench.py --sizes 98304 \
    --dtype float32 --steps 60 --warmup 10 --graph $g | sed "s#^{#{\"graph_opt\": \"$g\", #" \
    >> $OUT/run182_md.jsonl 2>> $OUT/run182_err.txt
done
python3 -c "
import json
for l in open('$OUT/run182_md.jsonl'):
    r=json.loads(l); print(r.get('graph_opt'), r.get('case'), r.get('ms_per_step'), r.get('eval_ms'), r.get('atom_steps_per_s'), r.get('graph'), r.get('peak_mem_MiB'), r.get('error', ''))"
el kernel tests
left=$(( 570 - $(date +%s) + T0 ))
timeout $left env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py > $OUT/run182_kernel_tests.txt 2>&1
tail -3 $OUT/run182_kernel_tests.txt
el done
nvidia-smi --query-gpu=name --format=csv,noheader
tail -3 $OUT/run182_err.txt
