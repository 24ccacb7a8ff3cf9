"""MD with a small random Deep Potential: the same trajectory as ASE's velocity Verlet, energy conservation, the
neighbour list rebuilt exactly when an atom moved more than skin / 2 (and its updates exact), restarts that continue
bit for bit, seeded reproducibility, and the errors of bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ase import Atoms
from ase.md.verlet import VelocityVerlet as AseVelocityVerlet
from helpers import make_model
from md_helpers import Recorder, argon, water_like

from deeppot import md
from deeppot.calculator import DP
from deeppot.infer import DeepPot
from deeppot.md.testing import LennardJones
from deeppot.md.units import FS


@pytest.fixture(scope="module")
def model():
    return make_model(sel=(24, 24), rcut=4.0)


def start(model, skin: float = 1.0, seed: int = 1, temperature: float = 300.0, atoms: Atoms | None = None):
    atoms = atoms if atoms is not None else water_like()
    pot = md.DeepPotential.for_atoms([model], atoms, skin, "cpu")
    return md.init(atoms, pot, temperature=temperature, seed=seed), pot


def test_trajectory_equals_ase_velocity_verlet(model):
    state, pot = start(model)
    atoms = water_like()
    atoms.set_velocities(state.velocities.numpy() / FS)  # the same start
    atoms.calc = DP(DeepPot(model, device="cpu"))
    md.run(state, pot, md.VelocityVerlet(dt=0.5), 100)
    AseVelocityVerlet(atoms, timestep=0.5 * FS).run(100)
    moved = np.abs(atoms.positions - water_like().positions).max()
    assert moved > 0.1  # the atoms went somewhere (through several neighbour-list rebuilds)
    assert pot.rebuilds > 2
    np.testing.assert_allclose(state.positions.numpy(), atoms.positions, rtol=0, atol=1e-8)
    np.testing.assert_allclose(state.velocities.numpy(), atoms.get_velocities() * FS, rtol=0, atol=1e-9)


def test_nve_conserves_energy(model):
    state, pot = start(model)
    rec = Recorder(every=1)
    md.run(state, pot, md.VelocityVerlet(dt=0.5), 1000, callbacks=[rec])
    total, potential = rec.column("total"), rec.column("potential")
    time_ps = rec.column("time_fs") * 1e-3
    drift = np.polyfit(time_ps, total, 1)[0] / state.natoms  # eV / atom / ps
    exchanged = potential.std()  # energy moving between potential and kinetic
    assert exchanged > 1e-3
    assert total.std() < 0.02 * exchanged, f"total energy std {total.std():.3g} eV vs potential std {exchanged:.3g}"
    assert abs(drift) < 1e-4, f"energy drift {drift:.3g} eV/atom/ps over 0.5 ps"


def expected_builds(positions: list[torch.Tensor], skin: float) -> int:
    """Builds by the rule of `md.Stepper`, on the recorded positions (a fixed box, so skin_used = the largest move
    since the build over skin / 2): step s rebuilds when skin_used(s - 1) >= NEAR or skin_used(s) > 1."""
    builds, ref, near = 1, positions[0], False
    for x in positions[1:]:
        used = float(torch.linalg.vector_norm(x - ref, dim=-1).max()) / (skin / 2)
        if near or used > 1:
            builds, ref, used = builds + 1, x, 0.0
        near = used >= md.engine.NEAR
    return builds


def test_rebuilds_follow_the_rule(model):
    """The builds match the rule replayed on the recorded positions, the sync-free run (planned segments, replays
    where a segment went too far) equals the every-step run bit for bit, and the final forces equal a fresh
    evaluation (no neighbour missed)."""
    skin = 1.0
    state, pot = start(model, skin=skin)
    positions = [state.positions.clone()]

    def record(s, thermo):
        positions.append(s.positions.clone())

    record.every = 1
    md.run(state, pot, md.VelocityVerlet(dt=0.5), 300, callbacks=[record])
    expected = expected_builds(positions, skin)
    assert pot.rebuilds == expected
    assert 3 < expected < 100

    quiet, quiet_pot = start(model, skin=skin)
    stepper = md.Stepper(quiet_pot)
    md.run(quiet, quiet_pot, md.VelocityVerlet(dt=0.5), 300, stepper=stepper)
    assert quiet_pot.rebuilds == expected
    # planned segments: no step run twice; a few reads per rebuild (one every ~15 steps here), not one per step
    assert quiet_pot.evaluations == 1 + 300 and stepper.replays == 0
    assert stepper.host_reads < 300 / 3, stepper.host_reads
    assert torch.equal(quiet.positions, state.positions) and torch.equal(quiet.velocities, state.velocities)

    late, late_pot = start(model, skin=skin)  # segments of 40 steps overrun the rebuilds: cut back and replayed
    stepper = md.Stepper(late_pot)
    stepper.next_stop = lambda step: step + 40
    md.run(late, late_pot, md.VelocityVerlet(dt=0.5), 300, stepper=stepper)
    assert stepper.replays > 3 and late_pot.rebuilds == expected
    assert torch.equal(late.positions, state.positions) and torch.equal(late.velocities, state.velocities)
    fresh = DeepPot(model, device="cpu").evaluator.evaluate(state.positions[None], state.atype[None],
                                                            state.cell[None])
    torch.testing.assert_close(state.forces, fresh["force"][0], rtol=1e-10, atol=1e-12)


INTEGRATORS = {
    "bussi": lambda: md.BussiNVT(dt=0.5, temperature=300, tau=20),
    "langevin": lambda: md.LangevinNVT(dt=0.5, temperature=300, tau=20),
    "npt-aniso-langevin": lambda: md.StochasticCellRescaling(md.LangevinNVT(dt=0.5, temperature=300, tau=20),
                                                             pressure=1e4, tau=50, anisotropic=True),
    "npt-iso-bussi": lambda: md.StochasticCellRescaling(md.BussiNVT(dt=0.5, temperature=300, tau=20),
                                                        pressure=-1e4, tau=50),
}


@pytest.mark.parametrize("name", sorted(INTEGRATORS))
def test_restart_continues_bit_for_bit(model, name, tmp_path):
    straight, pot = start(model, skin=0.6)
    md.run(straight, pot, INTEGRATORS[name](), 120)

    first, pot1 = start(model, skin=0.6)
    md.run(first, pot1, INTEGRATORS[name](), 60)
    md.save_restart(tmp_path / "restart.pt", first, pot1, {})
    second_pot = md.DeepPotential([model], first.atype, 0.6, "cpu")
    second = md.load_restart(tmp_path / "restart.pt", second_pot)
    md.run(second, second_pot, INTEGRATORS[name](), 60)

    assert pot.rebuilds > 2 and second.step == straight.step == 120
    for key in ("positions", "velocities", "forces", "cell", "energy", "virial"):
        assert torch.equal(getattr(second, key), getattr(straight, key)), key
    if name.startswith("npt"):
        assert not torch.equal(straight.cell, torch.tensor(water_like().cell.array))


def test_seed_reproduces_and_changes_the_run(model):
    runs = []
    for seed in (5, 5, 6):
        state, pot = start(model, seed=seed)
        md.run(state, pot, md.LangevinNVT(dt=0.5, temperature=300, tau=20), 30)
        runs.append(state.positions)
    assert torch.equal(runs[0], runs[1])
    assert not torch.allclose(runs[0], runs[2])


def test_npt_smoke_run_changes_the_cell_under_pressure(model):
    state, pot = start(model)
    volume0 = float(torch.linalg.det(state.cell))
    rec = Recorder(every=50)
    integrator = md.StochasticCellRescaling(md.BussiNVT(dt=0.5, temperature=300, tau=20), pressure=2e4, tau=100,
                                            compressibility=1e-5)
    md.run(state, pot, integrator, 200, callbacks=[rec])
    assert rec.column("volume")[-1] < volume0  # 20 kbar compresses the random box
    assert np.isfinite(rec.column("pressure")).all()


def test_unknown_element_is_named(model):
    atoms = water_like()
    atoms.symbols[3] = "Fe"
    with pytest.raises(ValueError, match=r"Fe not in the model's type map \['O', 'H'\]"):
        start(model, atoms=atoms)


def test_close_atoms_warn(model, caplog):
    model = make_model(sel=(24, 24), rcut=4.0)
    model.min_nbor_dist.fill_(1.2)  # the random atoms are >= 1 Å apart
    with caplog.at_level("WARNING"):
        start(model)
    assert "closer than the model's min_nbor_dist 1.200" in caplog.text


def test_exploding_dynamics_stops_with_an_error():
    atoms = argon()
    atoms.positions[1] = atoms.positions[0] + [1.0, 0, 0]  # 1 Å apart: a huge LJ repulsion
    pot = LennardJones(rcut=5.2)
    state = md.init(atoms, pot, temperature=50, seed=0)
    with pytest.raises(md.MDError, match=r"exceeds|not finite"):
        md.run(state, pot, md.VelocityVerlet(dt=5.0), 50)


def test_cluster_without_cell_runs_nve(model):
    atoms = water_like()
    atoms.pbc, atoms.cell = False, None
    state, pot = start(model, atoms=atoms)
    rec = Recorder(every=10)
    md.run(state, pot, md.VelocityVerlet(dt=0.5), 200, callbacks=[rec])
    assert state.cell is None and np.isnan(rec.column("pressure")).all()
    total = rec.column("total")
    assert np.ptp(total) < 0.05 * np.ptp(rec.column("potential"))


def test_velocities_of_the_structure_are_kept(model):
    atoms = water_like()
    velocities = np.random.default_rng(0).normal(size=(len(atoms), 3)) * 0.01  # Å/fs
    atoms.set_velocities(velocities / FS)
    state, _ = start(model, atoms=atoms, temperature=1000.0)
    masses = atoms.get_masses()[:, None]
    expected = velocities - (masses * velocities).sum(0) / masses.sum()  # zero total momentum
    np.testing.assert_allclose(state.velocities.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_thermo_pressure_equals_ase_stress_in_bar(model):
    """Pressure and temperature of thermo against ASE's own conventions and units (an independent oracle for the
    bar conversion and the virial sign that the NPT tests take for granted)."""
    from ase import units

    state, _ = start(model, temperature=500.0)
    atoms = md.to_atoms(state)
    atoms.calc = DP(DeepPot(model, device="cpu"))
    values = md.thermo(state, dof=3 * len(atoms) - 3, dt=0.5)
    stress = atoms.get_stress(include_ideal_gas=True, voigt=False)
    assert values.pressure == pytest.approx(-np.trace(stress) / 3 / units.bar, rel=1e-9)
    assert values.kinetic == pytest.approx(atoms.get_kinetic_energy(), rel=1e-12)
    assert values.temperature == pytest.approx(500.0, rel=1e-12)
    assert values.volume == pytest.approx(atoms.get_volume(), rel=1e-12)
