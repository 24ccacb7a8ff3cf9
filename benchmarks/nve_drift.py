"""Energy drift of an NVE run from its thermo.out: the least-squares slope of the total energy against time.

    python benchmarks/nve_drift.py RUN/thermo.out --atoms 192 [--skip-ps 0.5]
Prints one JSON line: drift_eV_per_atom_per_ps (slope / atoms), the total energy's standard deviation per atom, the
largest excursion from the start, the mean temperature and the span in ps (rows after --skip-ps).
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def drift(path: str, atoms: int, skip_ps: float = 0.0) -> dict:
    with open(path) as fh:
        names = fh.readline().lstrip("#").split()
    table = np.loadtxt(path, comments="#")
    col = {name: table[:, i] for i, name in enumerate(names)}
    t_ps, total = col["time_fs"] / 1000.0, col["total_eV"]
    keep = t_ps >= skip_ps
    slope = np.polyfit(t_ps[keep], total[keep], 1)[0]
    return {"file": path, "atoms": atoms, "span_ps": round(float(t_ps[keep][-1] - t_ps[keep][0]), 4),
            "drift_eV_per_atom_per_ps": float(slope / atoms), "std_eV_per_atom": float(total[keep].std() / atoms),
            "max_excursion_eV_per_atom": float(np.abs(total[keep] - total[keep][0]).max() / atoms),
            "mean_temperature_K": float(col["temperature_K"][keep].mean())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("thermo")
    p.add_argument("--atoms", type=int, required=True)
    p.add_argument("--skip-ps", type=float, default=0.0, help="leave out the first picoseconds (equilibration)")
    args = p.parse_args()
    print(json.dumps(drift(args.thermo, args.atoms, args.skip_ps)))


if __name__ == "__main__":
    main()
