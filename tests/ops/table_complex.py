"""Op-table rows of the complex-number primitives (src/tapeflow/ops/complex.py):
complex, real, imag and complex_abs, and the family's composite squared_difference.

The rows are real functions of real inputs (complex_part_mix in tests/op_table.py
mixes both parts of a complex result), so every check of tests/rules/ sees the complex
rules: construction and parts, the magnitude, squared_difference of complex values.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import Row, args, away_from_zero, complex_part_mix, normal

ROWS: list = [
    Row("complex", lambda a, b: complex_part_mix(tf.complex(a, b) * tf.complex(b, a)),
        args(normal(3, 4), normal(4)),
        lambda a, b: (lambda w: w.real + 0.5 * w.imag)((a + 1j * b) * (b + 1j * a)),
        prims=("complex", "real", "imag", "multiply")),
    Row("complex_abs", lambda a, b: tf.abs(tf.complex(a, b)), args(normal(5), away_from_zero(5)),
        np.hypot, prims=("complex_abs", "complex")),
    Row("complex_squared_difference",
        lambda a, b: tf.math.real(
            tf.math.squared_difference(tf.complex(a, b), tf.complex(b, a * a))),
        args(normal(5), normal(5)), lambda a, b: (a - b) ** 2 + (b - a * a) ** 2,
        prims=("complex", "subtract", "real", "imag", "square")),
    Row("squared_difference", tf.math.squared_difference, args(normal(3, 4), normal(4)),
        lambda x, y: (x - y) ** 2, prims=("subtract", "square")),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
