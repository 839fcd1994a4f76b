"""Keras losses and metrics against tf_keras 2.21: values and gradients with respect to
y_pred for every loss, reduction, sample weighting, label smoothing and from_logits
(TensorFlow's numbers below), metric accumulation, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras

import numpy as np
i = np.arange(12).reshape(4, 3)
REG_PRED = np.sin(i * 0.7).astype(np.float32)
REG_TRUE = np.cos(i * 0.3).astype(np.float32)
BIN_TRUE = (i % 2 == 0).astype(np.float32)
BIN_PROB = (1 / (1 + np.exp(-np.sin(i * 1.1) * 3))).astype(np.float32)
BIN_PROB_EDGE = BIN_PROB.copy(); BIN_PROB_EDGE[0, 0] = 0.0; BIN_PROB_EDGE[1, 1] = 1.0
LOGITS = (np.sin(i * 0.9) * 2).astype(np.float32)
PROBS = (np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True) * 1.3).astype(np.float32)  # not normalized
SPARSE = np.array([2, 0, 1, 2], np.int32)
ONEHOT = np.eye(3, dtype=np.float32)[SPARSE]
SW = np.array([1.0, 0.5, 0.0, 2.0], np.float32)
CASES = {
 "mse": ("MeanSquaredError", {}, REG_TRUE, REG_PRED, None),
 "mse_sum": ("MeanSquaredError", {"reduction": "sum"}, REG_TRUE, REG_PRED, None),
 "mse_none": ("MeanSquaredError", {"reduction": "none"}, REG_TRUE, REG_PRED, None),
 "mse_weighted": ("MeanSquaredError", {}, REG_TRUE, REG_PRED, SW),
 "mae": ("MeanAbsoluteError", {}, REG_TRUE, REG_PRED, None),
 "mae_weighted_sum": ("MeanAbsoluteError", {"reduction": "sum"}, REG_TRUE, REG_PRED, SW),
 "bce": ("BinaryCrossentropy", {}, BIN_TRUE, BIN_PROB, None),
 "bce_edge": ("BinaryCrossentropy", {}, BIN_TRUE, BIN_PROB_EDGE, None),
 "bce_logits": ("BinaryCrossentropy", {"from_logits": True}, BIN_TRUE, LOGITS, None),
 "bce_smooth": ("BinaryCrossentropy", {"label_smoothing": 0.1}, BIN_TRUE, BIN_PROB, SW),
 "bce_logits_smooth_none": ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.2, "reduction": "none"}, BIN_TRUE, LOGITS, None),
 "cce": ("CategoricalCrossentropy", {}, ONEHOT, PROBS, None),
 "cce_logits": ("CategoricalCrossentropy", {"from_logits": True}, ONEHOT, LOGITS, None),
 "cce_smooth": ("CategoricalCrossentropy", {"label_smoothing": 0.2}, ONEHOT, PROBS, SW),
 "cce_logits_smooth": ("CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.1, "reduction": "sum"}, ONEHOT, LOGITS, None),
 "scce": ("SparseCategoricalCrossentropy", {}, SPARSE, PROBS, None),
 "scce_logits": ("SparseCategoricalCrossentropy", {"from_logits": True}, SPARSE, LOGITS, None),
 "scce_column_labels": ("SparseCategoricalCrossentropy", {"from_logits": True}, SPARSE.reshape(4, 1), LOGITS, SW),
 "scce_none": ("SparseCategoricalCrossentropy", {"reduction": "none"}, SPARSE, PROBS, None),
}

# tf_keras 2.21: (loss value, gradient of the loss with respect to y_pred)
TF_LOSSES = {
    'mse': (0.7897979021072388,
        [[-0.1666666716337204, -0.05185314267873764, 0.0266856849193573], [0.04026656597852707, -0.00456160306930542, -0.0702534019947052], [-0.10739561170339584, -0.07960109412670135, 0.017687847837805748], [0.15348100662231445, 0.27449652552604675, 0.32927465438842773]]),
    'mse_sum': (3.159191608428955,
        [[-0.6666666865348816, -0.20741257071495056, 0.1067427396774292], [0.16106626391410828, -0.01824641227722168, -0.2810136079788208], [-0.4295824468135834, -0.3184043765068054, 0.07075139135122299], [0.6139240264892578, 1.097986102104187, 1.317098617553711]]),
    'mse_none': ([0.3741438388824463, 0.07893294095993042, 0.2181961089372635, 2.4879186153411865],
        [[-0.6666666865348816, -0.20741257071495056, 0.1067427396774292], [0.16106626391410828, -0.01824641227722168, -0.2810136079788208], [-0.4295824468135834, -0.3184043765068054, 0.07075139135122299], [0.6139240264892578, 1.097986102104187, 1.317098617553711]]),
    'mse_weighted': (1.3473619222640991,
        [[-0.1666666716337204, -0.05185314267873764, 0.0266856849193573], [0.020133282989263535, -0.00228080153465271, -0.0351267009973526], [-0.0, -0.0, 0.0], [0.3069620132446289, 0.5489930510520935, 0.6585493087768555]]),
    'mae': (0.6611118912696838,
        [[-0.0833333358168602, -0.0833333358168602, 0.0833333358168602], [0.0833333358168602, -0.0833333358168602, -0.0833333358168602], [-0.0833333358168602, -0.0833333358168602, 0.0833333358168602], [0.0833333358168602, 0.0833333358168602, 0.0833333358168602]]),
    'mae_weighted_sum': (3.6345014572143555,
        [[-0.3333333432674408, -0.3333333432674408, 0.3333333432674408], [0.1666666716337204, -0.1666666716337204, -0.1666666716337204], [-0.0, -0.0, 0.0], [0.6666666865348816, 0.6666666865348816, 0.6666666865348816]]),
    'bce': (1.1698137521743774,
        [[-0.16666662693023682, 1.2910289764404297, -0.09070288389921188], [0.13524851202964783, -1.5309195518493652, 0.09336981177330017], [-0.11606110632419586, 1.6987541913986206, -0.09774583578109741], [0.10445375740528107, -1.7570751905441284, 0.10495954006910324]]),
    'bce_edge': (2.1548991203308105,
        [[0.0, 1.2910289764404297, -0.09070288389921188], [0.13524851202964783, 0.0, 0.09336981177330017], [-0.11606110632419586, 1.6987541913986206, -0.09774583578109741], [0.10445375740528107, -1.7570751905441284, 0.10495954006910324]]),
    'bce_logits': (0.880358874797821,
        [[-0.0416666641831398, 0.06894217431545258, -0.010400407016277313], [0.058463722467422485, -0.05898881331086159, 0.010333554819226265], [-0.06868892163038254, 0.04236718639731407, -0.014146589674055576], [0.07286066561937332, -0.025405416265130043, 0.02383025921881199]]),
    'bce_smooth': (1.0196750164031982,
        [[-0.1499999463558197, 1.222023367881775, -0.03488543629646301], [0.05881557986140251, -0.7249835133552551, 0.02496935799717903], [0.0, 0.0, 0.0], [0.1572485864162445, -3.3296945095062256, 0.15897858142852783]]),
    'bce_logits_smooth_none': ([0.873598039150238, 0.8645539879798889, 0.8785831332206726, 0.9181673526763916],
        [[-0.13333332538604736, 0.24243536591529846, -0.008268296718597412], [0.2005215585231781, -0.2026219218969345, 0.00800088420510292], [-0.2414223551750183, 0.13613541424274445, -0.023253027349710464], [0.25810933113098145, -0.06828833371400833, 0.061987701803445816]]),
    'cce': (1.443835973739624,
        [[0.19230769574642181, 0.19230769574642181, -0.1587984412908554], [-0.04534061253070831, 0.1923077255487442, 0.1923077255487442], [0.19230769574642181, -0.9490617513656616, 0.19230769574642181], [0.19230766594409943, 0.19230766594409943, -4.4356279373168945]]),
    'cce_logits': (1.443835973739624,
        [[0.0195265244692564, 0.09354359656572342, -0.11307011544704437], [-0.047697171568870544, 0.035515353083610535, 0.012181833386421204], [0.008683430030941963, -0.20787785947322845, 0.19919443130493164], [0.18046610057353973, 0.059145487844944, -0.23961158096790314]]),
    'cce_smooth': (1.690931797027588,
        [[0.02816540002822876, 0.1580442190170288, -0.11198429763317108], [-0.0068270862102508545, 0.051030710339546204, -0.03539977967739105], [0.0, 0.0, 0.0], [0.34909477829933167, 0.2762341797351837, -7.637139797210693]]),
    'cce_logits_smooth': (5.85233211517334,
        [[0.044772762805223465, 0.34084105491638184, -0.3856137990951538], [-0.1241220235824585, 0.1087280809879303, 0.015393998473882675], [0.0014003850519657135, -0.7648447751998901, 0.7634443640708923], [0.6885310411453247, 0.20324862003326416, -0.8917796611785889]]),
    'scce': (1.4393194913864136,
        [[0.19230769574642181, 0.19230769574642181, -0.1587984561920166], [0.0, 0.2003164291381836, 0.20031651854515076], [0.19775524735450745, -0.9436141848564148, 0.0], [0.19230769574642181, 0.19230768084526062, -4.435627460479736]]),
    'scce_logits': (1.443835973739624,
        [[0.0195265244692564, 0.09354359656572342, -0.11307011544704437], [-0.047697171568870544, 0.035515353083610535, 0.012181833386421204], [0.008683430030941963, -0.20787785947322845, 0.19919443130493164], [0.18046610057353973, 0.059145487844944, -0.23961158096790314]]),
    'scce_column_labels': (1.76734459400177,
        [[0.0195265244692564, 0.09354359656572342, -0.11307011544704437], [-0.023848585784435272, 0.017757676541805267, 0.006090916693210602], [0.0, -0.0, 0.0], [0.36093220114707947, 0.118290975689888, -0.4792231619358063]]),
    'scce_none': ([0.6019919514656067, 0.22156263887882233, 1.7529538869857788, 3.180769443511963],
        [[0.7692307829856873, 0.7692307829856873, -0.6351938247680664], [0.0, 0.8012657165527344, 0.801266074180603], [0.7910209894180298, -3.774456739425659, 0.0], [0.7692307829856873, 0.7692307233810425, -17.742509841918945]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_value_and_gradient_match_tensorflow(name):
    cls, kwargs, y_true, y_pred, sw = CASES[name]
    loss = getattr(keras.losses, cls)(**kwargs)
    p = tf.constant(y_pred)
    with tf.GradientTape() as tape:
        tape.watch(p)
        value = loss(tf.constant(y_true), p, sample_weight=None if sw is None else tf.constant(sw))
    grad = tape.gradient(value, p)
    want_value, want_grad = TF_LOSSES[name]
    assert value.dtype == tf.float32
    np.testing.assert_allclose(value.numpy(), want_value, rtol=1e-6, atol=3e-7)
    np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-6, atol=3e-7)


def test_loss_functions_and_aliases():
    assert keras.losses.mse is keras.losses.mean_squared_error
    per_sample = keras.losses.mse(REG_TRUE, REG_PRED)
    assert per_sample.shape == (4,)
    np.testing.assert_allclose(per_sample.numpy(), TF_LOSSES["mse_none"][0], rtol=1e-6)
    assert isinstance(keras.losses.get("MeanAbsoluteError"), keras.losses.MeanAbsoluteError)
    assert keras.losses.get("binary_crossentropy") is keras.losses.binary_crossentropy


def test_loss_gradient_against_finite_differences_float64():
    y_true = tf.constant(ONEHOT.astype(np.float64))
    sw = tf.constant(SW.astype(np.float64))
    for loss in (keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
                 keras.losses.BinaryCrossentropy(from_logits=True),
                 keras.losses.MeanSquaredError()):
        tf.testing.check_grads(lambda p, loss=loss: loss(y_true, p, sample_weight=sw),
                               (tf.constant(LOGITS.astype(np.float64)),), order=1)


def test_loss_bad_input():
    with pytest.raises(ValueError, match="reduction"):
        keras.losses.MeanSquaredError(reduction="mean")
    with pytest.raises(ValueError, match="y_true"):
        keras.losses.MeanSquaredError()(np.ones((4, 2)), REG_PRED)
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        keras.losses.CategoricalCrossentropy()(SPARSE, PROBS)
    with pytest.raises(ValueError, match="one class index per row"):
        keras.losses.SparseCategoricalCrossentropy()(ONEHOT, PROBS)
    with pytest.raises(ValueError, match="sample_weight"):
        keras.losses.MeanSquaredError()(REG_TRUE, REG_PRED, sample_weight=np.ones(3))


# tf_keras 2.21: Mean over [1, 2, 3] then [4] weighted 2; Accuracy; SparseCategoricalAccuracy
# on (SPARSE, LOGITS), then also (SPARSE as a column, PROBS, sample_weight=SW)
TF_METRICS = (2.799999952316284, 0.75, 0.5, 0.46666666865348816)


def test_metrics_match_tensorflow():
    m = keras.metrics.Mean()
    m.update_state([1., 2., 3.])
    m.update_state([4.], sample_weight=[2.])
    assert float(m.result()) == pytest.approx(TF_METRICS[0], rel=1e-7)
    a = keras.metrics.Accuracy()
    a.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    assert float(a.result()) == TF_METRICS[1]
    s = keras.metrics.SparseCategoricalAccuracy()
    s.update_state(SPARSE, LOGITS)
    assert float(s.result()) == TF_METRICS[2]
    s.update_state(SPARSE.reshape(4, 1), PROBS, sample_weight=SW)
    assert float(s.result()) == pytest.approx(TF_METRICS[3], rel=1e-7)
    s.reset_state()
    assert float(s.result()) == 0.0
    assert [v.name for v in s.variables] == ["sparse_categorical_accuracy/total:0",
                                             "sparse_categorical_accuracy/count:0"]
    assert s.trainable_variables == []


def test_metric_updated_inside_traced_step():
    m = keras.metrics.Mean()

    @tf.function
    def step(x):
        m.update_state(x)

    for k in range(5):
        step(tf.constant([float(k), float(k) + 1.0]))
    assert float(m.result()) == 2.5
    assert step.experimental_get_tracing_count() == 1


def test_metric_call_returns_result_and_bad_input():
    acc = keras.metrics.Accuracy()
    assert float(acc([1, 2], [1, 3])) == 0.5
    with pytest.raises(ValueError, match="same shape"):
        acc([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="sample_weight"):
        keras.metrics.Mean().update_state([1., 2.], sample_weight=[1., 2., 3.])
