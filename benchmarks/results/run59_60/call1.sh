# Run 59 (one H100): what trimming the training lists to the data's largest neighbour counts would save.
# <name>trim inputs: the example inputs with sel set to `deeppot neighbor-stat`'s max_nbor_size
# (water [38, 72] for [46, 92]; copper [84] for [96]; alloy [60, 57, 71] for [80, 80, 80]).
export PYTHONPATH=$PWD:$PWD/benchmarks
nvidia-smi --query-gpu=name --format=csv,noheader
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64:compile watertrim:float64:compile alloy:float32:compile alloytrim:float32:compile \
         water:float32:compile watertrim:float32:compile copper:float32:compile coppertrim:float32:compile \
         water:float64 watertrim:float64 alloy:float32 alloytrim:float32; do
  $B $c >> $OUT/run59_trim.jsonl 2>> $OUT/run59_err.txt
  tail -1 $OUT/run59_trim.jsonl | cut -c1-200
done
$B --profile alloy:float32:compile > $OUT/run59_profile_alloy.txt 2>&1
tail -40 $OUT/run59_profile_alloy.txt
