"""Run 191: where an eager 98,304-atom water MD step goes beyond the evaluation (md_bench: 16.1 ms a step against
13.1 for the evaluation alone, run 182). Under torch.profiler: whole MD steps (md.run of N steps, no rebuild in
them), kernel time by name, GPU idle gaps with the CPU ops meanwhile; the evaluation of the same neighbour data
alone for comparison; synchronised timings of a rebuild, an update and the pair data.
Usage: python md_timeline.py OUT_DIR [float32|float64] [NATOMS]"""
import collections
import itertools
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from md_bench import water_atoms, water_model

from deeppot import md
from deeppot.infer.evaluate import FlatNeighbors

out = Path(sys.argv[1])
dtype = sys.argv[2] if len(sys.argv) > 2 else "float32"
natoms = int(sys.argv[3]) if len(sys.argv) > 3 else 98304
CUDA = torch.cuda.is_available()
dev = torch.device("cuda" if CUDA else "cpu")
sync = torch.cuda.synchronize if CUDA else (lambda: None)
model = water_model(dtype, None)
atoms = water_atoms(natoms)
pot = md.DeepPotential([model], md.atom_types(atoms.get_chemical_symbols(), model.type_map), skin=2.0, device=dev,
                       graph=False)
state = md.init(atoms, pot, temperature=300.0, seed=0)
integ = md.BussiNVT(dt=0.5, temperature=300.0, tau=100.0)
stepper = md.Stepper(pot, graphs=False)
md.run(state, pot, integ, 20, max_temperature=math.inf, stepper=stepper)


def ms(work, n=5):
    times = []
    for _ in range(n):
        sync()
        t = time.perf_counter()
        work()
        sync()
        times.append(1e3 * (time.perf_counter() - t))
    return round(statistics.median(times), 3)


pos, cell = state.positions, state.cell
ev = pot.evaluators[0]
res = {"natoms": len(atoms), "dtype": dtype, "gpu": torch.cuda.get_device_name() if CUDA else "cpu"}
res["md_step"] = round(ms(lambda: md.run(state, pot, integ, 10, max_temperature=math.inf, stepper=stepper), 3) / 10, 3)
res["evaluate_neighbors"] = ms(lambda: ev.evaluate_neighbors(pot.flat))
res["compute_update"] = ms(lambda: pot.compute(state.positions, state.cell, False))
res["nlist_update"] = ms(lambda: pot.nlist.update(state.positions[None], state.cell[None]))
data = pot.nlist.update(state.positions[None], state.cell[None])
res["from_frames"] = ms(lambda: FlatNeighbors.from_frames(data.ext_coord, data.ext_atype, data.nlist, data.mapping,
                                                          pot.type_rows))
res["skin_used"] = ms(lambda: pot.skin_used(state.positions, state.cell))
res["compute_rebuild"] = ms(lambda: pot.compute(state.positions, state.cell, True), 3)
res["rebuilds_during_md_step"] = pot.rebuilds
print(json.dumps(res), flush=True)
(out / f"run191_md_{dtype}_{natoms}.json").write_text(json.dumps(res))

sync()
with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])) as prof:
    for _ in range(2):
        with record_function("md_steps"):
            md.run(state, pot, integ, 5, max_temperature=math.inf, stepper=stepper)
            sync()
        with record_function("evaluation"):
            ev.evaluate_neighbors(pot.flat)
            sync()
trace = out / "trace.json"
prof.export_chrome_trace(str(trace))
events = json.loads(trace.read_text())["traceEvents"]
trace.unlink()
kernels = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
cpu = sorted((e for e in events if e.get("cat") == "cpu_op" and "dur" in e), key=lambda e: e["ts"])
for name in ("md_steps", "evaluation"):
    spans = [e for e in events if e.get("name") == name and e.get("cat") == "user_annotation"]
    for span in spans[-1:]:
        t0, t1 = span["ts"], span["ts"] + span["dur"]
        ks = [k for k in kernels if t0 <= k["ts"] <= t1]
        by = collections.Counter()
        count = collections.Counter()
        for k in ks:
            by[k["name"][:70]] += k["dur"]
            count[k["name"][:70]] += 1
        steps = 5 if name == "md_steps" else 1
        print(f"== {name}: wall {span['dur'] / 1e3 / steps:.3f} ms a step, kernels "
              f"{sum(k['dur'] for k in ks) / 1e3 / steps:.3f} ms in {len(ks) / steps:.0f}")
        for kname, us in by.most_common(25):
            print(f"   {us / 1e3 / steps:8.3f} ms {count[kname] / steps:6.1f}x  {kname}")
        gaps = []
        for a, b in itertools.pairwise(ks):
            gap = b["ts"] - (a["ts"] + a["dur"])
            if gap > 15:
                during = [e["name"][:50] for e in cpu if a["ts"] + a["dur"] - 50 <= e["ts"] <= b["ts"]][:5]
                gaps.append((gap, a["name"][:40], b["name"][:40], during))
        print(f"   gaps > 15 us: {len(gaps) / steps:.1f} a step, {sum(g[0] for g in gaps) / 1e3 / steps:.3f} ms a step")
        for gap, before, after, during in sorted(gaps, reverse=True)[:10]:
            print(f"   {gap:8.1f} us  {before} -> {after} | {during}")
