"""Running a test's work in several threads at once, for the tests of shared objects."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable


def run_in_threads(work: Callable[[Any], None], args: Any = 8, switch_interval: float | None = None,
                   barrier: bool = False) -> list[BaseException]:
    """Run ``work(a)`` for each `a` of `args` (an int n: 0..n-1) in threads of their own,
    started together (behind a barrier if asked), with Python switching threads every
    `switch_interval` seconds if given (1e-6 makes races show); the exceptions they
    raised, in no order."""
    args = list(range(args)) if isinstance(args, int) else list(args)
    errors: list = []
    gate = threading.Barrier(len(args)) if barrier else None

    def run(a: Any) -> None:
        try:
            if gate is not None:
                gate.wait()
            work(a)
        except BaseException as e:  # noqa: BLE001 - returned to the test
            errors.append(e)

    interval = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        threads = [threading.Thread(target=run, args=(a,)) for a in args]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return errors
