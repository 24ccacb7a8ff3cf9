"""Testing trained models: `dp test` errors and detail files, `dp eval-desc` descriptors and `dp embed`
embeddings, parity and learning-curve figures."""

from deeppot.evaluate.dp_test import SystemResult, TestReport, run_test, systems_to_test
from deeppot.evaluate.embed import embed
from deeppot.evaluate.eval_desc import eval_desc
from deeppot.evaluate.plots import parity_plot, plot_lcurve, plot_parity

__all__ = ["SystemResult", "TestReport", "embed", "eval_desc", "parity_plot", "plot_lcurve", "plot_parity", "run_test",
           "systems_to_test"]
