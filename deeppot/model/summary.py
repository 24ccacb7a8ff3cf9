"""What DeePMD-kit reports about a model besides its outputs: parameter counts and observed types (`dp show`,
`DeepPot.get_model_size`, `DeepPot.get_observed_types`)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from deeppot.model.energy_model import EnergyModel

__all__ = ["by_atomic_number", "model_size", "observed_in", "observed_types"]

BIAS_ZERO = 1e-6  # an output bias at most this large (eV) marks a type absent from the training data
_SYMBOLS = ("H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr "
            "Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W "
            "Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt "
            "Ds Rg Cn Nh Fl Mc Lv Ts Og")
ELEMENTS = tuple(_SYMBOLS.split())  # element Z at index Z - 1
ATOMIC_NUMBER = {symbol: z for z, symbol in enumerate(ELEMENTS, 1)}


def model_size(model: EnergyModel) -> dict[str, int]:
    """Parameter counts: {"descriptor", "fitting-net", "total"} (DeePMD-kit's `get_model_size`: trainable weights
    only; davg/dstd and the output bias are buffers)."""
    descriptor = sum(p.numel() for p in model.descriptor.parameters())
    fitting = sum(p.numel() for p in model.fitting.parameters())
    return {"descriptor": descriptor, "fitting-net": fitting, "total": descriptor + fitting}


def observed_types(model: EnergyModel) -> dict[str, int | list[str]]:
    """{"type_num", "observed_type"}: the model definition's `info.observed_type` when it has one (DeePMD-kit 3.2
    writes it in training, and so does deeppot), else, as DeePMD-kit does for older models, the types whose output
    bias is not zero, sorted by atomic number (names that are no element last, in type-map order)."""
    listed = (model.config or {}).get("info", {}).get("observed_type")
    if listed is None:
        bias = model.fitting.out_bias.detach().cpu().abs()
        seen = [name for name, b in zip(model.type_map, bias.tolist(), strict=True) if b > BIAS_ZERO]
        listed = by_atomic_number(seen)
    return {"type_num": len(listed), "observed_type": list(listed)}


def by_atomic_number(names: Iterable[str]) -> list[str]:
    """Type names sorted by atomic number, as DeePMD-kit sorts observed types; names that are no element last, in
    the order given."""
    return sorted(names, key=lambda name: ATOMIC_NUMBER.get(name, math.inf))


def observed_in(atypes: Iterable[np.ndarray], type_map: list[str]) -> list[str]:
    """The types that occur in the given type arrays (of the training systems), by atomic number: what DeePMD-kit
    3.2's training records as the model's `info.observed_type`."""
    present = sorted({int(t) for atype in atypes for t in np.unique(atype)})
    return by_atomic_number(type_map[t] for t in present if 0 <= t < len(type_map))
