"""Every public docstring example runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tapeflow

MODULES = sorted(m.name for m in pkgutil.walk_packages(tapeflow.__path__, "tapeflow."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
