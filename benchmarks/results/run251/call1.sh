#!/bin/bash
# Run 251 call 1 (one GPU): Nsight Compute on the f16x3 atom-tile kernels of a trained water model (98,304 atoms):
# stall reasons per kernel and per SASS instruction.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run251; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
P=$PWD/benchmarks/results/run251
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats --section SourceCounters"
for s in water; do
  el $s
  timeout 240 ncu --clock-control none --profile-from-start off -k regex:_tiled $SECTIONS \
    -o $TMPDIR/prof_$s -f env PYTHONPATH=$PWD:$PWD/benchmarks python3 $P/ncu_probe.py .mid/$s/model.dp $s 98304 \
    > $OUT/run251_ncu_log_$s.txt 2>&1
  echo "rc $?"; tail -3 $OUT/run251_ncu_log_$s.txt
  ncu --import $TMPDIR/prof_$s.ncu-rep --page details --print-units base > $OUT/run251_details_$s.txt 2>&1
  ncu --import $TMPDIR/prof_$s.ncu-rep --page raw --csv > $TMPDIR/raw_$s.csv 2>&1; gzip -c $TMPDIR/raw_$s.csv > $OUT/run251_raw_$s.csv.gz
  for k in _tiled_t_kernel _tiled_grad_kernel; do
    ncu --import $TMPDIR/prof_$s.ncu-rep --page source --print-source sass --csv -k $k > $TMPDIR/src_${s}$k.csv 2> $TMPDIR/src_err.txt
    echo "source $k: $(wc -l < $TMPDIR/src_${s}$k.csv) lines"; head -c 600 $TMPDIR/src_err.txt
    gzip -c $TMPDIR/src_${s}$k.csv > $OUT/run251_source_${s}$k.csv.gz
  done
done
grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|^  _tiled" $OUT/run251_details_water.txt | head -30
el done
