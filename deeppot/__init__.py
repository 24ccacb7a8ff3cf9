"""deeppot: fast Deep Potential training and inference, compatible with DeePMD-kit."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `deeppot.DeepPot` without importing torch and the model stack for every `import deeppot`
    if name == "DeepPot":
        from deeppot.infer import DeepPot

        return DeepPot
    raise AttributeError(f"module 'deeppot' has no attribute {name!r}")
