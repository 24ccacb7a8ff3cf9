"""Inference: `DeepPot` (DeePMD-kit's evaluation API) and the chunked evaluation engine under it."""

from deeppot.infer.deep_pot import DeepPot, Evaluator, standard_input

__all__ = ["DeepPot", "Evaluator", "standard_input"]
