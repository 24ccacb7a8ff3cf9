"""se_e2_a energy model: environment matrix, embedding and fitting nets, forces and virial."""

from deeppot.model.energy_model import EnergyModel, PairData

__all__ = ["EnergyModel", "PairData"]
