"""`deeppot compress`: a model file in, the same model with tabulated embedding nets out (spec §10).

The tables cover the environment-matrix range the model meets in practice, which needs the smallest neighbour
distance r_min: from the model (`min_nbor_dist`, saved by training) or, when the model does not know it (-1),
from the training data named in an input.json (-t), through the same neighbour statistics as training.
"""

from __future__ import annotations

import logging
from pathlib import Path

from deeppot.io.model_file import load_model, save_model
from deeppot.model import EnergyModel
from deeppot.model.tabulate import CompressionError

log = logging.getLogger(__name__)


def min_nbor_dist_from_input(model: EnergyModel, input_json: str | Path) -> float:
    """r_min over the training systems of an input.json, for this model's type_map and rcut."""
    from deeppot.config.input import load_input, normalize_input, resolve_data_paths
    from deeppot.data import load_systems
    from deeppot.train.neighbor_stat import neighbor_stat

    input_json = Path(input_json)
    config = normalize_input(load_input(input_json))
    resolve_data_paths(config, input_json.parent)  # as `deeppot train` reads them
    systems = config["training"]["training_data"]["systems"]
    paths = [systems] if isinstance(systems, str) else list(systems)
    data = load_systems(paths, type_map=model.type_map)
    _, min_dist = neighbor_stat(data, model.rcut, len(model.type_map))
    if not min_dist > 1e-6:
        raise CompressionError(f"two atoms overlap in the training data (min distance {min_dist:.3g} Å)")
    log.info("min_nbor_dist from the training data: %f", min_dist)
    return min_dist


def compress_model(model: EnergyModel, step: float = 0.01, extrapolate: float = 5.0, check_frequency: int = -1,
                   training_input: str | Path | None = None) -> EnergyModel:
    """Tabulate the model's embedding nets in place and return it. training_input (an input.json) supplies
    min_nbor_dist from its training data; it is recomputed even when the model knows it (as DeePMD-kit's -t)."""
    min_nbor_dist = float(model.min_nbor_dist.item())
    if training_input is not None:
        min_nbor_dist = min_nbor_dist_from_input(model, training_input)
        model.min_nbor_dist.fill_(min_nbor_dist)
    elif not min_nbor_dist > 0:
        raise CompressionError("the model does not know its min_nbor_dist (-1): give the training data with "
                               "-t input.json so that it can be computed")
    model.descriptor.enable_compression(min_nbor_dist, step, extrapolate, check_frequency)
    log.info("compressed with min_nbor_dist %f, step %g, extrapolate %g", min_nbor_dist, step, extrapolate)
    return model


def compress_file(input_path: str | Path, output_path: str | Path, step: float = 0.01, extrapolate: float = 5.0,
                  check_frequency: int = -1, training_input: str | Path | None = None) -> EnergyModel:
    """Read a model, compress it, write it as .dp/.yaml (atomically: temporary file, then rename)."""
    model = compress_model(load_model(input_path), step, extrapolate, check_frequency, training_input)
    save_model(model, output_path)
    return model
