"""Runs 78-79: the compiled force path against the eager one on the GPU (energy, forces, virial: largest difference,
largest value, and the two values where they differ most)."""
import sys

sys.path.insert(0, "tests")
from helpers import make_model, pairs_of

model = make_model(resnet_dt=False, neuron=[8, 16, 32], sel=(24, 40)).cuda()
pairs = pairs_of(model, nframes=2, seed=3).to("cuda")
out = model.forward_pairs(pairs)
model.compile_forces()
out2 = model.forward_pairs(pairs)
for k in ("energy", "force", "virial"):
    d = (out2[k] - out[k]).abs()
    i = d.argmax()
    print(k, d.max().item(), out[k].abs().max().item(), out2[k].flatten()[i].item(), out[k].flatten()[i].item())
