"""What DeePMD-kit reports about a model besides its outputs: parameter counts and observed types (`dp show`,
`DeepPot.get_model_size`, `DeepPot.get_observed_types`)."""

from __future__ import annotations

import math

from deeppot.model.energy_model import EnergyModel

__all__ = ["model_size", "observed_types"]

BIAS_ZERO = 1e-6  # an output bias at most this large (eV) marks a type absent from the training data


def model_size(model: EnergyModel) -> dict[str, int]:
    """Parameter counts: {"descriptor", "fitting-net", "total"} (DeePMD-kit's `get_model_size`: trainable weights
    only; davg/dstd and the output bias are buffers)."""
    descriptor = sum(p.numel() for p in model.descriptor.parameters())
    fitting = sum(p.numel() for p in model.fitting.parameters())
    return {"descriptor": descriptor, "fitting-net": fitting, "total": descriptor + fitting}


def observed_types(model: EnergyModel) -> dict[str, int | list[str]]:
    """{"type_num", "observed_type"}: the model definition's `info.observed_type` when it has one (DeePMD-kit 3.2
    writes it in training), else, as DeePMD-kit does for older models, the types whose output bias is not zero,
    sorted by atomic number (names that are no element last, in type-map order)."""
    listed = (model.config or {}).get("info", {}).get("observed_type")
    if listed is None:
        bias = model.fitting.out_bias.detach().cpu().abs()
        seen = [name for name, b in zip(model.type_map, bias.tolist(), strict=True) if b > BIAS_ZERO]
        listed = sorted(seen, key=_atomic_number)
    return {"type_num": len(listed), "observed_type": list(listed)}


def _atomic_number(symbol: str) -> float:
    try:
        from ase.data import atomic_numbers  # an optional dependency: without it the type map's order stays
    except ImportError:
        return math.inf
    return atomic_numbers.get(symbol, math.inf)
