"""Compat tests run tiny models on one intra-op thread (`helpers.one_thread`)."""

from helpers import one_thread  # noqa: F401  (autouse: applies to this folder)
