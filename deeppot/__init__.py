"""deeppot: fast Deep Potential training and inference, compatible with DeePMD-kit."""

__version__ = "0.1.0"
