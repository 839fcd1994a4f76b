"""The merge layers (`Add`, `Subtract`, `Multiply`, `Average`, `Maximum`, `Minimum`,
`Concatenate`, `Dot`) and their functional forms: values against NumPy (broadcasting,
tf_keras' rank expansion after the batch axis, Dot's batch_dot), shapes (also symbolic,
in functional models), masks, dtypes, gradients against central differences in float64,
tf.function, and the errors of inputs that cannot merge. Last, values, shapes, masks and
errors against tf_keras 2.21 where TensorFlow is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

from keras_helpers import _rand, assert_tape_gradients_match, tf_keras

ELEMENTWISE = {
    "Add": (layers.Add, layers.add, lambda xs: sum(xs[1:], xs[0])),
    "Multiply": (layers.Multiply, layers.multiply, lambda xs: np.prod(np.broadcast_arrays(*xs), 0)),
    "Average": (layers.Average, layers.average, lambda xs: sum(xs[1:], xs[0]) / len(xs)),
    "Maximum": (layers.Maximum, layers.maximum, lambda xs: np.maximum.reduce(np.broadcast_arrays(*xs))),
    "Minimum": (layers.Minimum, layers.minimum, lambda xs: np.minimum.reduce(np.broadcast_arrays(*xs))),
}


def _expand_after_batch(xs):
    """tf_keras' rule for inputs of lower rank: new axes right after the batch axis."""
    top = max(x.ndim for x in xs)
    return [x.reshape(x.shape[:1] + (1,) * (top - x.ndim) + x.shape[1:]) for x in xs]


SHAPE_CASES = [
    [(2, 3), (2, 3)],
    [(2, 3), (2, 3), (2, 3)],
    [(2, 3), (2, 1)],               # broadcast a dim of 1
    [(2, 4, 3), (2, 3)],            # rank expansion: (2, 3) -> (2, 1, 3)
    [(2, 3), (2, 5, 1, 3)],
    [(3, 1, 4), (3, 2, 1)],
]


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shapes", SHAPE_CASES, ids=str)
def test_elementwise_values_match_numpy(name, shapes):
    cls, fn, reference = ELEMENTWISE[name]
    xs = [_rand(*s) for s in shapes]
    want = reference(_expand_after_batch(xs))
    got = cls()([tf.constant(x) for x in xs])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fn([tf.constant(x) for x in xs]).numpy(), want, rtol=1e-6, atol=1e-7)
    assert cls().compute_output_shape([(None,) + s[1:] for s in shapes]) == (None,) + want.shape[1:]


def test_subtract_and_hand_computed_values():
    a, b = tf.constant([[5., 7.], [1., 1.]]), tf.constant([[1., 2.], [3., -1.]])
    np.testing.assert_array_equal(layers.Subtract()([a, b]).numpy(), [[4., 5.], [-2., 2.]])
    np.testing.assert_array_equal(layers.subtract([b, a]).numpy(), [[-4., -5.], [2., -2.]])
    np.testing.assert_array_equal(layers.Maximum()([a, b, tf.fill([2, 2], 3.)]).numpy(),
                                  [[5., 7.], [3., 3.]])
    np.testing.assert_array_equal(layers.Average()([a, b]).numpy(), [[3., 4.5], [2., 0.]])


@pytest.mark.parametrize("axis, shapes", [
    (-1, [(2, 3), (2, 1), (2, 2)]),
    (1, [(2, 3, 4), (2, 5, 4)]),
    (0, [(2, 3), (1, 3)]),
    (-2, [(2, 1, 3), (2, 2, 3)]),
])
def test_concatenate_matches_numpy(axis, shapes):
    xs = [_rand(*s) for s in shapes]
    got = layers.Concatenate(axis=axis)([tf.constant(x) for x in xs])
    np.testing.assert_array_equal(got.numpy(), np.concatenate(xs, axis=axis))
    np.testing.assert_array_equal(layers.concatenate([tf.constant(x) for x in xs], axis=axis),
                                  np.concatenate(xs, axis=axis))
    assert layers.Concatenate(axis=axis).compute_output_shape(shapes) == np.concatenate(xs, axis).shape


def _dot_reference(x, y, a1, a2, normalize):
    if normalize:
        x = x / np.sqrt(np.maximum((x * x).sum(a1, keepdims=True), 1e-12))
        y = y / np.sqrt(np.maximum((y * y).sum(a2, keepdims=True), 1e-12))
    out = np.stack([np.tensordot(x[i], y[i], axes=(a1 - 1, a2 - 1)) for i in range(len(x))])
    return out.reshape(len(x), 1) if out.ndim == 1 else out


@pytest.mark.parametrize("axes, s1, s2, a1, a2", [
    (1, (3, 4), (3, 4), 1, 1),
    (-1, (3, 2, 4), (3, 4), 2, 1),
    ((1, 2), (3, 4, 5), (3, 2, 4), 1, 2),
    ([2, 1], (3, 2, 4), (3, 4, 5), 2, 1),
    (2, (2, 3, 4, 5), (2, 6, 4), 2, 2),
])
@pytest.mark.parametrize("normalize", [False, True])
def test_dot_matches_per_example_tensordot(axes, s1, s2, a1, a2, normalize):
    x, y = _rand(*s1, dtype=np.float64), _rand(*s2, dtype=np.float64)
    layer = layers.Dot(axes, normalize=normalize, dtype="float64")
    got = layer([tf.constant(x), tf.constant(y)])
    want = _dot_reference(x, y, a1, a2, normalize)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    assert layer.compute_output_shape([(None,) + s1[1:], (None,) + s2[1:]]) == \
        (None,) + want.shape[1:]
    np.testing.assert_allclose(layers.dot([tf.constant(x), tf.constant(y)], axes,
                                          normalize=normalize, dtype="float64").numpy(), want)


def test_dot_hand_computed_cosine_and_product():
    a = tf.constant([[1., 0.], [3., 4.]])
    b = tf.constant([[0., 2.], [6., 8.]])
    np.testing.assert_allclose(layers.Dot(1)([a, b]).numpy(), [[0.], [50.]])
    np.testing.assert_allclose(layers.Dot(1, normalize=True)([a, b]).numpy(), [[0.], [1.]],
                               atol=1e-7)


def test_dtypes_follow_keras_autocast():
    ints = [tf.constant([[1, 2]]), tf.constant([[3, 4]])]
    assert layers.Add()(ints).dtype == tf.int32
    np.testing.assert_array_equal(layers.Add()(ints).numpy(), [[4, 6]])
    f64 = [tf.ones([1, 2], tf.float64)] * 2
    assert layers.Add()(f64).dtype == tf.float32  # cast to the layer's dtype
    assert layers.Add(dtype="float64")(f64).dtype == tf.float64


# ================================================================ errors
@pytest.mark.parametrize("make, inputs, match", [
    (layers.Subtract, [(2, 3)] * 3, r"exactly 2 inputs\. Received: input_shape=\[\(2, 3\), \(2, 3\), \(2, 3\)\]"),
    (layers.Subtract, [(2, 3)], r"exactly 2 inputs"),
    (layers.Concatenate, [(2, 3), (3, 3)], r"matching shapes except for the concatenation axis\. "
                                           r"Received: input_shape=\[\(2, 3\), \(3, 3\)\]"),
    (lambda: layers.Concatenate(axis=1), [(2, 3, 4), (2, 3, 5)], r"matching shapes"),
    (layers.Concatenate, [(2, 3), (2, 3, 1)], r"different ranks"),
    (lambda: layers.Concatenate(axis=3), [(2, 3), (2, 3)], r"axis=3 is out of range"),
    (layers.Add, [(2, 3), (2, 4)], r"incompatible shapes\. Received shapes \(3,\) and \(4,\)"),
    (layers.Multiply, [(2, 3), (4, 3)], r"different batch sizes\. Got tensors with shapes "
                                        r"\[\(2, 3\), \(4, 3\)\]"),
    (lambda: layers.Dot(1), [(2, 3), (2, 4)], r"axis values 3 \(at axis 1\) != 4 \(at axis 1\)"),
    (lambda: layers.Dot(1), [(2, 3)] * 3, r"list of 2 inputs"),
    (lambda: layers.Dot(0), [(2, 3), (2, 3)], r"non-batch axis"),
])
def test_inputs_that_cannot_merge_name_their_shapes(make, inputs, match):
    with pytest.raises(ValueError, match=match):
        make()([tf.ones(s) for s in inputs])


def test_later_calls_are_checked_too_and_single_tensors_fail():
    add = layers.Add()
    add([tf.ones([2, 3]), tf.ones([2, 3])])
    with pytest.raises(ValueError, match=r"Received shapes \(3,\) and \(5,\)"):
        add([tf.ones([2, 3]), tf.ones([2, 5])])
    with pytest.raises(ValueError, match=r"list of inputs\. Received: input_shape=\(2, 3\)"):
        layers.Add()(tf.ones([2, 3]))
    with pytest.raises(ValueError, match="list of inputs"):
        add(tf.ones([2, 3]))


def test_dot_axes_argument_errors():
    with pytest.raises(TypeError, match="Invalid type for argument `axes`"):
        layers.Dot("1")
    with pytest.raises(ValueError, match="should contain two elements"):
        layers.Dot((1, 2, 3))
    with pytest.raises(ValueError, match="list elements should be integers"):
        layers.Dot((1, 1.5))
    with pytest.raises(TypeError, match="`axis` must be an int"):
        layers.Concatenate(axis="last")


# ================================================================ masks
def test_masks_combine_as_tf_keras():
    m1 = tf.constant([[True, True, False]])
    m2 = tf.constant([[True, False, True]])
    x = [tf.ones([1, 3, 2]), tf.ones([1, 3, 2])]
    np.testing.assert_array_equal(layers.Add().compute_mask(x, [m1, m2]).numpy(),
                                  [[True, False, False]])
    np.testing.assert_array_equal(layers.Add().compute_mask(x, [None, m2]).numpy(), m2.numpy())
    assert layers.Add().compute_mask(x, [None, None]) is None
    assert layers.Dot(2).compute_mask(x, [m1, m2]) is None
    # Concatenate along the features: a step is kept where both inputs keep it
    np.testing.assert_array_equal(layers.Concatenate().compute_mask(x, [m1, None]).numpy(),
                                  [[True, True, False]])
    # along time: the masks are joined
    np.testing.assert_array_equal(layers.Concatenate(axis=1).compute_mask(x, [m1, m2]).numpy(),
                                  [[True, True, False, True, False, True]])
    with pytest.raises(ValueError, match="`mask` should be a list"):
        layers.Add().compute_mask(x, m1)
    with pytest.raises(ValueError, match="same length"):
        layers.Add().compute_mask(x, [m1])


def test_masks_pass_through_merges_in_eager_calls():
    emb = layers.Embedding(5, 2, mask_zero=True)
    a, b = emb(tf.constant([[1, 2, 0]])), emb(tf.constant([[3, 0, 4]]))
    out = layers.Add()([a, b])
    np.testing.assert_array_equal(keras.masks.get_mask(out).numpy(), [[True, False, False]])
    joined = layers.Concatenate(axis=1)([a, b])
    np.testing.assert_array_equal(keras.masks.get_mask(joined).numpy(),
                                  [[True, True, False, True, False, True]])
    assert keras.masks.get_mask(layers.Dot(2)([a, b])) is None


# ================================================================ models, tf.function, gradients
def test_functional_model_with_every_merge():
    a, b = keras.Input((None, 3), name="a"), keras.Input((None, 3), name="b")
    short = keras.Input((3,), name="short")
    parts = [layers.add([a, b]), layers.subtract([a, b]), layers.multiply([a, b]),
             layers.average([a, b]), layers.maximum([a, b]), layers.minimum([a, b, short])]
    assert [p.shape for p in parts] == [(None, None, 3)] * 6
    joined = layers.Concatenate()(parts)
    dotted = layers.Dot(axes=2)([a, b])
    assert joined.shape == (None, None, 18) and dotted.shape == (None, None, None)
    model = keras.Model([a, b, short], [joined, dotted])
    xa, xb, xs = _rand(2, 4, 3), _rand(2, 4, 3), _rand(2, 3)
    got_joined, got_dot = model([xa, xb, xs])
    want = np.concatenate([xa + xb, xa - xb, xa * xb, (xa + xb) / 2, np.maximum(xa, xb),
                           np.minimum(np.minimum(xa, xb), xs[:, None])], axis=-1)
    np.testing.assert_allclose(got_joined.numpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_dot.numpy(), np.einsum("btf,bsf->bts", xa, xb), rtol=1e-5,
                               atol=1e-6)


def test_traced_function_replays_merges():
    dense = layers.Dense(2)
    concat, dot = layers.Concatenate(), layers.Dot(1, normalize=True)

    @tf.function
    def f(x, y):
        return dot([concat([x, y]), dense(concat([y, x]))[:, :1] * tf.ones([1, 6])])

    x, y = tf.constant(_rand(3, 2)), tf.constant(_rand(3, 4))
    first = f(x, y).numpy()
    x2, y2 = tf.constant(_rand(3, 2)), tf.constant(_rand(3, 4))
    second = f(x2, y2).numpy()
    eager = dot([concat([x2, y2]), dense(concat([y2, x2]))[:, :1] * tf.ones([1, 6])]).numpy()
    np.testing.assert_allclose(second, eager, rtol=1e-6, atol=1e-7)
    assert not np.allclose(first, second)
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("name", sorted(ELEMENTWISE) + ["Subtract", "Concatenate", "Dot",
                                                         "DotNormalized"])
def test_gradients_match_central_differences(name):
    rng = np.random.default_rng(3)
    shapes = [(2, 3, 2), (2, 2)]
    if name in ("Subtract", "Concatenate"):
        shapes = [(2, 3), (2, 3)]
    if name.startswith("Dot"):
        shapes = [(2, 3, 4), (2, 4)]
    make = {"Subtract": lambda: layers.Subtract(dtype="float64"),
            "Concatenate": lambda: layers.Concatenate(axis=-1, dtype="float64"),
            "Dot": lambda: layers.Dot(-1, dtype="float64"),
            "DotNormalized": lambda: layers.Dot(-1, normalize=True, dtype="float64")}.get(
        name, lambda: ELEMENTWISE.get(name, (None,))[0](dtype="float64"))
    layer = make()
    # distinct values, so no ties in Maximum/Minimum
    xs = [rng.permutation(np.prod(s)).reshape(s) * 0.37 + rng.uniform(-0.1, 0.1, s) for s in shapes]
    xs += [rng.standard_normal(shapes[0])] if name in ("Add", "Average", "Maximum") else []
    weights = None

    def f(*ts):
        nonlocal weights
        out = layer(list(ts))
        if weights is None:
            weights = tf.constant(np.linspace(-1, 2, int(np.prod(out.shape))).reshape(out.shape))
        return tf.reduce_sum(tf.sin(out) * weights)

    assert_tape_gradients_match(f, xs)


def test_gradient_through_a_functional_merge_model():
    a, b = keras.Input((3,), dtype="float64"), keras.Input((3,), dtype="float64")
    dense = layers.Dense(2, dtype="float64")
    out = layers.Dot(1, dtype="float64")([dense(a), layers.Dense(2, dtype="float64")(b)])
    model = keras.Model([a, b], layers.Concatenate(dtype="float64")([out, dense(b)]))
    xa, xb = _rand(2, 3, dtype=np.float64), _rand(2, 3, dtype=np.float64)
    assert_tape_gradients_match(lambda x, y: tf.reduce_sum(model([x, y]) ** 2), [xa, xb])


# ================================================================ against tf_keras
def _tk_layer(tk, name, **kw):
    return getattr(tk.layers, name)(**kw)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shapes", SHAPE_CASES, ids=str)
def test_elementwise_match_tf_keras(name, shapes):
    tensorflow, tk = tf_keras()
    xs = [_rand(*s) for s in shapes]
    want = _tk_layer(tk, name)([tensorflow.constant(x) for x in xs]).numpy()
    got = getattr(layers, name)()([tf.constant(x) for x in xs]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    symbolic = [(None,) + s[1:] for s in shapes]
    assert tuple(getattr(layers, name)().compute_output_shape(symbolic)) == \
        tuple(_tk_layer(tk, name).compute_output_shape(symbolic))


@pytest.mark.parametrize("axes, s1, s2", [(1, (3, 4), (3, 4)), (-1, (3, 2, 4), (3, 4)),
                                          ((1, 2), (3, 4, 5), (3, 2, 4)),
                                          (2, (2, 3, 4, 5), (2, 6, 4)), (1, (2, 4), (2, 4, 3))])
@pytest.mark.parametrize("normalize", [False, True])
def test_dot_matches_tf_keras(axes, s1, s2, normalize):
    tensorflow, tk = tf_keras()
    x, y = _rand(*s1), _rand(*s2)
    want = tk.layers.Dot(axes, normalize=normalize)([tensorflow.constant(x),
                                                     tensorflow.constant(y)]).numpy()
    got = layers.Dot(axes, normalize=normalize)([tf.constant(x), tf.constant(y)]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_concatenate_and_masks_match_tf_keras():
    tensorflow, tk = tf_keras()
    xs = [_rand(2, 3, 4), _rand(2, 3, 1)]
    masks = [np.array([[True, False, True], [False, True, True]]), None]
    for axis in (-1, 2):
        ours, theirs = layers.Concatenate(axis=axis), tk.layers.Concatenate(axis=axis)
        np.testing.assert_array_equal(ours([tf.constant(x) for x in xs]).numpy(),
                                      theirs([tensorflow.constant(x) for x in xs]).numpy())
        np.testing.assert_array_equal(
            ours.compute_mask([tf.constant(x) for x in xs],
                              [None if m is None else tf.constant(m) for m in masks]).numpy(),
            theirs.compute_mask([tensorflow.constant(x) for x in xs],
                                [None if m is None else tensorflow.constant(m)
                                 for m in masks]).numpy())
    m2 = [masks[0], np.array([[True, True, False], [True, True, True]])]
    np.testing.assert_array_equal(
        layers.Multiply().compute_mask(xs, [tf.constant(m) for m in m2]).numpy(),
        tk.layers.Multiply().compute_mask(xs, [tensorflow.constant(m) for m in m2]).numpy())


@pytest.mark.parametrize("name, kwargs, shapes", [
    ("Subtract", {}, [(2, 3)] * 3),
    ("Concatenate", {}, [(2, 3), (3, 3)]),
    ("Concatenate", {"axis": 1}, [(2, 3, 4), (2, 3, 5)]),
    ("Add", {}, [(2, 3), (2, 4)]),
    ("Maximum", {}, [(2, 3), (4, 3)]),
    ("Dot", {"axes": 1}, [(2, 3), (2, 4)]),
])
def test_the_same_inputs_fail_in_tf_keras(name, kwargs, shapes):
    tensorflow, tk = tf_keras()
    with pytest.raises(ValueError):
        getattr(layers, name)(**kwargs)([tf.ones(s) for s in shapes])
    with pytest.raises((ValueError, tensorflow.errors.InvalidArgumentError)):
        getattr(tk.layers, name)(**kwargs)([tensorflow.ones(s) for s in shapes])
