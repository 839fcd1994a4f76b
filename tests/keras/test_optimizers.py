"""Keras optimizers against tf_keras 2.21: every update over 100 steps equal to TensorFlow's
to float32 rounding (the references below were printed by tf_keras), traced steps equal
to eager ones with one trace, learning-rate schedules, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from thread_helpers import run_in_threads

keras = tf.keras
S = keras.optimizers.schedules

W0 = np.array([0.5, -1.0, 2.0, 0.0, 3.0], np.float32)


def grads(k):
    return (np.sin(k * 0.37 + np.arange(5) * 1.3) * (1 + k % 3)).astype(np.float32)


CONFIGS = {
    "sgd": lambda: keras.optimizers.SGD(0.1),
    "sgd_momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
    "sgd_nesterov": lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: keras.optimizers.Adam(),
    "adam_custom": lambda: keras.optimizers.Adam(0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-6),
    "adam_amsgrad": lambda: keras.optimizers.Adam(0.01, amsgrad=True),
    "rmsprop": lambda: keras.optimizers.RMSprop(),
    "rmsprop_momentum": lambda: keras.optimizers.RMSprop(0.01, momentum=0.9),
    "rmsprop_centered": lambda: keras.optimizers.RMSprop(0.01, centered=True),
    "rmsprop_centered_momentum": lambda: keras.optimizers.RMSprop(0.01, rho=0.8, momentum=0.5,
                                                                  centered=True),
    "adagrad": lambda: keras.optimizers.Adagrad(),
    "adagrad_custom": lambda: keras.optimizers.Adagrad(0.1, initial_accumulator_value=0.5,
                                                       epsilon=1e-5),
    "sgd_exp_decay": lambda: keras.optimizers.SGD(S.ExponentialDecay(0.1, 10, 0.9)),
    "sgd_exp_decay_staircase": lambda: keras.optimizers.SGD(
        S.ExponentialDecay(0.1, 7, 0.5, staircase=True), momentum=0.5),
    "adam_piecewise": lambda: keras.optimizers.Adam(
        S.PiecewiseConstantDecay([20, 50], [0.1, 0.01, 0.001])),
}

# tf_keras 2.21 (TensorFlow 2.21, TF_USE_LEGACY_KERAS=1): the variable after 10 and 100
# steps of `grads(k)`, and the optimizer's learning rate after the last step.
TF_REFERENCE = {
    'sgd': {10: [-0.571652889251709, -1.1554661989212036, 2.988478899002075, 0.6843001842498779, 2.377619981765747],
        100: [0.2752046585083008, -0.6606459617614746, 2.4063501358032227, -0.12195873260498047, 2.5284032821655273],
        'lr': 0.10000000149011612},
    'sgd_momentum': {10: [-1.9094033241271973, -2.4660987854003906, 3.625044107437134, 2.335493564605713, 2.6244397163391113],
        100: [-2.54046630859375, -1.309472680091858, 4.8749003410339355, 1.8475396633148193, 1.1135303974151611],
        'lr': 0.05000000074505806},
    'sgd_nesterov': {10: [-2.204289436340332, -2.397221803665161, 3.9567787647247314, 2.444093942642212, 2.3508052825927734],
        100: [-2.34881854057312, -1.1088483333587646, 4.790584087371826, 1.6018062829971313, 1.0663796663284302],
        'lr': 0.05000000074505806},
    'adam': {10: [0.49255043268203735, -1.006039023399353, 2.0026254653930664, 0.007676009554415941, 3.0021164417266846],
        100: [0.49161460995674133, -1.0041396617889404, 2.0047173500061035, 0.006821805145591497, 2.9995458126068115],
        'lr': 0.0010000000474974513},
    'adam_custom': {10: [0.42311951518058777, -1.0510826110839844, 2.0354421138763428, 0.07139895856380463, 3.009567975997925],
        100: [0.4342155158519745, -1.019964575767517, 2.041653633117676, 0.04392839968204498, 2.9875099658966064],
        'lr': 0.009999999776482582},
    'adam_amsgrad': {10: [0.4255046248435974, -1.0603865385055542, 2.0262582302093506, 0.07676009088754654, 3.0211641788482666],
        100: [0.4161427319049835, -1.0413930416107178, 2.0471630096435547, 0.06822343170642853, 2.9954581260681152],
        'lr': 0.009999999776482582},
    'rmsprop': {10: [0.4862794578075409, -1.005086064338684, 2.008918046951294, 0.009972143918275833, 2.997976064682007],
        100: [0.49253514409065247, -1.0019186735153198, 2.004237413406372, 0.004509168677031994, 2.9995241165161133],
        'lr': 0.0010000000474974513},
    'rmsprop_momentum': {10: [-0.17985832691192627, -1.488752007484436, 2.2542130947113037, 0.6642709374427795, 3.1674728393554688],
        100: [-0.49334222078323364, -1.4476211071014404, 2.541506052017212, 0.7653923630714417, 3.0001139640808105],
        'lr': 0.009999999776482582},
    'rmsprop_centered': {10: [0.3419130742549896, -1.0604979991912842, 2.1001861095428467, 0.11454729735851288, 2.981954336166382],
        100: [0.40545955300331116, -1.0271148681640625, 2.0524744987487793, 0.05890745669603348, 2.995915651321411],
        'lr': 0.009999999776482582},
    'rmsprop_centered_momentum': {10: [0.23631371557712555, -1.1118009090423584, 2.156179904937744, 0.20296303927898407, 2.985135316848755],
        100: [0.3269108831882477, -1.0232884883880615, 2.110464096069336, 0.09101453423500061, 2.966379404067993],
        'lr': 0.009999999776482582},
    'adagrad': {10: [0.4959382712841034, -1.0017569065093994, 2.002714157104492, 0.003086734563112259, 2.9995574951171875],
        100: [0.49722835421562195, -1.0013808012008667, 2.0015790462493896, 0.0021752691827714443, 3.0001378059387207],
        'lr': 0.0010000000474974513},
    'adagrad_custom': {10: [0.12157078832387924, -1.1574013233184814, 2.28486967086792, 0.28112494945526123, 2.9367916584014893],
        100: [0.24968655407428741, -1.120004415512085, 2.1722095012664795, 0.19046717882156372, 2.9941868782043457],
        'lr': 0.10000000149011612},
    'sgd_exp_decay': {10: [-0.5258549451828003, -1.1856979131698608, 2.926506757736206, 0.6813770532608032, 2.43802809715271],
        100: [0.06225939467549324, -1.0089298486709595, 2.432962417602539, 0.2405642569065094, 2.6957390308380127],
        'lr': 0.0352371484041214},
    'sgd_exp_decay_staircase': {10: [-1.4482989311218262, -1.94927179813385, 3.4404406547546387, 1.7199041843414307, 2.4797041416168213],
        100: [-0.9323079586029053, -1.6654959917068481, 3.0762691497802734, 1.2412976026535034, 2.5878231525421143],
        'lr': 6.10351571594947e-06},
    'adam_piecewise': {10: [-0.24495381116867065, -1.6038973331451416, 2.262579917907715, 0.7676010131835938, 3.211674451828003],
        100: [-0.16705496609210968, -1.4664440155029297, 2.268009662628174, 0.6304895281791687, 3.127518653869629],
        'lr': 0.0010000000474974513},
}


def _float32_close(got, want, rtol=4e-6):
    # Adam's pow and the schedules' pow differ from TensorFlow's by an ulp or so per step
    # (measured: at most 20 ulps after 100 steps); SGD, RMSprop and Adagrad match exactly.
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_100_steps_match_tensorflow(name):
    opt, w = CONFIGS[name](), tf.Variable(W0)
    for k in range(100):
        opt.apply_gradients([(tf.constant(grads(k)), w)])
        if k + 1 in (10, 100):
            _float32_close(w.numpy(), TF_REFERENCE[name][k + 1])
    assert float(opt.learning_rate.numpy()) == pytest.approx(TF_REFERENCE[name]["lr"], rel=1e-6)
    assert int(opt.iterations.numpy()) == 100


@pytest.mark.parametrize("name", ["sgd", "sgd_momentum", "rmsprop", "rmsprop_centered_momentum",
                                  "adagrad_custom"])
def test_exact_formulas_match_tensorflow_bit_for_bit(name):
    opt, w = CONFIGS[name](), tf.Variable(W0)
    for k in range(100):
        opt.apply_gradients([(tf.constant(grads(k)), w)])
    np.testing.assert_array_equal(w.numpy(), np.float32(TF_REFERENCE[name][100]))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_traced_step_equals_eager_with_one_trace(name):
    eager_opt, eager_w = CONFIGS[name](), tf.Variable(W0)
    opt, w = CONFIGS[name](), tf.Variable(W0)

    @tf.function
    def step(g):
        opt.apply_gradients([(g, w)])

    for k in range(30):
        eager_opt.apply_gradients([(tf.constant(grads(k)), eager_w)])
        step(tf.constant(grads(k)))
    assert step.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(w.numpy(), eager_w.numpy())
    assert int(opt.iterations.numpy()) == 30
    assert len(opt.variables) == len(eager_opt.variables)


def test_traced_training_step_with_tape_and_model():
    tf.random.set_seed(3)
    model = keras.Sequential([keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    model(x)
    start = [v.numpy() for v in model.trainable_variables]

    def make_step(opt):
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss
        return train_step

    eager = make_step(keras.optimizers.Adam(0.05))
    eager_losses = [float(eager(x, y)) for _ in range(20)]
    eager_end = [v.numpy() for v in model.trainable_variables]
    for v, s in zip(model.trainable_variables, start, strict=True):
        v.assign(s)
    traced = tf.function(make_step(keras.optimizers.Adam(0.05)))
    traced_losses = [float(traced(x, y)) for _ in range(20)]
    assert traced.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-6)
    for got, want in zip(model.trainable_variables, eager_end, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)
    assert eager_losses[-1] < eager_losses[0] / 4


def test_slots_created_once_and_named():
    w = tf.Variable(W0, name="w")
    opt = keras.optimizers.Adam()
    for k in range(3):
        opt.apply_gradients([(tf.constant(grads(k)), w)])
    assert [v.name for v in opt.variables] == ["Adam/iteration:0", "m/w:0", "v/w:0"]
    assert all(not v.trainable for v in opt.variables)


def test_minimize_with_callable_and_tensor_loss():
    w = tf.Variable(3.0)
    opt = keras.optimizers.SGD(0.25)
    opt.minimize(lambda: w * w, [w])
    assert float(w) == 1.5
    with tf.GradientTape() as tape:
        loss = w * w
    opt.minimize(loss, [w], tape=tape)
    assert float(w) == 0.75
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(w * w, [w])


def test_minimize_with_callable_var_list():
    layer = keras.layers.Dense(1, kernel_initializer="ones")
    x = tf.ones([1, 2])
    opt = keras.optimizers.SGD(0.1)
    opt.minimize(lambda: tf.reduce_sum(layer(x)), lambda: layer.trainable_variables)
    np.testing.assert_allclose(layer.kernel.numpy(), [[0.9], [0.9]], rtol=1e-6)


def test_none_gradients_are_skipped_all_none_is_an_error():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    opt = keras.optimizers.SGD(0.5)
    opt.apply_gradients([(tf.constant(1.0), a), (None, b)])
    assert (float(a), float(b)) == (0.5, 2.0)
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, a)])


def test_learning_rate_is_settable_unless_scheduled():
    opt = keras.optimizers.SGD(0.1)
    opt.learning_rate = 0.5
    w = tf.Variable(1.0)
    opt.apply_gradients([(tf.constant(1.0), w)])
    assert float(w) == 0.5
    scheduled = keras.optimizers.SGD(S.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate = 0.5


def test_clipping():
    w = tf.Variable([0.0, 0.0])
    keras.optimizers.SGD(1.0, clipnorm=1.0).apply_gradients([(tf.constant([3.0, 4.0]), w)])
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-6)
    w.assign([0.0, 0.0])
    keras.optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(tf.constant([3.0, -0.1]), w)])
    np.testing.assert_allclose(w.numpy(), [-0.5, 0.1], rtol=1e-6)
    a, b = tf.Variable([0.0]), tf.Variable([0.0])
    keras.optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients(
        [(tf.constant([3.0]), a), (tf.constant([4.0]), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [-0.6, -0.8], rtol=1e-6)
    with pytest.raises(ValueError, match="at most one"):
        keras.optimizers.SGD(clipnorm=1.0, clipvalue=1.0)


def test_schedules_values():
    lr = S.ExponentialDecay(0.1, 10, 0.5)
    assert float(lr(10)) == pytest.approx(0.05)
    assert float(S.ExponentialDecay(0.1, 10, 0.5, staircase=True)(19)) == pytest.approx(0.05)
    pw = S.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    assert [float(pw(tf.constant(s, tf.int64))) for s in (0, 10, 11, 20, 21)] == \
        pytest.approx([1.0, 1.0, 0.5, 0.5, 0.1])
    assert S.deserialize(S.serialize(pw)).get_config() == pw.get_config()
    with pytest.raises(ValueError, match="1 less than"):
        S.PiecewiseConstantDecay([1, 2], [1.0])
    with pytest.raises(ValueError, match="decay_steps"):
        S.ExponentialDecay(0.1, 0, 0.5)


def test_bad_input_names_argument():
    with pytest.raises(ValueError, match="momentum"):
        keras.optimizers.SGD(momentum=1.5)
    with pytest.raises(TypeError, match="learning_rate"):
        keras.optimizers.Adam(learning_rate="fast")
    with pytest.raises(TypeError, match="tf.Variable"):
        keras.optimizers.SGD().apply_gradients([(tf.constant(1.0), tf.constant(1.0))])
    with pytest.raises(TypeError, match="pairs"):
        keras.optimizers.SGD().apply_gradients([tf.constant(1.0)])
    with pytest.raises(ValueError, match="shape"):
        keras.optimizers.SGD().apply_gradients([(tf.constant([1.0, 2.0]), tf.Variable(1.0))])
    with pytest.raises(TypeError, match="unexpected keyword"):
        keras.optimizers.Adam(beta1=0.9)


def test_get_and_config_round_trip():
    assert isinstance(keras.optimizers.get("rmsprop"), keras.optimizers.RMSprop)
    opt = keras.optimizers.Adam(S.PiecewiseConstantDecay([5], [0.1, 0.01]), beta_1=0.8)
    again = keras.optimizers.Adam.from_config(opt.get_config())
    assert again.beta_1 == 0.8 and isinstance(again._learning_rate, S.PiecewiseConstantDecay)


def _eight_threads_step(opt, variables, steps=3):
    def step(v) -> None:
        for _ in range(steps):
            opt.apply_gradients([(2.0 * v.value(), v)])

    return run_in_threads(step, variables, switch_interval=1e-6)


@pytest.mark.parametrize("trial", range(5))
def test_threads_sharing_an_optimizer_build_each_variables_slots_once(trial):
    # Eight threads, each its own variable, calling apply_gradients for the first time at
    # once: build gave two variables one index (IndexError in _slot, or a variable updated
    # with another's slots).
    opt = tf.keras.optimizers.Adam(0.1)
    variables = [tf.Variable(np.full(3, k + 1.0, np.float32), name=f"v{k}") for k in range(8)]
    assert not _eight_threads_step(opt, variables)
    for v in variables:
        assert v._name in opt._slot("m", v).name  # its own slot
    # Momentum's slot carries each variable's own history: the same as alone.
    opt = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    variables = [tf.Variable(np.full(3, k + 1.0, np.float32)) for k in range(8)]
    assert not _eight_threads_step(opt, variables)
    for k, v in enumerate(variables):
        alone = tf.Variable(np.full(3, k + 1.0, np.float32))
        ref = tf.keras.optimizers.SGD(0.1, momentum=0.9)
        for _ in range(3):
            ref.apply_gradients([(2.0 * alone.value(), alone)])
        np.testing.assert_allclose(v.numpy(), alone.numpy(), rtol=1e-6)
