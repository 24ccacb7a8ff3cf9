# Run 189: run 187's failing selection on HEAD (.mid = fec6199) and on this tree, the same files in the same
# order (run 188: tests/gpu/test_graph_step.py alone passed on both); carry [".mid"]
set -u
for tree in .mid .; do
  echo "== $tree"
  (cd $tree && timeout 120 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=line \
    tests/gpu/test_graph_step.py tests/kernels/test_adam.py tests/kernels/test_precision.py 2>&1 | tail -3)
done
nvidia-smi --query-gpu=name --format=csv,noheader
