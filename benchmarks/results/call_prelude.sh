# Sourced by the run scripts (runs 266 on) at the top of a device call: unbuffered Python, `el` to print the seconds
# since the call began, the GPU's name, and the carried wheels in .whl (ASE) installed into /tmp/site if carried.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
fi
