"""Model files: DeePMD-kit .dp/.yaml serialisation and deeppot checkpoints."""

from deeppot.io.model_file import cast_model, load_model, save_model

__all__ = ["cast_model", "load_model", "save_model"]
