"""Progress for long user-facing work: tqdm when it is installed (the `progress` extra),
plain lines of text otherwise; always on stderr, so stdout stays the program's output."""

from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Iterator

from .optional import module_or_none

__all__ = ["progress"]


def progress(iterable: Iterable, total: int | None = None, desc: str = "",
             enabled: bool = True) -> Iterable:
    """`iterable`, reporting how far it has got: a tqdm bar, or without tqdm a line
    "desc: k/total" at most every half second (and at the end). ``enabled=False`` returns
    `iterable` itself.

    Example:
        >>> from tapeflow.progress import progress
        >>> sum(progress(range(4), desc="adding", enabled=False))
        6
    """
    if not enabled:
        return iterable
    if total is None:
        total = len(iterable) if hasattr(iterable, "__len__") else None  # type: ignore[arg-type]
    tqdm = module_or_none("tqdm.auto")  # the progress extra
    if tqdm is None:
        return _plain(iterable, total, desc)
    return tqdm.tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False)


def _plain(iterable: Iterable, total: int | None, desc: str) -> Iterator[Any]:
    last = time.monotonic()
    done = shown = 0
    of = f"/{total}" if total is not None else ""
    for item in iterable:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= 0.5:
            sys.stderr.write(f"{desc}: {done}{of}\n")
            last, shown = now, done
    if done != shown:  # the final count, always
        sys.stderr.write(f"{desc}: {done}{of}\n")
