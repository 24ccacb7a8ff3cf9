# Run 188: tests/gpu/test_graph_step.py alone on HEAD (.mid = fec6199) and on this tree (FlatAdam.mark_updated), carry [".mid"]
set -u
for tree in .mid .; do
  echo "== $tree"
  (cd $tree && timeout 150 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=line -x \
    tests/gpu/test_graph_step.py 2>&1 | tail -3)
done
nvidia-smi --query-gpu=name --format=csv,noheader
