"""Training: loss, learning-rate schedule, lcurve.out writer (the loop and checkpoints live beside them)."""

from deeppot.train.lcurve import LcurveWriter, format_eta, format_log_line, read_lcurve
from deeppot.train.loss import EnergyLoss
from deeppot.train.lr import ExpDecayLR, build_lr

__all__ = ["EnergyLoss", "ExpDecayLR", "LcurveWriter", "build_lr", "format_eta", "format_log_line", "read_lcurve"]
