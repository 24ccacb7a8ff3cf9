#!/bin/bash
# Run 260 call 3 (prepared, never ran: too little device time was left to start a machine; one GPU): Nsight Compute on
# the fitting products
# (`fitting_gemm._persistent_kernel`, 12 launches) of one prebuilt-list call of the trained water model, 98,304 atoms
# (run 251's ncu_probe.py): where the 240-wide products, at ~18% of the float16 rate, spend their time.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run260; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
 --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
timeout 170 ncu --clock-control none --profile-from-start off -k regex:_persistent $SECTIONS -o $TMPDIR/prof -f \
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run251/ncu_probe.py .mid/water/model.dp water 98304 \
  > $OUT/run260_ncu_log.txt 2>&1
echo "rc $?"; tail -3 $OUT/run260_ncu_log.txt
ncu --import $TMPDIR/prof.ncu-rep --page details --print-units base > $OUT/run260_ncu_details.txt 2>&1
grep -E "_persistent_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Grid Size|Issue Slots Busy|No Eligible|Achieved Occupancy|Warp Cycles Per Issued" \
  $OUT/run260_ncu_details.txt | head -120 | cut -c1-120
el done
