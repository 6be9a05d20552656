"""Every example in the package's docstrings runs and shows what the docstring says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import search_o1

MODULES = sorted(m.name for m in pkgutil.walk_packages(search_o1.__path__, "search_o1."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        # An example with an invalid escape (a backslash a non-raw docstring kept) runs
        # other text than it shows: it fails here instead of warning at every run.
        for category in (DeprecationWarning, SyntaxWarning):
            warnings.filterwarnings("error", "invalid escape sequence", category)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, name
