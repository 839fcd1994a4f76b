"""Bad input gets a clear error, never a wrong number: each case is a call a user might
make, the error class it must raise, and words the message must hold (naming the op or
argument, and what was expected).

docs/bad-inputs.md is the table of these cases; a test keeps the two in step.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf

E = tf.errors.InvalidArgumentError

# (what the user wrote, the call, the error, a regular expression the message must match)
CASES = [
    ("tf.transpose(m, perm=[3, 0]) on a matrix", lambda: tf.transpose(tf.zeros([2, 3]), [3, 0]),
     E, r"transpose: `perm` must be a permutation of 0\.\.1"),
    ("tf.transpose(m, perm=[-1, 0])", lambda: tf.transpose(tf.zeros([2, 3]), [-1, 0]),
     E, r"transpose: `perm`"),
    ("tf.transpose(m, perm=[1.0, 0.0])", lambda: tf.transpose(tf.zeros([2, 3]), [1.0, 0.0]),
     TypeError, r"transpose: `perm` must be integers"),
    ("tf.concat([int tensor, [1.5]], 0)",
     lambda: tf.concat([tf.constant([1, 2]), [1.5]], 0),
     TypeError, r"concat: argument `values\[1\]`=\[1\.5\] cannot be converted to int32"),
    ("tf.stack([int tensor, [1.5, 2.5]])",
     lambda: tf.stack([tf.constant([1, 2]), [1.5, 2.5]]),
     TypeError, r"stack: argument `values\[1\]`.*not integral"),
    ("tf.add_n([x of shape [2], y of shape [3]])",
     lambda: tf.add_n([tf.zeros([2]), tf.zeros([3])]),
     E, r"add_n: `inputs\[1\]` has shape \(3,\), `inputs\[0\]` \(2,\)"),
    ("tf.math.floordiv(int, 0)", lambda: tf.math.floordiv(tf.constant([5]), tf.constant([0])),
     E, r"floordiv: integer division by zero"),
    ("tf.math.floormod(int, 0)", lambda: tf.math.floormod(tf.constant([5]), tf.constant([0])),
     E, r"floormod: integer division by zero"),
    ("tf.Variable([1.0, 'a'])", lambda: tf.Variable([1.0, "a"]),
     TypeError, r"numbers and bools, not strings"),
    ("tf.constant('a')", lambda: tf.constant("a"), TypeError, r"numbers and bools, not strings"),
    ("tf.sin('abc')", lambda: tf.sin("abc"),
     TypeError, r"sin: argument `x` could not be converted.*not strings"),
    ("tf.reshape(x, [2.0, 3.0])", lambda: tf.reshape(tf.zeros([6]), [2.0, 3.0]),
     TypeError, r"reshape: `shape` must be integers"),
    ("tf.reshape(x, [-2, -3])", lambda: tf.reshape(tf.zeros([6]), [-2, -3]),
     E, r"reshape: `shape` \[-2, -3\] must hold non-negative sizes and at most one -1"),
    ("tf.broadcast_to(x, [2.0, 2.0])", lambda: tf.broadcast_to(tf.zeros([2]), [2.0, 2.0]),
     TypeError, r"broadcast_to: `shape` must be integers"),
    ("tf.expand_dims(x, 0.5)", lambda: tf.expand_dims(tf.zeros([2]), 0.5),
     TypeError, r"expand_dims: `axis` must be integers"),
    ("tf.constant(1., shape=[2.5])", lambda: tf.constant(1.0, shape=[2.5]),
     TypeError, r"constant: `shape` must be non-negative integers"),
    ("x[::0]", lambda: tf.zeros([3])[::0], E, r"getitem: slice step cannot be zero"),
    ("v.assign_add(a value of another shape)",
     lambda: tf.Variable([1.0, 2.0]).assign_add([1.0, 2.0, 3.0]),
     ValueError, r"Variable\.assign_add: value has shape \(3,\), variable .* has shape \(2,\)"),
    ("int8 tensor + 300", lambda: tf.constant([1], tf.int8) + 300,
     TypeError, r"add: argument `y`=300 cannot be converted to int8"),
    ("tf.function(f, input_signature=TensorSpec(...)), not in a list",
     lambda: tf.function(lambda x: x, input_signature=tf.TensorSpec([2])),
     TypeError, r"`input_signature` must be a list or tuple of TensorSpec"),
    ("tf.reduce_max over an empty axis", lambda: tf.reduce_max(tf.zeros([0, 2]), axis=0),
     E, r"reduce_max: axis 0 of `input_tensor` \(shape \(0, 2\)\) is empty"),
    ("tf.reduce_min of an empty tensor", lambda: tf.reduce_min(tf.zeros([2, 0])),
     E, r"reduce_min: axis 1 .* is empty"),
    ("tf.jacfwd(f) where f returns an integer tensor",
     lambda: tf.jacfwd(lambda x: tf.cast(x, tf.int32))(np.ones(3)),
     TypeError, r"jacfwd: output 0 of the function has dtype int32"),
    ("tape.batch_jacobian(y, x) with a rank-1 target", lambda: _rank_one_batch_jacobian(),
     ValueError, r"batch_jacobian: `target` \(2,\) and `source` \(2,\) must have rank >= 2"),
    ("a tf.Variable made on a second trace of a tf.function",
     lambda: _variable_on_a_second_trace(),
     ValueError, r"made the variables \['Variable:0'\] while tracing again"),
    ("a tensor kept from inside a traced function, used after", lambda: _kept_from_a_trace() + 1.,
     tf.errors.InaccessibleTensorError,
     r"was made while tracing tapeflow.function 'keep' and is used after that trace ended"),
    ("tf.split(x, 3) of 7 rows, in a function that serves every size of 6, 9, 12",
     lambda: _split_at_a_size_the_graph_does_not_serve(),
     tf.errors.InvalidArgumentError,
     r"split: `num_or_size_splits`=3 must be a positive divisor of the length 7"),
]


def _split_at_a_size_the_graph_does_not_serve():
    # The graph holds n // 3 and a size check that n % 3 == 0 (NOTE(symbolic-sizes)): 7
    # rows trace again, and raise as eagerly, never a piece of the wrong rows.
    f = tf.function(lambda x: tf.split(x, 3)[1], input_signature=[tf.TensorSpec([None])])
    for n in (6, 9, 12):
        f(tf.zeros([n]))
    return f(tf.zeros([7]))


def _rank_one_batch_jacobian():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    return tape.batch_jacobian(y, x)


def _variable_on_a_second_trace():
    @tf.function
    def f(x):
        return tf.Variable(x) * 2.0

    f(tf.constant(1.0))
    return f(tf.constant([1.0, 2.0]))


def _kept_from_a_trace():
    kept = []

    @tf.function
    def keep(x):
        kept.append(x * 2.)
        return x

    keep(tf.constant(1.))
    return kept[0]


@pytest.mark.parametrize("what, call, error, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(what, call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_docs_table_lists_every_case():
    table = (Path(__file__).parent.parent / "docs" / "bad-inputs.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(.+?)` \| `(\w+)` \|", table, re.M)}
    for what, _, error, _ in CASES:
        assert rows.get(what) == error.__name__, f"docs/bad-inputs.md lacks: {what}"
    assert len(rows) == len(CASES), sorted(set(rows) - {c[0] for c in CASES})


# ---------------------------------------------------------------- the right number instead
def test_integer_reduce_mean_truncates_toward_zero():
    assert int(tf.reduce_mean(tf.constant([-3, -4]))) == -3        # TensorFlow: -3 (not -4)
    assert int(tf.reduce_mean(tf.constant([3, 4]))) == 3
    np.testing.assert_array_equal(
        tf.reduce_mean(tf.constant([[-7, 0], [-1, 5]]), axis=1).numpy(), [-3, 2])


def test_an_extremum_over_a_non_empty_axis_of_an_empty_tensor_is_empty():
    for op in (tf.reduce_max, tf.reduce_min):
        out = op(tf.zeros([0, 2]), axis=1)
        assert out.shape == (0,)


def test_the_integer_division_check_runs_at_every_replay():
    f = tf.function(lambda x, y: tf.math.floordiv(x, y))
    assert int(f(tf.constant(7), tf.constant(2))) == 3
    with pytest.raises(E, match="integer division by zero"):
        f(tf.constant(7), tf.constant(0))
