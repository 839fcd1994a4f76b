"""Optional dependencies, loaded on first use: the one place that imports them lazily.

The core needs NumPy only. SciPy (faster special functions, scipy.sparse results),
graphviz (pictures of graphs) and tqdm (progress bars) are extras, each imported the
first time something asks for it, never by `import tapeflow`: `module_or_none` for an
extra whose absence has a fallback, `required` for one a call cannot do without (its
error names the extra to install).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["module_or_none", "required"]


def module_or_none(name: str) -> ModuleType | None:
    """The module `name`, imported now if not yet; None where it is not installed.

    Example:
        >>> from tapeflow.optional import module_or_none
        >>> module_or_none("math").sqrt(4.0), module_or_none("not_a_module_here")
        (2.0, None)
    """
    try:
        return importlib.import_module(name)  # sys.modules' once imported
    except ImportError:
        return None


def required(name: str, extra: str, purpose: str) -> ModuleType:
    """The module `name`, or an ImportError saying what needs it and which extra of
    tapeflow installs it."""
    module = module_or_none(name)
    if module is None:
        raise ImportError(f"{purpose} needs {name.partition('.')[0]}: "
                          f"pip install 'tapeflow[{extra}]'.")
    return module
