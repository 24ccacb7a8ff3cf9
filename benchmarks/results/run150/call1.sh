#!/bin/bash
# Run 150 (one H100): Nsight Compute on one 98,304-atom water call per configuration (float32 f16x3, float32
# compressed, float64, float64 compressed), and the SASS opcode mix of the Triton kernels.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run150; mkdir -p $TMPDIR
export TRITON_CACHE_DIR=$TMPDIR/tc
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
P=$PWD/benchmarks/results/run150
which ncu; ncu --version | tail -1
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
 --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy --section LaunchStats \
 --section InstructionStats --section SchedulerStats --section SourceCounters"
for cfg in "float32 0" "float32 1" "float64 0" "float64 1"; do
  set -- $cfg; tag=$1_$2
  el $tag
  timeout 200 ncu --clock-control none --profile-from-start off --import-source no $SECTIONS \
    -o $TMPDIR/prof_$tag -f env PYTHONPATH=$PWD:$PWD/benchmarks python3 $P/ncu_kernels.py $TMPDIR $1 $2 \
    > $OUT/run150_ncu_log_$tag.txt 2>&1
  echo "rc $?"; tail -3 $OUT/run150_ncu_log_$tag.txt
  ncu --import $TMPDIR/prof_$tag.ncu-rep --page details --print-units base > $OUT/run150_details_$tag.txt 2>&1
  ncu --import $TMPDIR/prof_$tag.ncu-rep --page raw --csv > $TMPDIR/raw_$tag.csv 2>&1 && gzip -c $TMPDIR/raw_$tag.csv > $OUT/run150_raw_$tag.csv.gz
  ncu --import $TMPDIR/prof_$tag.ncu-rep --page source --print-source sass --csv -k regex:"_tiled|_compressed" \
    > $TMPDIR/src_$tag.csv 2>&1; gzip -c $TMPDIR/src_$tag.csv > $OUT/run150_source_$tag.csv.gz
  ls -la $TMPDIR/src_$tag.csv
done
el sass
for f in $(find $TRITON_CACHE_DIR -name "*.cubin"); do
  n=$(basename $f .cubin)
  case $n in *tiled*|*compressed*|*gemm*|*scatter*) cuobjdump --dump-sass $f > $TMPDIR/$n.$(basename $(dirname $f)).sass;; esac
done
(cd $TMPDIR && tar czf $OUT/run150_sass.tgz *.sass)
ls $TMPDIR/*.sass | head -40
grep -h "Duration\|^  _\|^  [a-z_]*kernel" $OUT/run150_details_float32_0.txt | head -60
el done
