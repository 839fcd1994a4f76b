"""Op-table entries of the random draws (src/tapeflow/ops/random.py): exemptions only.

A draw is a stateful primitive without derivative whose numbers change from call to
call, so no row fits the table's checks; tests/ops/test_random.py covers them (shuffle's gradient, through its gather, too).
"""

from __future__ import annotations

ROWS: list = []

NONDIFF_ROWS: list = []

EXEMPT: dict = {
    name: "a draw's numbers differ from call to call, so the table's batching-vs-loop checks "
          "do not apply: tests/ops/test_random.py checks values, seeds, replay and vmap"
    for name in ("random_standard_normal", "random_uniform", "random_uniform_int",
                 "random_permutation")
}
