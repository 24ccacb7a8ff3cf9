"""The ASE calculator `deeppot.calculator.DP`: finite differences through ASE's own helpers, stress conventions,
the symbol -> type map, agreement with `DeepPot.eval` and DeePMD-kit's calculator, and MD/relaxation smoke runs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ase")

from ase import Atoms, units
from ase.calculators.calculator import PropertyNotImplementedError, all_changes
from ase.calculators.fd import calculate_numerical_forces, calculate_numerical_stress
from ase.md.verlet import VelocityVerlet
from ase.optimize import BFGS
from helpers import make_model, random_system

from deeppot.calculator import DP
from deeppot.infer import DeepPot
from deeppot.io import save_model

TYPE_MAP = ["O", "H", "C"]
TRICLINIC = np.array([[6.0, 0.0, 0.0], [1.3, 5.7, 0.0], [-0.9, 0.8, 6.2]])


@pytest.fixture(scope="module")
def dp() -> DeepPot:
    return DeepPot(make_model(ntypes=3, sel=(24, 24, 24)), device="cpu")


def triclinic_atoms(natoms: int = 12, seed: int = 0) -> Atoms:
    """Random atoms in a skewed periodic cell, symbols cycling through O, H, C."""
    coord, atype, _ = random_system(natoms=natoms, box_len=1.0, min_dist=0.15, seed=seed)
    symbols = [TYPE_MAP[t % 3] for t in atype.tolist()]
    return Atoms(symbols, scaled_positions=coord[0].numpy(), cell=TRICLINIC, pbc=True)


def cluster_atoms(natoms: int = 8, seed: int = 1) -> Atoms:
    """A random non-periodic cluster (no cell)."""
    coord, atype, _ = random_system(natoms=natoms, box_len=4.0, min_dist=1.0, seed=seed)
    return Atoms([TYPE_MAP[t % 3] for t in atype.tolist()], positions=coord[0].numpy(), pbc=False)


def types_of(atoms: Atoms) -> np.ndarray:
    return np.array([TYPE_MAP.index(s) for s in atoms.get_chemical_symbols()])


@pytest.mark.parametrize("skin", [None, 1.0])
@pytest.mark.parametrize("make_atoms", [triclinic_atoms, cluster_atoms])
def test_forces_are_minus_the_energy_gradient(dp, make_atoms, skin):
    atoms = make_atoms()
    atoms.calc = DP(dp, skin=skin)
    numerical = calculate_numerical_forces(atoms, eps=1e-4)  # FD error ~1e-8 relative (forces are small)
    np.testing.assert_allclose(atoms.get_forces(), numerical, atol=1e-6 * np.abs(numerical).max())


@pytest.mark.parametrize("skin", [None, 1.0])
def test_stress_is_the_strain_derivative_of_the_energy(dp, skin):
    atoms = triclinic_atoms()
    atoms.calc = DP(dp, skin=skin)
    numerical = calculate_numerical_stress(atoms, eps=1e-5)
    np.testing.assert_allclose(atoms.get_stress(), numerical, atol=1e-6 * np.abs(numerical).max())


def test_results_equal_deeppot_eval_in_ase_conventions(dp):
    atoms = triclinic_atoms()
    atoms.positions[0] += TRICLINIC[1] - 2 * TRICLINIC[2]  # outside the cell: the same system
    atoms.calc = DP(dp)
    e, f, v = dp.eval(triclinic_atoms().positions[None], TRICLINIC.reshape(1, 9), types_of(atoms))
    v = v.reshape(3, 3)
    voigt = -np.array([v[0, 0], v[1, 1], v[2, 2], v[1, 2] + v[2, 1], v[0, 2] + v[2, 0], v[0, 1] + v[1, 0]])
    voigt[3:] /= 2
    np.testing.assert_allclose(atoms.get_potential_energy(), e[0, 0], rtol=1e-12)
    np.testing.assert_allclose(atoms.get_potential_energy(force_consistent=True), e[0, 0], rtol=1e-12)
    np.testing.assert_allclose(atoms.get_forces(), f[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(atoms.calc.get_property("virial"), v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(atoms.get_stress(), voigt / atoms.get_volume(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("make_atoms", [triclinic_atoms, cluster_atoms])
def test_atomic_properties_only_on_request_and_sum_to_totals(dp, make_atoms):
    atoms = make_atoms()
    atoms.calc = DP(dp)
    energy = atoms.get_potential_energy()
    assert "energies" not in atoms.calc.results  # the cheaper non-atomic evaluation ran
    energies = atoms.get_potential_energies()
    assert energies.shape == (len(atoms),)
    np.testing.assert_allclose(energies.sum(), energy, rtol=1e-12)
    if atoms.pbc.any():
        stresses = atoms.get_stresses()
        assert stresses.shape == (len(atoms), 6)
        np.testing.assert_allclose(stresses.sum(0), atoms.get_stress(), atol=1e-12)


def test_non_periodic_atoms_have_no_cell_and_no_stress(dp):
    atoms = cluster_atoms()
    atoms.calc = DP(dp)
    e, f, _ = dp.eval(atoms.positions[None], None, types_of(atoms))
    np.testing.assert_allclose(atoms.get_potential_energy(), e[0, 0], rtol=1e-12)
    np.testing.assert_allclose(atoms.get_forces(), f[0], rtol=1e-10, atol=1e-12)
    with pytest.raises(PropertyNotImplementedError):
        atoms.get_stress()
    with pytest.raises(PropertyNotImplementedError):
        atoms.get_stresses()


def test_slab_passes_the_full_cell(dp):
    slab = triclinic_atoms()
    slab.pbc = [True, True, False]
    slab.calc = DP(dp)
    bulk = triclinic_atoms()
    bulk.calc = DP(dp)
    np.testing.assert_allclose(slab.get_potential_energy(), bulk.get_potential_energy(), rtol=1e-12)
    np.testing.assert_allclose(slab.get_stress(), bulk.get_stress(), rtol=1e-10, atol=1e-14)


def test_types_follow_symbols_not_atom_order(dp):
    atoms = triclinic_atoms()
    atoms.calc = DP(dp)
    order = np.random.default_rng(3).permutation(len(atoms))  # symbols no longer in type-map order
    shuffled = atoms[order]
    assert shuffled.get_chemical_symbols()[:3] != TYPE_MAP
    shuffled.calc = DP(dp)
    np.testing.assert_allclose(shuffled.get_potential_energy(), atoms.get_potential_energy(), rtol=1e-12)
    np.testing.assert_allclose(shuffled.get_forces(), atoms.get_forces()[order], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(shuffled.get_potential_energies(), atoms.get_potential_energies()[order],
                               rtol=1e-10, atol=1e-12)


def test_type_dict_maps_other_symbols(dp):
    atoms = triclinic_atoms()
    atoms.calc = DP(dp)
    renamed = atoms.copy()
    renamed.symbols = [{"O": "Cu", "H": "Ag", "C": "Au"}[s] for s in atoms.get_chemical_symbols()]
    renamed.calc = DP(dp, type_dict={"Cu": 0, "Ag": 1, "Au": 2})
    np.testing.assert_allclose(renamed.get_potential_energy(), atoms.get_potential_energy(), rtol=1e-12)
    with pytest.raises(ValueError, match=r"outside the model's 3 types"):
        DP(dp, type_dict={"O": 0, "H": 3})


def test_unknown_element_names_symbol_and_type_map(dp):
    atoms = triclinic_atoms()
    atoms.symbols[4] = "Fe"
    atoms.calc = DP(dp)
    with pytest.raises(ValueError, match=r"Fe not in the model's type map \['O', 'H', 'C'\]"):
        atoms.get_potential_energy()


def test_model_from_file_model_or_deeppot(dp, tmp_path):
    save_model(dp.model, tmp_path / "model.dp")
    energies = []
    for model in (tmp_path / "model.dp", str(tmp_path / "model.dp"), dp.model, dp):
        atoms = triclinic_atoms()
        atoms.calc = DP(model=model, device=None if model is dp else "cpu")
        energies.append(atoms.get_potential_energy())
    np.testing.assert_allclose(energies, energies[0], rtol=1e-12)
    with pytest.raises(ValueError, match="device"):
        DP(dp, device="cpu")


def test_energy_matches_deepmd_calculator(dp, tmp_path):
    deepmd_calculator = pytest.importorskip("deepmd.calculator")
    save_model(dp.model, tmp_path / "model.dp")
    theirs = deepmd_calculator.DP(tmp_path / "model.dp")  # its .dp backend gives energies (its forces are NaN)
    for atoms in (triclinic_atoms(), cluster_atoms()):
        np.testing.assert_allclose(DP(dp).get_potential_energy(atoms), theirs.get_potential_energy(atoms),
                                   rtol=1e-12)


@pytest.mark.parametrize("skin", [None, 1.0])
def test_velocity_verlet_conserves_energy(dp, skin):
    atoms = triclinic_atoms(seed=2)
    atoms.calc = DP(dp, skin=skin)
    kt = 300 * units.kB  # Maxwell-Boltzmann momenta at 300 K
    atoms.set_momenta(np.sqrt(atoms.get_masses() * kt)[:, None] * np.random.default_rng(0).normal(size=(12, 3)))
    total, potential = atoms.get_total_energy(), atoms.get_potential_energy()
    VelocityVerlet(atoms, timestep=0.5 * units.fs).run(20)
    exchanged = atoms.get_potential_energy() - potential  # ~2e-4 eV moved between potential and kinetic energy
    assert abs(exchanged) > 1e-5
    assert abs(atoms.get_total_energy() - total) < 1e-2 * abs(exchanged)  # wrong forces would not conserve it


def test_bfgs_lowers_the_energy(dp):
    atoms = cluster_atoms()
    atoms.calc = DP(dp)
    start = atoms.get_potential_energy()
    BFGS(atoms, logfile=None).run(fmax=1e-5, steps=30)  # a flat random landscape: ~2e-3 eV down in 30 steps
    assert atoms.get_potential_energy() < start - 5e-4  # uphill with forces of the wrong sign


def results(calc: DP, atoms: Atoms) -> dict:
    calc.calculate(atoms, ["energy", "forces"] + (["stress"] if atoms.pbc.any() else []), all_changes)
    return dict(calc.results)


def assert_same_results(ours: dict, theirs: dict) -> None:
    np.testing.assert_allclose(ours["energy"], theirs["energy"], rtol=1e-12)
    np.testing.assert_allclose(ours["forces"], theirs["forces"], rtol=1e-10, atol=1e-12)
    if "stress" in theirs:
        np.testing.assert_allclose(ours["stress"], theirs["stress"], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("make_atoms", [triclinic_atoms, cluster_atoms])
def test_kept_list_equals_a_fresh_list_along_a_trajectory(dp, make_atoms):
    """A kept skin list (skin=1.0, here on the CPU) gives a fresh list's results in every call: through small moves
    (no rebuild), a move past skin / 2 (a rebuild) and, when periodic, a strained cell."""
    atoms = make_atoms()
    kept, fresh = DP(dp, skin=1.0), DP(dp, skin=None)
    rng = np.random.default_rng(0)
    for _ in range(4):  # 0.02 Å steps: ~0.07 Å in all, under skin / 2
        atoms.positions += rng.normal(scale=0.02, size=atoms.positions.shape)
        assert_same_results(results(kept, atoms), results(fresh, atoms))
    assert kept.potential.rebuilds == 1 and fresh.potential is None
    atoms.positions[0] += [0.6, 0.0, 0.0]  # past skin / 2
    assert_same_results(results(kept, atoms), results(fresh, atoms))
    assert kept.potential.rebuilds == 2
    if atoms.pbc.any():
        atoms.set_cell(atoms.cell.array @ np.diag([1.002, 0.999, 1.0]), scale_atoms=True)
        assert_same_results(results(kept, atoms), results(fresh, atoms))


def test_kept_list_follows_changed_atoms(dp):
    """Other types or periodicity start a new kept list; per-atom properties take the fresh list."""
    calc = DP(dp, skin=1.0)
    atoms = triclinic_atoms()
    results(calc, atoms)
    first = calc.potential
    swapped = atoms.copy()
    swapped.symbols[[0, 1]] = swapped.symbols[[1, 0]]
    assert swapped.get_chemical_symbols() != atoms.get_chemical_symbols()
    assert_same_results(results(calc, swapped), results(DP(dp, skin=None), swapped))
    assert calc.potential is not first
    cluster = triclinic_atoms()
    cluster.pbc = False
    assert_same_results(results(calc, cluster), results(DP(dp, skin=None), cluster))
    cluster.calc = calc
    np.testing.assert_allclose(cluster.get_potential_energies().sum(), cluster.get_potential_energy(), rtol=1e-12)


def test_skin_is_checked_and_auto_keeps_no_list_on_a_cpu(dp):
    assert DP(dp).skin is None  # "auto" on the CPU
    assert DP(dp, skin=0.5).skin == 0.5
    for bad in (-1.0, "big"):
        with pytest.raises(ValueError, match="skin must be a distance"):
            DP(dp, skin=bad)
