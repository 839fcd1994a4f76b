"""Dropout, BatchNormalization, Lambda and Embedding: BatchNormalization's outputs,
input gradients and moving statistics against tf_keras 2.21 (numbers below), Dropout's
masks (new at every call and every replay of a traced step), and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras

X2 = (np.sin(np.arange(24).reshape(6, 4) * 0.7) * 3 + np.arange(4)).astype(np.float32)
X4 = (np.cos(np.arange(2 * 3 * 3 * 2).reshape(2, 3, 3, 2) * 0.45) * 2 + 1).astype(np.float32)
BN_CASES = {"bn2d": (X2, {}), "bn4d": (X4, {"momentum": 0.9, "epsilon": 1e-2}),
            "bn4d_axis1": (X4, {"axis": 1}), "bn3d_axis1": (X4[0], {"axis": 1})}

# tf_keras 2.21: y = bn(x, training=True); gx = d/dx sum(y * linspace(-1, 1)); then one
# more training call on x * 0.5 + 1; mm, mv = the moving statistics; yi = bn(x, training=False)
TF_BN = {
    'bn2d': {
        'y': [[-0.13152113556861877, 0.9661746621131897, 1.3924963474273682, 0.9954020977020264], [0.3324509561061859, -0.9511783719062805, -1.6076351404190063, -1.2530406713485718], [-1.0058507919311523, -0.24282371997833252, 0.8618452548980713, 1.1476306915283203], [1.0521328449249268, 0.339674174785614, -0.791622519493103, -1.127859115600586], [-1.4877216815948486, -1.4663655757904053, -0.14523446559906006, 0.7595043182373047], [1.2405099868774414, 1.3545184135437012, 0.2901507616043091, -0.5216376185417175]],
        'gx': [[-0.39537546038627625, -0.5761511921882629, -0.4078955352306366, -0.3083186447620392], [-0.25625908374786377, -0.3177967965602875, -0.3506774306297302, -0.2682514190673828], [-0.0337514691054821, -0.10728489607572556, -0.05628383159637451, -0.018980219960212708], [0.03161001577973366, 0.10552020370960236, 0.059328842908144, 0.019869912415742874], [0.3097134232521057, 0.3618464171886444, 0.27466881275177, 0.24604295194149017], [0.34406256675720215, 0.533866286277771, 0.4808591604232788, 0.32963743805885315]],
        'mm': [0.01424463652074337, 0.03128432482481003, 0.04532136395573616, 0.056761618703603745],
        'mv': [1.038262963294983, 1.0101419687271118, 1.0228458642959595, 1.0552853345870972],
        'yi': [[-0.013972966000437737, 2.88533878326416, 4.853500843048096, 5.38343620300293], [0.971825122833252, -0.08317193388938904, -0.6523168683052063, -0.004008196294307709], [-1.871654748916626, 1.0135266780853271, 3.8796539306640625, 5.748188018798828], [2.500927686691284, 1.9153696298599243, 0.8452230095863342, 0.295936644077301], [-2.895482301712036, -0.8808022737503052, 2.0314693450927734, 4.818206787109375], [2.9011712074279785, 3.486586093902588, 2.830484628677368, 1.748490571975708]],
    },
    'bn4d': {
        'y': [[[[1.3555430173873901, 1.2950801849365234], [0.8294163346290588, 0.3467629849910736], [-0.3508012592792511, -0.8322036862373352]], [[-1.2919448614120483, -1.3496016263961792], [-1.2817755937576294, -0.8138741254806519], [-0.3279893696308136, 0.3695507049560547]], [[0.8476073741912842, 1.305080771446228], [1.355346441268921, 1.284725308418274], [0.8109811544418335, 0.3238891661167145]]], [[[-0.3735238313674927, -0.8502861261367798], [-1.3017586469650269, -1.349208116531372], [-1.2712538242340088, -0.7953025698661804]], [[-0.3050946593284607, 0.3922458589076996], [0.8655487895011902, 1.314724087715149], [1.3547568321228027, 1.2740192413330078]], [[0.792306661605835, 0.3009355664253235], [-0.396150678396225, -0.8681162595748901], [-1.3112143278121948, -1.3484214544296265]]]],
        'gx': [[[[-0.6154947280883789, -0.6191980242729187], [-0.5592744946479797, -0.5812232494354248], [-0.5319381356239319, -0.5533536076545715]], [[-0.49404460191726685, -0.496499627828598], [-0.4141421318054199, -0.3935064375400543], [-0.2925705909729004, -0.26213663816452026]], [[-0.16120415925979614, -0.1416274905204773], [-0.0593295618891716, -0.0629972293972969], [-0.003914711531251669, -0.025570938363671303]]], [[[0.02323228493332863, 0.002508611185476184], [0.0616958886384964, 0.060172099620103836], [0.14249636232852936, 0.16396166384220123]], [[0.2646142840385437, 0.2955121397972107], [0.39576196670532227, 0.41544947028160095], [0.49681827425956726, 0.49318817257881165]], [[0.5514345169067383, 0.5300778746604919], [0.5784069895744324, 0.5583819150924683], [0.6174522042274475, 0.6168609857559204]]]],
        'mm': [0.24702632427215576, 0.23155245184898376],
        'mv': [1.0607125759124756, 1.0602775812149048],
        'yi': [[[[2.6605143547058105, 2.4835546016693115], [1.929150938987732, 1.1661784648895264], [0.2885419726371765, -0.47160929441452026]], [[-1.0197324752807617, -1.1903640031814575], [-1.0055962800979614, -0.4461463391780853], [0.32025256752967834, 1.1978346109390259]], [[1.9544380903244019, 2.4974470138549805], [2.66024112701416, 2.469169855117798], [1.903524398803711, 1.134402871131897]]], [[[0.2569555342197418, -0.49672889709472656], [-1.0333746671676636, -1.1898175477981567], [-0.9909700751304626, -0.4203472435474396]], [[0.35207828879356384, 1.2293620109558105], [1.9793782234191895, 2.510843276977539], [2.659421920776367, 2.4542970657348633]], [[1.8775651454925537, 1.1025162935256958], [0.22550222277641296, -0.5214980244636536], [-1.0465189218521118, -1.1887245178222656]]]],
    },
    'bn4d_axis1': {
        'y': [[[[1.746334195137024, 1.6014639139175415], [1.1956974267959595, 0.6098253726959229], [-0.03950178623199463, -0.6229993104934692]], [[-1.26668381690979, -1.3996517658233643], [-1.2565423250198364, -0.865848958492279], [-0.3053610920906067, 0.31332477927207947]], [[0.6518994569778442, 1.045836091041565], [1.178945541381836, 1.0247249603271484], [0.6138805150985718, 0.02821366861462593]]], [[[-0.06328292191028595, -0.6419077515602112], [-1.0347604751586914, -1.1636216640472412], [-1.002834439277649, -0.5844124555587769]], [[-0.28252890706062317, 0.335938423871994], [0.8849173188209534, 1.2551028728485107], [1.3727892637252808, 1.2145441770553589]], [[0.5944958925247192, 0.004407804924994707], [-0.6391530632972717, -1.208050012588501], [-1.5890125036239624, -1.7061885595321655]]]],
        'gx': [[[[0.07501886039972305, 0.07070793956518173], [-0.0162429790943861, -0.16024313867092133], [-0.3243429660797119, -0.46759098768234253]], [[-0.048604197800159454, 0.03373868390917778], [0.027373559772968292, -0.05854402109980583], [-0.19901928305625916, -0.3581944406032562]], [[-0.2670237720012665, -0.1005740612745285], [-0.017028069123625755, -0.02480960451066494], [-0.11415870487689972, -0.25907495617866516]]], [[[0.2502079904079437, 0.10850342363119125], [0.025643030181527138, 0.026403086259961128], [0.11891057342290878, 0.29302501678466797]], [[0.3482992649078369, 0.18919430673122406], [0.05241709202528, -0.026911050081253052], [-0.025107337161898613, 0.06535747647285461]], [[0.45700252056121826, 0.310681015253067], [0.14736317098140717, 0.007777255028486252], [-0.07207398116588593, -0.06808091700077057]]]],
        'mm': [0.018938301131129265, 0.025180749595165253, 0.030354056507349014],
        'mv': [1.0056381225585938, 1.008227825164795, 1.0060614347457886],
        'yi': [[[[2.9712164402008057, 2.772768259048462], [2.216935634613037, 1.4143884181976318], [0.5249181985855103, -0.27437639236450195]], [[-0.829506516456604, -1.0204126834869385], [-0.8149460554122925, -0.2540161907672882], [0.550692617893219, 1.4389580488204956]], [[2.231168031692505, 2.7751314640045166], [2.9589343070983887, 2.7459802627563477], [2.1786699295043945, 1.3699575662612915]]], [[[0.4923419952392578, -0.30027785897254944], [-0.8384206891059875, -1.0149391889572144], [-0.7946873903274536, -0.22151879966259003]], [[0.5834734439849854, 1.471425175666809], [2.259610176086426, 2.7910964488983154], [2.960062026977539, 2.73286509513855]], [[2.151902914047241, 1.337085485458374], [0.44843071699142456, -0.33712509274482727], [-0.8631733655929565, -1.0249747037887573]]]],
    },
    'bn3d_axis1': {
        'y': [[[0.8622578382492065, 0.7468104362487793], [0.5753596425056458, 0.021179378032684326], [-0.5601285099983215, -1.5632774829864502]], [[-1.3458178043365479, -1.4570204019546509], [-1.514662504196167, -1.1268274784088135], [-0.5190833210945129, 0.5971609354019165]], [[0.43862593173980713, 0.7551438808441162], [1.0960159301757812, 0.9489346146583557], [1.5302554368972778, 0.5150735378265381]]],
        'gx': [[[-0.419412225484848, -0.3544085919857025], [-0.5925661325454712, -0.4477747976779938], [-0.6191325187683105, 0.13235563039779663]], [[-0.07154673337936401, -0.006424993276596069], [0.13394832611083984, 0.17025414109230042], [0.2391274869441986, -0.28616341948509216]], [[0.3873860538005829, 0.4644065499305725], [0.3191149830818176, 0.4170234799385071], [-0.11246234178543091, 0.6462749242782593]]],
        'mm': [0.0325423926115036, 0.03096788004040718, 0.024801315739750862],
        'mv': [1.016970157623291, 1.00626540184021, 0.9880121946334839],
        'yi': [[[2.9411487579345703, 2.7438082695007324], [2.204259157180786, 1.4019618034362793], [0.5236795544624329, -0.28270602226257324]], [[-0.8332332968711853, -1.0233180522918701], [-0.8215058445930481, -0.26002973318099976], [0.5566738843917847, 1.4539716243743896]], [[2.2170119285583496, 2.7580530643463135], [2.9580233097076416, 2.745090961456299], [2.2040436267852783, 1.387985348701477]]],
    },
}


@pytest.mark.parametrize("name", sorted(BN_CASES))
def test_batch_normalization_matches_tensorflow(name):
    x, kwargs = BN_CASES[name]
    bn = keras.layers.BatchNormalization(**kwargs)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = bn(xt, training=True)
        weights = np.linspace(-1, 1, int(np.prod(y.shape)), dtype=np.float32).reshape(y.shape)
        loss = tf.reduce_sum(y * tf.constant(weights))
    gx = tape.gradient(loss, xt)
    bn(xt * 0.5 + 1.0, training=True)
    yi = bn(xt, training=False)
    want = TF_BN[name]
    for got, key in ((y, "y"), (gx, "gx"), (bn.moving_mean, "mm"), (bn.moving_variance, "mv"),
                     (yi, "yi")):
        np.testing.assert_allclose(got.numpy(), want[key], rtol=2e-6, atol=1e-6, err_msg=key)


def test_batch_normalization_weights_and_modes():
    bn = keras.layers.BatchNormalization(name="bn")
    y = bn(tf.constant(X2))  # inference by default: the moving statistics (0, 1)
    np.testing.assert_allclose(y.numpy(), X2 / np.sqrt(1 + 1e-3), rtol=1e-6)
    assert [w.name for w in bn.trainable_weights] == ["bn/gamma:0", "bn/beta:0"]
    assert [w.name for w in bn.non_trainable_weights] == ["bn/moving_mean:0",
                                                          "bn/moving_variance:0"]
    bn.trainable = False  # Keras 2: a frozen BatchNormalization runs in inference mode
    bn(tf.constant(X2), training=True)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.zeros(4, np.float32))


def test_batch_normalization_in_traced_step_updates_moving_statistics():
    bn, eager = keras.layers.BatchNormalization(), keras.layers.BatchNormalization()
    step = tf.function(lambda x: bn(x, training=True))
    for k in range(5):
        x = tf.constant(X2 * (k + 1))
        step(x)
        eager(x, training=True)
    assert step.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(bn.moving_variance.numpy(), eager.moving_variance.numpy(),
                               rtol=1e-6)


def test_batch_normalization_bad_axis():
    with pytest.raises(ValueError, match="Invalid axis"):
        keras.layers.BatchNormalization(axis=3)(tf.constant(X2))
    with pytest.raises(TypeError, match="axis"):
        keras.layers.BatchNormalization(axis="last")


def test_dropout_inference_is_identity_and_training_scales():
    drop = keras.layers.Dropout(0.25)
    x = tf.ones([200, 50])
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    np.testing.assert_array_equal(drop(x, training=False).numpy(), x.numpy())
    y = drop(x, training=True).numpy()
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02


def test_dropout_new_mask_each_call_and_each_traced_replay():
    tf.random.set_seed(5)
    drop = keras.layers.Dropout(0.5)
    x = tf.ones([64])
    masks = [drop(x, training=True).numpy() for _ in range(2)]
    assert not np.array_equal(*masks)

    @tf.function
    def step(x):
        return drop(x, training=True)

    replays = [step(x).numpy() for _ in range(3)]
    assert step.experimental_get_tracing_count() == 1
    assert not np.array_equal(replays[1], replays[2])
    # the same seed gives the same masks
    tf.random.set_seed(5)
    again = [drop(x, training=True).numpy() for _ in range(2)]
    np.testing.assert_array_equal(masks[0], again[0])


def test_dropout_noise_shape_and_gradient():
    drop = keras.layers.Dropout(0.5, noise_shape=(None, 1))
    x = tf.ones([8, 6])
    y = drop(x, training=True).numpy()
    assert all(len(set(row.tolist())) == 1 for row in y)  # one mask value per row
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = drop(x, training=True)
    g = tape.gradient(out, x).numpy()
    np.testing.assert_array_equal(g, out.numpy())  # x is ones: d out/d x is the scaled mask
    with pytest.raises(ValueError, match="rate"):
        keras.layers.Dropout(1.5)


def test_dropout_training_flag_through_model():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.drop = keras.layers.Dropout(0.9)

        def call(self, x, training=False):
            return self.drop(x, training=training)

    net, x = Net(), tf.ones([100])
    np.testing.assert_array_equal(net(x).numpy(), x.numpy())
    assert (net(x, training=True).numpy() == 0).mean() > 0.5


def test_lambda():
    layer = keras.layers.Lambda(lambda x, power: x ** power, arguments={"power": 3})
    np.testing.assert_array_equal(layer(tf.constant([[2.0]])).numpy(), [[8.0]])
    flag = keras.layers.Lambda(lambda x, training=None: x * (2.0 if training else 1.0))
    assert float(flag(tf.constant([[1.0]]), training=True)[0, 0]) == 2.0
    assert layer.weights == []
    with pytest.raises(TypeError, match="callable"):
        keras.layers.Lambda(3)


def test_embedding_lookup_gradient_and_training():
    emb = keras.layers.Embedding(5, 2, embeddings_initializer="ones", name="emb")
    idx = tf.constant([[0, 3], [3, 3]])
    out = emb(idx)
    assert out.shape == (2, 2, 2) and [v.name for v in emb.weights] == ["emb/embeddings:0"]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(emb(idx))
    g = tape.gradient(loss, emb.embeddings)
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy()[:, 0], [1, 0, 0, 3, 0])
    keras.optimizers.SGD(0.1).apply_gradients([(g, emb.embeddings)])
    np.testing.assert_allclose(emb.embeddings.numpy()[:, 0], [0.9, 1, 1, 0.7, 1], rtol=1e-6)
    default = keras.layers.Embedding(100, 4)
    default.build((None,))
    assert np.abs(default.embeddings.numpy()).max() <= 0.05
    assert emb.compute_mask(idx) is None
    masked = keras.layers.Embedding(5, 2, mask_zero=True)
    np.testing.assert_array_equal(masked.compute_mask(idx).numpy(), [[False, True], [True, True]])
    with pytest.raises(ValueError, match="input_dim"):
        keras.layers.Embedding(0, 2)
