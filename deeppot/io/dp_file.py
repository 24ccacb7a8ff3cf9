"""DeePMD-kit's backend-independent model files: `.dp` (HDF5) and `.yaml` (spec §12.3).

`.dp`: every array under an `@variables` key becomes a dataset `/variable_NNNN` (traversal order) and is replaced
in the dict by that dataset's path; the dict is stored as JSON in the file attribute `json`. Loading parses JSON
and reads datasets: no code is executed, so an untrusted file is safe to open.
Files are written to a temporary name in the same folder and renamed, so a killed run never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np


def _encode(obj: Any, store: list[np.ndarray], in_variables: bool = False) -> Any:
    if isinstance(obj, dict):
        return {k: _encode(v, store, in_variables or k == "@variables") for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_encode(v, store, in_variables) for v in obj]
    if in_variables and obj is not None:  # DeePMD stores every non-null variable, scalars too, as a dataset
        store.append(np.asarray(obj))
        return f"/variable_{len(store) - 1:04d}"
    if isinstance(obj, np.ndarray):
        raise TypeError("arrays are only allowed under '@variables' keys")
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _decode(obj: Any, h5: Any, in_variables: bool = False) -> Any:
    if isinstance(obj, dict):
        return {k: _decode(v, h5, in_variables or k == "@variables") for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v, h5, in_variables) for v in obj]
    if in_variables and isinstance(obj, str) and obj.startswith("/variable_"):
        return h5[obj][()]
    return obj


def _stamp(data: dict[str, Any]) -> dict[str, Any]:
    from deeppot import __version__

    return {"software": "deepmd-kit", "version": "3.2.0", "time": datetime.now(UTC).isoformat(),
            "backend": "deeppot", "deeppot_version": __version__, **data}


def atomic_write(path: str | Path, write) -> None:
    """Call write(tmp_path), then rename onto path (same folder, so the rename is atomic)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_dp(path: str | Path, data: dict[str, Any]) -> None:
    """Write a serialized-model dict (`model`, `model_def_script`, ...) to a .dp (HDF5) or .yaml file."""
    data = _stamp(data)
    if str(path).endswith((".yaml", ".yml")):
        atomic_write(path, lambda tmp: _save_yaml(tmp, data))
        return
    import h5py

    def write(tmp: str) -> None:
        store: list[np.ndarray] = []
        encoded = _encode(data, store)
        with h5py.File(tmp, "w") as f:
            for i, arr in enumerate(store):
                f.create_dataset(f"variable_{i:04d}", data=arr)
            f.attrs["json"] = json.dumps(encoded, separators=(",", ":"))

    atomic_write(path, write)


def load_dp(path: str | Path) -> dict[str, Any]:
    """Read a .dp (HDF5) or .yaml serialized model into a dict with NumPy arrays."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    if path.suffix in (".yaml", ".yml"):
        return _load_yaml(path)
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if "json" not in f.attrs:
                raise ValueError(f"{path}: not a DeePMD-kit .dp model (no 'json' attribute)")
            return _decode(json.loads(f.attrs["json"]), f)
    except OSError as err:
        raise ValueError(f"{path}: not an HDF5 .dp model file ({err})") from None


def _yaml_array(arr: np.ndarray) -> dict[str, Any]:
    return {"@class": "np.ndarray", "@is_variable": True, "@version": 1, "dtype": arr.dtype.name,
            "value": arr.tolist()}


def _to_yaml_tree(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _to_yaml_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_to_yaml_tree(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _yaml_array(obj)
    return obj.item() if isinstance(obj, np.generic) else obj


def _from_yaml_tree(obj: Any) -> Any:
    if isinstance(obj, dict):
        if obj.get("@class") == "np.ndarray":
            return np.asarray(obj["value"], dtype=obj["dtype"])
        return {k: _from_yaml_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_from_yaml_tree(v) for v in obj]
    return obj


def _save_yaml(path: str, data: dict[str, Any]) -> None:
    import yaml

    with open(path, "w") as f:
        yaml.safe_dump(_to_yaml_tree(data), f)


def _load_yaml(path: Path) -> dict[str, Any]:
    import yaml

    with open(path) as f:
        return _from_yaml_tree(yaml.safe_load(f))
