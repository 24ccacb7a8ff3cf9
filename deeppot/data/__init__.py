"""DeePMD training data: systems on disk -> `System`, batch sizes, sampling probabilities, frame batches."""

from deeppot.data._arrays import LABELS, DataError
from deeppot.data.batching import FrameSampler, nbatches, resolve_batch_sizes, system_probs
from deeppot.data.extxyz import load_extxyz
from deeppot.data.system import System, find_systems, load_system, load_systems, make_system, read_datafile

__all__ = [
    "LABELS",
    "DataError",
    "FrameSampler",
    "System",
    "find_systems",
    "load_extxyz",
    "load_system",
    "load_systems",
    "make_system",
    "nbatches",
    "read_datafile",
    "resolve_batch_sizes",
    "system_probs",
]
