"""LSTM and GRU: outputs on weights copied from TensorFlow equal tf_keras 2.21's (numbers
below), gradients against central differences in float64, shapes, and a traced step."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

keras = tf.keras


def w(shape, c):
    return (np.sin(np.arange(np.prod(shape)).reshape(shape) * c) * 0.4).astype(np.float32)


X = (np.cos(np.arange(2 * 4 * 3).reshape(2, 4, 3) * 0.8)).astype(np.float32)
CASES = {
    "lstm": (lambda **kw: keras.layers.LSTM(5, return_sequences=True, return_state=True, **kw),
             4, (20,)),
    "lstm_backwards": (lambda **kw: keras.layers.LSTM(5, go_backwards=True, **kw), 4, (20,)),
    "gru": (lambda **kw: keras.layers.GRU(5, return_sequences=True, return_state=True, **kw),
            3, (2, 15)),
    "gru_reset_before": (lambda **kw: keras.layers.GRU(5, reset_after=False, **kw), 3, (15,)),
}

# tf_keras 2.21: the layer's outputs on X after set_weights([w((3, g*5), 0.37),
# w((5, g*5), 0.53), w(bias_shape, 0.71)])
TF_RNN = {
    'lstm': [[[[-0.038977980613708496, -0.046014733612537384, -0.092733234167099, -0.17440903186798096, -0.22745896875858307], [0.08216197788715363, 0.0801561176776886, 0.0625540092587471, -0.0057106404565274715, -0.12479757517576218], [-0.0012988366652280092, 0.09686511754989624, 0.13654044270515442, 0.0910787284374237, -0.023369798436760902], [0.04227416589856148, 0.07163209468126297, 0.049656059592962265, -0.06746478378772736, -0.224045068025589]], [[0.12861928343772888, 0.1425437033176422, 0.13645480573177338, 0.10431202501058578, 0.04012719914317131], [-0.03425493463873863, -0.010232060216367245, -0.017695289105176926, -0.06244733929634094, -0.10547807067632675], [0.06273368746042252, 0.07356522232294083, 0.06394436955451965, -0.011753288097679615, -0.14145317673683167], [0.09375279396772385, 0.18221190571784973, 0.19889621436595917, 0.1352371871471405, -0.0028057661838829517]]], [[0.04227416589856148, 0.07163209468126297, 0.049656059592962265, -0.06746478378772736, -0.224045068025589], [0.09375279396772385, 0.18221190571784973, 0.19889621436595917, 0.1352371871471405, -0.0028057661838829517]], [[0.14805401861667633, 0.2424391508102417, 0.13462384045124054, -0.14086416363716125, -0.3990558385848999], [0.1769755482673645, 0.3641875982284546, 0.3866659104824066, 0.2419845014810562, -0.004801258444786072]]],
    'lstm_backwards': [[[0.016382964327931404, 0.03260588273406029, -0.004949851892888546, -0.11976411193609238, -0.25351178646087646], [0.12760768830776215, 0.14707930386066437, 0.136098712682724, 0.08180073648691177, -0.024787450209259987]]],
    'gru': [[[[-0.08347069472074509, -0.038899242877960205, -0.058749668300151825, -0.10728585720062256, -0.15050722658634186], [-0.014507453888654709, 0.21319355070590973, 0.28235578536987305, 0.28005868196487427, 0.26594123244285583], [0.2704952359199524, 0.32767772674560547, 0.2642863392829895, 0.13114416599273682, 0.017021939158439636], [0.0006426870822906494, 0.1937808245420456, 0.21477583050727844, 0.11128918826580048, -0.004039289429783821]], [[0.20617499947547913, 0.3549678325653076, 0.37086552381515503, 0.3248249888420105, 0.240682452917099], [0.10589092969894409, 0.1866626888513565, 0.17896051704883575, 0.11042845994234085, 0.014572367072105408], [-0.006524350494146347, 0.23630577325820923, 0.3166496157646179, 0.2972683310508728, 0.25155603885650635], [0.3147313594818115, 0.43819698691368103, 0.41398608684539795, 0.27388089895248413, 0.08615849912166595]]], [[0.0006426870822906494, 0.1937808245420456, 0.21477583050727844, 0.11128918826580048, -0.004039289429783821], [0.3147313594818115, 0.43819698691368103, 0.41398608684539795, 0.27388089895248413, 0.08615849912166595]]],
    'gru_reset_before': [[[0.19584457576274872, 0.2537953853607178, 0.1729477494955063, 0.02573774755001068, -0.11608737707138062], [0.42319464683532715, 0.44752874970436096, 0.35988330841064453, 0.18132302165031433, -0.048769623041152954]]],
}


def _layer(name, dtype="float32"):
    make, gates, bias_shape = CASES[name]
    layer = make(dtype=dtype)
    layer.build((None, 4, 3))
    layer.set_weights([w((3, gates * 5), 0.37), w((5, gates * 5), 0.53), w(bias_shape, 0.71)])
    return layer


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_match_tensorflow_on_copied_weights(name):
    out = _layer(name)(tf.constant(X))
    out = out if isinstance(out, list) else [out]
    assert len(out) == len(TF_RNN[name])
    for got, want in zip(out, TF_RNN[name], strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=2e-7)


def test_weight_shapes_and_unit_forget_bias():
    lstm = keras.layers.LSTM(3)
    lstm.build((None, 2, 2))
    assert [tuple(v.shape) for v in lstm.weights] == [(2, 12), (3, 12), (12,)]
    np.testing.assert_array_equal(lstm.bias.numpy(), [0] * 3 + [1] * 3 + [0] * 6)
    assert not keras.layers.LSTM(3, unit_forget_bias=False)(tf.ones([1, 2, 2])) is None
    gru = keras.layers.GRU(3)
    gru.build((None, 2, 2))
    assert [tuple(v.shape) for v in gru.weights] == [(2, 9), (3, 9), (2, 9)]


def _numeric_grad(loss, var, eps=1e-6):
    base = var.numpy().copy()
    grad = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            shifted = base.copy()
            shifted[idx] += sign * eps
            var.assign(shifted)
            grad[idx] += sign * float(loss()) / (2 * eps)
    var.assign(base)
    return grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences_float64(name):
    layer = _layer(name, dtype="float64")
    x = tf.constant(X.astype(np.float64))
    probe = tf.constant(np.linspace(-1, 1, 2 * 4 * 5).reshape(2, 4, 5))

    def loss():
        out = layer(x)
        first = out[0] if isinstance(out, list) else out
        weights = probe if first.ndim == 3 else probe[:, 0, :]
        total = tf.reduce_sum(first * weights)
        if isinstance(out, list):
            total = total + tf.reduce_sum(out[-1] ** 2)
        return total

    with tf.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, layer.trainable_variables)
    for var, g in zip(layer.trainable_variables, grads, strict=True):
        np.testing.assert_allclose(g.numpy(), _numeric_grad(loss, var), rtol=1e-6, atol=1e-8,
                                   err_msg=var.name)
    tf.testing.check_grads(lambda x: layer(x)[0] if CASES[name][0]().return_state
                           else layer(x), (x,), order=1)


def test_initial_state_and_bad_input():
    lstm = _layer("lstm")
    h0 = tf.constant(np.full((2, 5), 0.1, np.float32))
    a = lstm(tf.constant(X), initial_state=[h0, h0])[0]
    b = lstm(tf.constant(X))[0]
    assert not np.allclose(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="initial_state"):
        lstm(tf.constant(X), initial_state=[h0])
    with pytest.raises(ValueError, match="ndim=3"):
        keras.layers.GRU(2)(tf.ones([2, 3]))
    with pytest.raises(ValueError, match="units"):
        keras.layers.LSTM(0)


def test_traced_training_step_with_lstm_model():
    tf.random.set_seed(1)
    model = keras.Sequential([keras.layers.LSTM(8), keras.layers.Dense(1)])
    x = tf.constant(np.sin(np.arange(4 * 6 * 2).reshape(4, 6, 2) * 0.3).astype(np.float32))
    y = tf.reduce_mean(x, axis=[1, 2])[:, None]
    opt = keras.optimizers.Adam(0.02)
    loss_fn = keras.losses.MeanSquaredError()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    losses = [float(step(x, y)) for _ in range(40)]
    assert step.experimental_get_tracing_count() == 1
    assert losses[-1] < losses[0] / 3


# ---------------------------------------------------------------- the loop op (unroll=False)
@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("options", [
    {}, {"return_sequences": True, "return_state": True}, {"go_backwards": True},
    {"return_sequences": True, "masked": True}, {"masked": True, "go_backwards": True},
], ids=lambda o: "-".join(sorted(o)) or "plain")
def test_the_loop_op_equals_the_unrolled_loop(kind, options):
    options = dict(options)
    masked = options.pop("masked", False)
    x = tf.constant(np.random.default_rng(3).standard_normal((3, 5, 4)))
    mask = tf.constant(np.array([[1, 1, 0, 1, 1], [0, 0, 1, 1, 0], [1, 1, 1, 1, 1]], bool)) \
        if masked else None
    results = []
    for unroll in (False, True):
        tf.random.set_seed(4)
        layer = getattr(layers, kind)(3, unroll=unroll, dtype="float64", **options)
        layer(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x, mask=mask)
            loss = sum(tf.reduce_sum(o ** 2) for o in tf.nest.flatten(out))
        grads = tape.gradient(loss, [x] + layer.trainable_variables)
        results.append([o.numpy() for o in tf.nest.flatten(out) + grads])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_traced_lstm_holds_one_loop_op():
    lstm = layers.LSTM(4, return_sequences=True)
    x = tf.ones([2, 30, 3])
    lstm(x)
    f = tf.function(lambda x: lstm(x))
    f(x)
    kinds = [op.type for op in f.get_concrete_function(x).graph.get_operations()]
    assert kinds.count("scan") == 1 and "sigmoid" not in kinds
