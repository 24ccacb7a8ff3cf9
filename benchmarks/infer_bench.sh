#!/bin/bash
# Inference benchmark on the GPU machine: deeppot and DeePMD-kit 3.2.0 (same models, same call).
# Run from the repository root with .peer/ prepared as ../shared/bench/README.md says (.peer/whl: deepmd-kit 3.2.0
# and its deps; .peer/data: water/ and copper/; .peer/peer/stubs); carry .peer to the device:
#     bash benchmarks/infer_bench.sh [more infer_bench.py options, which override the defaults below]
# Writes $OUT/infer.jsonl (JSON lines, default OUT=./out), the logs beside it, and prints a table at the end.
# Budget: deeppot's cases stop starting after 270 s, the peer's after 120 s (killed at 150 s); a case's timing loop
# ends after 15 s. Expect 4-6 minutes on an H100 (Triton compiles from a cold cache included).
set -u
OUT=${OUT:-./out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
rm -f "$OUT/infer.jsonl"
START=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
$PY -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" \
  2>&1 | tee -a "$OUT/gpu.txt"
PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} $PY benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --systems water copper --precisions float32 float64 --sizes 192 1536 12288 98304 1000000 \
  --modes eval prebuilt_nlist --paths auto pytorch --repeat-seconds 1 --min-calls 5 --case-seconds 15 \
  --deadline 270 --peer .peer/whl --peer-seconds 120 --out "$OUT/infer.jsonl" "$@" \
  > "$OUT/infer_stdout.log" 2> "$OUT/infer_stderr.log"
RC=$?
echo "infer_bench.py rc=$RC after $(( $(date +%s) - START )) s; last lines of its stderr:"
grep -v "^ *$" "$OUT/infer_stderr.log" | tail -8
$PY benchmarks/infer_bench.py --summary "$OUT/infer.jsonl"
exit $RC
