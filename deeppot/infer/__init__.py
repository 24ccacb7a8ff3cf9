"""Inference: `DeepPot` (DeePMD-kit's evaluation API), the chunked evaluation engine under it, model deviation."""

from deeppot.infer.deep_pot import DeepPot, Evaluator, standard_input
from deeppot.infer.model_devi import make_model_devi, model_deviation

__all__ = ["DeepPot", "Evaluator", "make_model_devi", "model_deviation", "standard_input"]
