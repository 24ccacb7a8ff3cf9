"""`deeppot show MODEL ATTRIBUTES...`: DeePMD-kit's `dp show` for the models deeppot reads.

The lines are DeePMD-kit's: the type map, the `descriptor` and `fitting_net` sections of the model definition the
model was frozen with (`model_def_script` of a .dp file, the `model` section of a checkpoint's input), and the
parameter counts as DeePMD-kit's PyTorch backend counts them (trainable weights only; davg/dstd and the output
bias are buffers).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deeppot.io import load_model
from deeppot.model.summary import model_size, observed_types

log = logging.getLogger(__name__)

ATTRIBUTES = ("model-branch", "type-map", "descriptor", "fitting-net", "size", "observed-type")


def show(model_path: str | Path, attributes: Sequence[str]) -> dict[str, Any]:
    """Log the requested attributes of a model file as `dp show` does; return them as a dict."""
    unknown = [a for a in attributes if a not in ATTRIBUTES]
    if unknown:
        raise ValueError(f"unknown attribute {unknown[0]!r}; expected some of {list(ATTRIBUTES)}")
    model = load_model(model_path)
    params = model.config or {}
    log.info("This is a singletask model")
    if "model-branch" in attributes:
        raise ValueError(f"{model_path}: the 'model-branch' option requires a multitask model; "
                         "the provided model does not meet this criterion")
    shown: dict[str, Any] = {}
    if "type-map" in attributes:
        shown["type-map"] = list(params.get("type_map", model.type_map))
        log.info("The type_map is %s", shown["type-map"])
    for attr, key, what in (("descriptor", "descriptor", "Descriptor"), ("fitting-net", "fitting_net", "Fitting net")):
        if attr not in attributes:
            continue
        if key in params:
            shown[attr] = params[key]
            log.info("The %s parameter is %s", key, params[key])
        else:
            log.warning("%s parameters not available (model was not frozen with training config).", what)
    if "size" in attributes:
        shown["size"] = model_size(model)
        log.info("Parameter counts:")
        for key in sorted(shown["size"]):
            log.info("Parameters in %s: %s", key, f"{shown['size'][key]:,}")
    if "observed-type" in attributes:
        shown["observed-type"] = observed_types(model)
        log.info("The observed types for this model: ")
        log.info("Number of observed types: %d ", shown["observed-type"]["type_num"])
        log.info("Observed types: %s ", shown["observed-type"]["observed_type"])
    return shown
