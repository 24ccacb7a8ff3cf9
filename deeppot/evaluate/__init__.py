"""Testing trained models: `dp test` errors and detail files, parity and learning-curve figures."""

from deeppot.evaluate.dp_test import SystemResult, TestReport, run_test, systems_to_test
from deeppot.evaluate.plots import parity_plot, plot_lcurve, plot_parity

__all__ = ["SystemResult", "TestReport", "parity_plot", "plot_lcurve", "plot_parity", "run_test", "systems_to_test"]
