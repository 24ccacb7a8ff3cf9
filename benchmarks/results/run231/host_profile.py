"""Run 231: where a graphed 98,304-atom `DeepPot.eval` call (water float32) spends its host time: cProfile of 30
calls after 5 warm ones, the functions by their own time. Usage: python host_profile.py"""
import cProfile
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot

PEER = Path(__file__).resolve().parents[3] / ".peer"
coord, box, atype = load_frame(PEER / "data", "water")
c, b, t = replicate(coord, box, atype, 8)
pot = DeepPot(make_model(PEER / "inputs", "water", "float32"))
args = (c[None], b.reshape(1, 9), t)
for _ in range(5):
    pot.eval(*args)
torch.cuda.synchronize()
profile = cProfile.Profile()
profile.enable()
for _ in range(30):
    pot.eval(*args)
profile.disable()
pstats.Stats(profile).sort_stats("tottime").print_stats(25)
