"""Single-task fine-tuning (`deeppot train input.json --finetune MODEL`), as DeePMD-kit 3.2's PyTorch backend does it.

What DeePMD-kit does (deepmd/pt/entrypoints/main.py, deepmd/utils/finetune.py, deepmd/pt/train/training.py):
- the model section: with `--use-pretrain-script` the descriptor and fitting_net come from the pretrained model
  (the input's `trainable` flags kept); without it, input.json's are used and must fit the pretrained weights;
- the weights, davg/dstd and out_bias are copied from the pretrained model (no statistics recomputed);
- the energy bias is then adjusted on the new training data with change-by-statistic: the least-squares fit of the
  residual E_label - E_model over per-type atom counts is ADDED to out_bias (`model_change_out_bias`, spec §5.3);
- the optimizer, step counter and learning rate start fresh.

Where deeppot differs (on purpose):
- a type_map that is a subset of the pretrained one, in any order, is mapped by element names: every per-type tensor
  (embedding and fitting nets, davg/dstd with their neighbour-slot blocks, sel, biases) is re-indexed, and the
  pretrained elements input.json leaves out are kept after its types (see finetune_model_section). DeePMD-kit 3.2
  raises NotImplementedError for se_e2_a here (`DescrptSeA.change_type_map`); the re-indexed model is the same
  function of the coordinates, so nothing is lost. A new element cannot be added (neither can DeePMD-kit for
  se_e2_a: its nets would have no pretrained weights);
- hyper-parameters that differ without `--use-pretrain-script` are an error naming the keys; DeePMD-kit only warns
  and then fails (or, worse, silently loads same-shaped weights built for another rcut).
"""

from __future__ import annotations

import logging
from itertools import accumulate
from pathlib import Path
from typing import Any

import torch

from deeppot.config.model import precision_dtype
from deeppot.io.model_file import load_model
from deeppot.model import EnergyModel

log = logging.getLogger("deeppot")

# the hyper-parameters that decide the shapes or the meaning of the pretrained weights (seed and trainable do not)
DESCRIPTOR_HYPER = ("rcut", "rcut_smth", "sel", "neuron", "axis_neuron", "activation_function", "resnet_dt",
                    "type_one_side", "exclude_types", "env_protection", "set_davg_zero", "precision")
FITTING_HYPER = ("neuron", "activation_function", "resnet_dt", "precision")


class FinetuneError(ValueError):
    """The pretrained model cannot be fine-tuned with this input; the message says why and what to do."""


def load_pretrained(path: str | Path) -> EnergyModel:
    """The pretrained model from any file deeppot reads (.dp, .yaml, deeppot or DeePMD-kit .pt), uncompressed."""
    path = Path(path)
    if not path.suffix and not path.exists():  # DeePMD-kit appends .pt to a checkpoint name without a suffix
        path = path.with_suffix(".pt")
    if not path.is_file():
        raise FileNotFoundError(f"--finetune {path}: pretrained model not found")
    model = load_model(path)
    if model.descriptor.compressed:  # its uncompressed nets are inside: fine-tune those, not the tables
        model.descriptor.tables = None
    log.info("fine-tuning from %s (type_map %s, sel %s, rcut %g)", path, model.type_map, model.sel, model.rcut)
    return model


def type_index(pretrained_map: list[str], type_map: list[str], source: str | Path) -> list[int]:
    """For each type of the new type_map, its index in the pretrained model's type_map (matched by name)."""
    missing = [name for name in type_map if name not in pretrained_map]
    if missing:
        raise FinetuneError(
            f"--finetune {source}: element(s) {', '.join(missing)} of input.json's type_map are not in the pretrained "
            f"model's type_map {pretrained_map}. se_e2_a has no weights for a new element and cannot extend its type "
            "map (DeePMD-kit 3.2 cannot either); train from scratch, or use only the pretrained elements")
    return [pretrained_map.index(name) for name in type_map]


def pretrained_hyper(model: EnergyModel, index: list[int]) -> dict[str, dict[str, Any]]:
    """The descriptor/fitting hyper-parameters of the pretrained weights, re-indexed onto the new types."""
    d, f = model.descriptor, model.fitting
    new_of_old = {old: new for new, old in enumerate(index)}
    excluded = sorted({tuple(sorted((new_of_old[a], new_of_old[b]))) for a, b in d.exclude_types
                       if a in new_of_old and b in new_of_old})
    descriptor = {"rcut": d.rcut, "rcut_smth": d.rcut_smth, "sel": [d.sel[t] for t in index],
                  "neuron": list(d.neuron), "axis_neuron": d.axis_neuron,
                  "activation_function": d.activation_function, "resnet_dt": d.resnet_dt,
                  "type_one_side": d.type_one_side, "exclude_types": [list(p) for p in excluded],
                  "env_protection": d.env_protection, "set_davg_zero": d.set_davg_zero,
                  "precision": _precision_name(d.dtype)}
    fitting = {"neuron": list(f.neuron), "activation_function": f.activation_function, "resnet_dt": f.resnet_dt,
               "precision": _precision_name(f.dtype)}
    return {"descriptor": descriptor, "fitting_net": fitting}


def _precision_name(dtype: torch.dtype) -> str:
    return {torch.float64: "float64", torch.float32: "float32"}[dtype]


def _same(key: str, given: Any, pretrained: Any) -> bool:
    if key == "precision":
        return precision_dtype(given) == precision_dtype(pretrained)
    if key == "exclude_types":
        return sorted(tuple(sorted(p)) for p in given) == sorted(tuple(p) for p in pretrained)
    if isinstance(given, float) or isinstance(pretrained, float):
        return float(given) == float(pretrained)
    return given == pretrained


def hyper_differences(model_section: dict[str, Any], hyper: dict[str, dict[str, Any]]) -> list[str]:
    """'model.descriptor.rcut: input.json 5.0, pretrained 6.0' for each hyper-parameter that differs."""
    lines = []
    for section, keys in (("descriptor", DESCRIPTOR_HYPER), ("fitting_net", FITTING_HYPER)):
        for key in keys:
            given, pretrained = model_section[section][key], hyper[section][key]
            if not _same(key, given, pretrained):
                lines.append(f"model.{section}.{key}: input.json {given!r}, pretrained {pretrained!r}")
    return lines


def finetune_model_section(model_section: dict[str, Any], pretrained: EnergyModel, use_pretrain_script: bool,
                           source: str | Path) -> dict[str, Any]:
    """The model section of the fine-tuning run (a new dict): input.json's, checked against the pretrained model,
    or with `use_pretrain_script` the pretrained model's descriptor and fitting_net.

    The type_map is input.json's followed by the pretrained elements it does not list: se_e2_a's descriptor depends
    on every type's neighbour slots (their number Nc = sum(sel) scales it, and empty slots still enter it), so
    dropping a type would change the pretrained function; kept, the fine-tuned model starts as that function.
    """
    given = model_section["type_map"]
    type_map = given + [name for name in pretrained.type_map if name not in given]
    index = type_index(pretrained.type_map, given, source)
    index += [pretrained.type_map.index(name) for name in type_map[len(given):]]
    hyper = pretrained_hyper(pretrained, index)
    section = {**model_section, "type_map": type_map, "descriptor": dict(model_section["descriptor"]),
               "fitting_net": dict(model_section["fitting_net"])}
    if isinstance(section["descriptor"]["sel"], str):  # "auto": the pretrained sel is the only one its weights fit
        log.info('model.descriptor.sel "%s": taken from the pretrained model', section["descriptor"]["sel"])
        section["descriptor"]["sel"] = hyper["descriptor"]["sel"][: len(given)]
    differences = hyper_differences(section, _restricted(hyper, len(given)))
    if differences and not use_pretrain_script:
        raise FinetuneError(f"--finetune {source}: the model section of input.json does not match the pretrained "
                            "model:\n  " + "\n  ".join(differences) +
                            "\nmake them equal, or pass --use-pretrain-script to take the pretrained model's")
    for line in differences:
        log.info("--use-pretrain-script: %s -> the pretrained value", line)
    for name in ("descriptor", "fitting_net"):
        section[name].update(hyper[name])
    log.info("fine-tuning type map: input.json %s -> model %s (pretrained type indices %s)", given, type_map, index)
    if len(type_map) > len(given):
        log.info("kept the pretrained element(s) %s after input.json's types: se_e2_a's descriptor depends on "
                 "every type's neighbour slots", type_map[len(given):])
    return section


def _restricted(hyper: dict[str, dict[str, Any]], ntypes: int) -> dict[str, dict[str, Any]]:
    """The hyper-parameters as input.json states them: sel and exclude_types of its own `ntypes` types only."""
    desc = dict(hyper["descriptor"])
    desc["sel"] = desc["sel"][:ntypes]
    desc["exclude_types"] = [p for p in desc["exclude_types"] if max(p) < ntypes]
    return {"descriptor": desc, "fitting_net": hyper["fitting_net"]}


def copy_pretrained(model: EnergyModel, pretrained: EnergyModel) -> None:
    """Load the pretrained weights, davg/dstd and biases into `model`, re-indexed onto its type_map.

    Embedding net (a, b) (index a + b*ntypes, or b with type_one_side), fitting net t, bias t, and davg/dstd rows
    of centre type a with their neighbour-slot blocks b are taken from the pretrained types index[a], index[b].
    """
    index = type_index(pretrained.type_map, model.type_map, "pretrained")
    source = pretrained.state_dict()
    ntypes_old = len(pretrained.type_map)
    if model.descriptor.type_one_side:
        nets = index
    else:
        nets = [index[a] + index[b] * ntypes_old for b in range(len(index)) for a in range(len(index))]
    slots = _slot_index(pretrained.sel, index)
    state = model.state_dict()
    for key in state:
        if key.startswith("descriptor.nets."):
            state[key] = source[key][nets]
        elif key in ("descriptor.davg", "descriptor.dstd"):
            state[key] = source[key][index][:, slots]
        elif key.startswith("fitting.nets.") or key in ("fitting.bias_atom_e", "fitting.out_bias"):
            state[key] = source[key][index]
        elif key == "descriptor.excluded":
            state[key] = source[key][index][:, index]
    model.load_state_dict(state)


def _slot_index(sel_old: list[int], index: list[int]) -> list[int]:
    """The pretrained neighbour slot of each new slot: block b of the new layout is block index[b] of the old."""
    starts = [0, *accumulate(sel_old)]
    return [starts[old] + j for old in index for j in range(sel_old[old])]


def adjust_out_bias(model: EnergyModel, systems: list, device: torch.device | str | None = None) -> None:
    """change-by-statistic on the sampled training frames (DeePMD-kit's default when fine-tuning, spec §5.3):
    out_bias += lstsq fit of E_label - E_model over per-type atom counts (deeppot.tools.change_bias)."""
    from deeppot.tools.change_bias import fitted_bias

    old = model.fitting.out_bias.detach().cpu().clone()
    new = fitted_bias(model, systems, "change", device)
    model.fitting.out_bias.copy_(torch.as_tensor(new, dtype=torch.float64))
    log.info("Change output bias of %s from %s to %s.", model.type_map, old.numpy(), new)
