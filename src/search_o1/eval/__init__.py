"""Evaluation: benchmark loaders, metrics, the code sandbox, resumable runs and reports."""

from search_o1.eval.datasets import KNOWN, Dataset, load_dataset, load_file
from search_o1.eval.metrics import (
    choice_scores,
    math_scores,
    qa_scores,
    verify_equal,
)
from search_o1.eval.paper_math import math_equal
from search_o1.eval.report import diff, load_run, plot, render_summary, side_by_side
from search_o1.eval.rows import Item
from search_o1.eval.runner import RunOptions, RunOutcome, finalize, run_eval
from search_o1.eval.sandbox import Limits, TestCase, run_tests

__all__ = [
    "KNOWN",
    "Dataset",
    "Item",
    "Limits",
    "RunOptions",
    "RunOutcome",
    "TestCase",
    "choice_scores",
    "diff",
    "finalize",
    "load_dataset",
    "load_file",
    "load_run",
    "math_equal",
    "math_scores",
    "plot",
    "qa_scores",
    "render_summary",
    "run_eval",
    "run_tests",
    "side_by_side",
    "verify_equal",
]
