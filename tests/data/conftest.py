"""Writers of small synthetic DeePMD systems for the deeppot.data tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def write_system(
    sys_dir: Path,
    atype: Sequence[int],
    set_frames: Sequence[int] = (3,),
    type_names: Sequence[str] | None = None,
    nopbc: bool = False,
    labels: Sequence[str] = ("energy", "force", "virial"),
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Write a system with random arrays (one `set.%03d` per entry of `set_frames`) in DeePMD disk layout.

    Returns the written arrays concatenated over sets, in file atom order: coord (nf, natoms, 3),
    box (nf, 3, 3), and each label in the stored shape of `System.labels`.
    """
    rng = np.random.default_rng(seed)
    natoms = len(atype)
    sys_dir.mkdir(parents=True, exist_ok=True)
    (sys_dir / "type.raw").write_text("\n".join(str(t) for t in atype) + "\n")
    if type_names is not None:
        (sys_dir / "type_map.raw").write_text("\n".join(type_names) + "\n")
    if nopbc:
        (sys_dir / "nopbc").write_text("")
    shapes = {"energy": (), "force": (natoms, 3), "virial": (9,), "atom_ener": (natoms,)}
    shapes |= {"atom_pref": (natoms,), "fparam": (2,), "aparam": (natoms, 2)}
    written: dict[str, list[np.ndarray]] = {}
    for k, nf in enumerate(set_frames):
        set_dir = sys_dir / f"set.{k:03d}"
        set_dir.mkdir()
        arrays = {"coord": rng.uniform(0.0, 5.0, (nf, natoms, 3))}
        if not nopbc:
            arrays["box"] = np.tile(np.diag([5.0, 6.0, 7.0]), (nf, 1, 1)) + rng.uniform(-0.1, 0.1, (nf, 3, 3))
        arrays |= {key: rng.normal(size=(nf, *shapes[key])) for key in labels}
        for key, value in arrays.items():
            np.save(set_dir / f"{key}.npy", value.reshape(nf, -1))  # DeePMD layout: (nf, per-frame values)
            written.setdefault(key, []).append(value)
    return {key: np.concatenate(parts) for key, parts in written.items()}


@pytest.fixture
def make_system(tmp_path: Path) -> Callable[..., tuple[Path, dict[str, np.ndarray]]]:
    """`make_system(name, atype, **kwargs)` -> (system dir under tmp_path, written arrays)."""

    def make(name: str, atype: Sequence[int], **kwargs) -> tuple[Path, dict[str, np.ndarray]]:
        sys_dir = tmp_path / name
        return sys_dir, write_system(sys_dir, atype, **kwargs)

    return make


@pytest.fixture
def shared_data() -> Path:
    """/work/shared/data (the shared DeePMD sets); the test is skipped where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data sets not found at {SHARED_DATA}")
    return SHARED_DATA
