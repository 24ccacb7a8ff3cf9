"""MD tests run many tiny steps on one intra-op thread (`helpers.one_thread`)."""

from helpers import one_thread  # noqa: F401  (autouse: applies to this folder)
