"""Convert any model deeppot reads into DeePMD-kit's backend-independent files (`.dp` / `.yaml`).

Input: `.dp`/`.yaml` (deeppot's or DeePMD-kit's), a deeppot training checkpoint or a DeePMD-kit PyTorch training
checkpoint (`.pt`). The model is rebuilt and re-serialised, so an output is only written for models deeppot can
evaluate exactly; unsupported features raise UnsupportedModelError naming the feature.
"""

from __future__ import annotations

from pathlib import Path

from deeppot.io.model_file import DP_SUFFIXES, load_model, save_model


def convert(input_path: str | Path, output_path: str | Path) -> None:
    """Read the model at `input_path` and write it to `output_path` (.dp HDF5, or .yaml/.yml)."""
    if Path(output_path).suffix not in DP_SUFFIXES:
        raise ValueError(f"{output_path}: the output must be a .dp or .yaml file "
                         "(`dp convert-backend model.dp model.pth` then makes a DeePMD-kit TorchScript model)")
    save_model(load_model(input_path), output_path)
