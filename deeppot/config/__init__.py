"""input.json parsing: DeePMD-kit keys -> validated, normalised dicts (all defaults filled)."""

from deeppot.config.model import normalize_model
from deeppot.config.schema import ConfigError

__all__ = ["ConfigError", "normalize_model"]
