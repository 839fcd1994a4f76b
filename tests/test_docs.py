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
    # An example's classes are the user's, not the module's: under the module's own
    # __name__ a Layer subclass would join tapeflow's built-in layers for later tests.
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False,
                             extraglobs={"__name__": f"__doctest__.{name}"})
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
