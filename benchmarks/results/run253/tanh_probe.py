"""Run 253: whatever tree is first on PYTHONPATH, timed as one variant (float64 tanh variants live in separate trees:
see call3.sh); run 250's `variant_probe.py` runner.

Usage (GPU, repository root): PYTHONPATH=TREE python tanh_probe.py water=.mid/water/model64.dp --rounds 1
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

if __name__ == "__main__":
    main({"tree": None}, lambda name: None)
