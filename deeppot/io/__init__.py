"""Model files: DeePMD-kit .dp/.yaml serialisation and deeppot checkpoints."""

from deeppot.io.model_file import load_model, save_model

__all__ = ["load_model", "save_model"]
