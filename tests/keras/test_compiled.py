"""compile's losses and metrics for models of several outputs (NOTE(compiled)): one loss
or one per output (list, dict), loss_weights, metrics per output, weighted_metrics and
sample weights; the logs' names and values against hand computations, and tf_keras's
(peers)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf

X = np.arange(8, dtype=np.float32).reshape(8, 1)
Y0, Y1 = np.zeros((8, 1), np.float32), np.ones((8, 1), np.float32)
SW = np.array([1, 1, 0, 0, 0, 0, 0, 2], np.float32)


def _two_outputs(k):
    inputs = k.Input((1,), name="inp")
    a = k.layers.Dense(1, kernel_initializer="ones", name="a")(inputs)
    b = k.layers.Dense(1, kernel_initializer="ones", name="b")(inputs)
    return k.Model(inputs, [a, b])


def _one_output(k):
    return k.Sequential([k.Input((1,)), k.layers.Dense(1, kernel_initializer="ones")])


CASES = [  # (model, compile kwargs, evaluate kwargs)
    (_one_output, {"loss": "mse", "metrics": ["mae"]}, {"y": Y0, "sample_weight": SW}),
    (_one_output, {"loss": "mse", "weighted_metrics": ["mae"]}, {"y": Y0, "sample_weight": SW}),
    (_one_output, {"loss": "mse", "metrics": ["mae"], "weighted_metrics": ["mae"]},
     {"y": Y0, "sample_weight": SW}),
    (_one_output, {"loss": "mse", "loss_weights": [2.0]}, {"y": Y0}),
    (_one_output, {"loss": "mse", "loss_weights": 0.5}, {"y": Y0}),
    (_two_outputs, {"loss": "mse", "metrics": ["mae", "mse"]}, {"y": [Y0, Y1]}),
    (_two_outputs, {"loss": ["mse", "mae"], "loss_weights": [0.5, 2.0], "metrics": ["mae"]},
     {"y": [Y0, Y1]}),
    (_two_outputs, {"loss": {"b": "mse", "a": "mae"}, "loss_weights": {"a": 1.0, "b": 3.0},
                    "metrics": {"a": "mse"}}, {"y": {"a": Y0, "b": Y1}}),
    (_two_outputs, {"loss": {"a": "mse"}, "metrics": [["mae"], ["mse", "mae"]],
                    "weighted_metrics": {"b": "mae"}},
     {"y": [Y0, Y1], "sample_weight": SW}),
    (_two_outputs, {"loss": "mse", "metrics": ["mae"]},
     {"y": [Y0, Y1], "sample_weight": [SW, None]}),
]


def _evaluate(k, make, compile_kw, eval_kw):
    model = make(k)
    model.compile(k.optimizers.SGD(0.0), **compile_kw)
    return model.evaluate(X, batch_size=8, verbose=0, return_dict=True, **eval_kw)


def _mse(p, y, w=None):
    w = np.ones(len(p)) if w is None else w
    return float(((p - y)[:, 0] ** 2 * w).sum() / len(p))


def test_one_loss_per_output_weights_and_names():
    logs = _evaluate(tf.keras, *CASES[6][:2], CASES[6][2])
    mse_a, mae_b = _mse(X, Y0), float(np.abs(X - Y1).mean())
    assert logs == pytest.approx({"loss": 0.5 * mse_a + 2.0 * mae_b, "a_loss": mse_a,
                                  "b_loss": mae_b, "a_mae": float(np.abs(X).mean()),
                                  "b_mae": mae_b})


def test_plain_metrics_ignore_sample_weights_and_weighted_ones_use_them():
    logs = _evaluate(tf.keras, *CASES[2][:2], CASES[2][2])
    w = SW / SW.sum()
    assert logs == pytest.approx({"loss": _mse(X, Y0, SW), "mae": float(np.abs(X).mean()),
                                  "weighted_mae": float((np.abs(X[:, 0]) * w).sum())})


def test_an_output_without_a_loss_adds_nothing():
    logs = _evaluate(tf.keras, *CASES[8][:2], CASES[8][2])
    assert logs["loss"] == pytest.approx(_mse(X, Y0, SW)) and "b_loss" not in logs
    assert set(logs) == {"loss", "a_loss", "a_mae", "b_mse", "b_mae", "b_weighted_mae"}


def test_fit_trains_every_output_with_its_weight():
    model = _two_outputs(tf.keras)
    model.compile(tf.keras.optimizers.SGD(0.01), loss=["mse", "mse"], loss_weights=[1.0, 0.0])
    before = [w.numpy().copy() for w in model.weights]
    model.fit(X, [Y0, Y1], batch_size=8, epochs=1, verbose=0)
    after = [w.numpy() for w in model.weights]
    # output b's loss weight is 0: its layer does not move
    assert not np.allclose(before[0], after[0]) and np.allclose(before[2], after[2])


def test_bad_structures_are_clear_errors():
    model = _two_outputs(tf.keras)
    for kw, match in (({"loss": ["mse"]}, "1 entries, but the model has 2 outputs"),
                      ({"loss": {"zz": "mse"}}, r"names \['zz'\], which are not outputs"),
                      ({"loss": "mse", "loss_weights": [1.0]}, "1 entries"),
                      ({"loss": ("mse", "mse")}, "a tuple"),
                      ({"loss": "mse", "loss_weights": {"a": "heavy"}}, "must hold numbers")):
        with pytest.raises((ValueError, TypeError), match=match):
            model.compile("sgd", **kw)
            model.evaluate(X, [Y0, Y1], verbose=0)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="must be a list of 2"):
        model.evaluate(X, Y0, verbose=0)
    one = _one_output(tf.keras)
    with pytest.raises(ValueError, match="one output"):
        one.compile("sgd", loss={"a": "mse"})
        one.evaluate(X, Y0, verbose=0)


def test_a_model_file_keeps_per_output_compile_arguments(tmp_path):
    model = _two_outputs(tf.keras)
    model.compile("sgd", loss={"a": "mse", "b": "mae"}, loss_weights={"a": 2.0, "b": 1.0},
                  metrics={"a": ["mae"]}, weighted_metrics=["mse"])
    want = model.evaluate(X, [Y0, Y1], sample_weight=SW, verbose=0, return_dict=True)
    for name in ("m.keras", "m.h5"):
        model.save(tmp_path / name)
        again = tf.keras.models.load_model(tmp_path / name)
        assert again.evaluate(X, [Y0, Y1], sample_weight=SW, verbose=0,
                              return_dict=True) == pytest.approx(want)


@pytest.mark.peers
@pytest.mark.parametrize("case", range(len(CASES)))
def test_against_tf_keras(case):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    make, compile_kw, eval_kw = CASES[case]
    ours = _evaluate(tf.keras, make, compile_kw, eval_kw)
    theirs = _evaluate(keras, make, compile_kw, eval_kw)
    assert list(ours) == list(theirs)
    assert ours == pytest.approx(theirs, rel=1e-6)
