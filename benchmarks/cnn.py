"""The small CNN of the seed question, defined once for every benchmark and framework.

28x28x1 input -> conv 3x3, 8 filters, stride 2, SAME, relu -> conv 3x3, 16 filters,
stride 2, SAME, relu -> flatten (7*7*16 = 784) -> dense 64, relu -> dense 10.
Weights are float32 NumPy arrays from a fixed seed; each framework builds the same
function from them, so every Jacobian can be checked against one reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

SHAPES = {"k1": (3, 3, 1, 8), "b1": (8,), "k2": (3, 3, 8, 16), "b2": (16,),
          "w3": (784, 64), "b3": (64,), "w4": (64, 10), "b4": (10,)}


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in SHAPES.items():
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
        out[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return out


# A ReLU whose input lies within float32 rounding of 0 has a mask that rounding decides:
# float32 frameworks then differ from each other and from the float64 reference by a
# whole Jacobian row (one of 256 uniform images drew a pre-activation of 5.7e-8 at a
# layer scale of 1.7: tapeflow's float32 convolutions gave -3.7e-9, JAX's +9.3e-8, and
# their Jacobians differed by 16%). The inputs are drawn away from such kinks.
KINK_MARGIN = 1e-5  # relative to the largest pre-activation of the layer


def inputs(n: int = 64, seed: int = 1) -> np.ndarray:
    """n flattened 28x28 images, [n, 784] float32, uniform on [0, 1), each drawn again
    while one of its ReLUs (with `weights()`) is within KINK_MARGIN of its kink."""
    rng = np.random.default_rng(seed)
    xs = rng.uniform(0, 1, (n, 784)).astype(np.float32)
    layers = _dense_layers(weights())
    near = _near_kinks(layers, xs)
    while near.any():
        xs[near] = rng.uniform(0, 1, (int(near.sum()), 784)).astype(np.float32)
        near = _near_kinks(layers, xs)
    return xs


def tf_api_model(tf: Any, w: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    """[batch, 784] -> [batch, 10], written once against TensorFlow's API: `tf` is
    tapeflow or TensorFlow itself (the contract: the same code runs on both)."""
    p = {k: tf.constant(v) for k, v in w.items()}

    def model(x: Any) -> Any:
        h = tf.reshape(x, [-1, 28, 28, 1])
        h = tf.nn.relu(tf.nn.conv2d(h, p["k1"], strides=2, padding="SAME") + p["b1"])
        h = tf.nn.relu(tf.nn.conv2d(h, p["k2"], strides=2, padding="SAME") + p["b2"])
        h = tf.reshape(h, [-1, 784])
        h = tf.nn.relu(tf.matmul(h, p["w3"]) + p["b3"])
        return tf.matmul(h, p["w4"]) + p["b4"]

    return model


def tapeflow_model(w: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    import tapeflow

    return tf_api_model(tapeflow, w)


def tensorflow_model(w: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    import tensorflow

    return tf_api_model(tensorflow, w)


def jax_model(w: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    import jax
    import jax.numpy as jnp

    p = {k: jnp.asarray(v) for k, v in w.items()}

    def conv(h: Any, k: Any) -> Any:
        return jax.lax.conv_general_dilated(h, k, (2, 2), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def model(x: Any) -> Any:
        h = jnp.reshape(x, (-1, 28, 28, 1))
        h = jax.nn.relu(conv(h, p["k1"]) + p["b1"])
        h = jax.nn.relu(conv(h, p["k2"]) + p["b2"])
        h = jnp.reshape(h, (-1, 784))
        h = jax.nn.relu(h @ p["w3"] + p["b3"])
        return h @ p["w4"] + p["b4"]

    return model


def torch_model(w: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    import torch
    import torch.nn.functional as F

    # HWIO -> OIHW; TensorFlow's SAME with stride 2 on 28 (and 14) pads 0 before, 1 after.
    k1 = torch.from_numpy(np.ascontiguousarray(w["k1"].transpose(3, 2, 0, 1)))
    k2 = torch.from_numpy(np.ascontiguousarray(w["k2"].transpose(3, 2, 0, 1)))
    p = {k: torch.from_numpy(v) for k, v in w.items()}

    def model(x: Any) -> Any:
        h = x.reshape(-1, 28, 28, 1).permute(0, 3, 1, 2)
        h = F.relu(F.conv2d(F.pad(h, (0, 1, 0, 1)), k1, p["b1"], stride=2))
        h = F.relu(F.conv2d(F.pad(h, (0, 1, 0, 1)), k2, p["b2"], stride=2))
        h = h.permute(0, 2, 3, 1).reshape(-1, 784)
        h = F.relu(h @ p["w3"] + p["b3"])
        return h @ p["w4"] + p["b4"]

    return model


def reference_jacobians(w: dict[str, np.ndarray], xs: np.ndarray) -> np.ndarray:
    """[n, 10, 784] Jacobians in float64 by tapeflow (the shared reference: the peers,
    checked against it, would disagree with a wrong one; the rule tests check each op)."""
    import tapeflow as tf

    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    model = tapeflow_model(w64)
    out = []
    for x in xs.astype(np.float64):
        with tf.GradientTape() as tape:
            xt = tf.constant(x[None])
            tape.watch(xt)
            y = model(xt)
        out.append(np.asarray(tape.jacobian(y, xt))[0, :, 0, :])
    return np.stack(out)


def jacobians_per_input(tf: Any, model: Callable[[Any], Any], xs: np.ndarray,
                        use_pfor: bool = True) -> np.ndarray:
    """The seed asker's code, for tapeflow or TensorFlow (`tf`): record a tape at each
    input and take its Jacobian. [n, 10, 784]."""
    out = []
    for x in xs:
        xt = tf.constant(x[None])
        with tf.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(xt)
            y = model(xt)
        out.append(np.asarray(tape.jacobian(y, xt, experimental_use_pfor=use_pfor))[0, :, 0])
    return np.stack(out)


def batch_jacobians(tf: Any, model: Callable[[Any], Any], xs: np.ndarray) -> np.ndarray:
    """All Jacobians from one tape over the whole batch (`batch_jacobian`). [n, 10, 784]."""
    xt = tf.constant(xs)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = model(xt)
    return np.asarray(tape.batch_jacobian(y, xt))


def traced_jacobians(tf: Any, model: Callable[[Any], Any]) -> tuple[Any, Any]:
    """The Jacobian and the batch Jacobian as `tf.function`s, for tapeflow or TensorFlow:
    traced once, then replayed (tapeflow) or run as a compiled graph (TensorFlow)."""
    @tf.function
    def jac(x: Any) -> Any:
        with tf.GradientTape() as t:
            t.watch(x)
            y = model(x)
        return t.jacobian(y, x)

    @tf.function
    def batch_jac(x: Any) -> Any:
        with tf.GradientTape() as t:
            t.watch(x)
            y = model(x)
        return t.batch_jacobian(y, x)

    return jac, batch_jac


def _numpy_conv_same_stride2(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """TensorFlow's conv2d, 3x3, stride 2, SAME, in NumPy: on 28 (and 14) SAME pads
    0 before and 1 after, so output pixel o reads padded rows 2o..2o+2."""
    n, height, width, _ = h.shape
    hp = np.pad(h, ((0, 0), (0, 1), (0, 1), (0, 0)))
    out = 0.0
    for i in range(3):
        for j in range(3):
            out = out + hp[:, i:i + height:2, j:j + width:2, :] @ k[i, j]
    return out


def _dense_layers(w: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights in float64, each convolution as a dense matrix (its action on the
    one-hot basis): the network is linear between its ReLUs."""
    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    conv1 = _numpy_conv_same_stride2(np.eye(784).reshape(784, 28, 28, 1), w64["k1"])
    conv2 = _numpy_conv_same_stride2(np.eye(1568).reshape(1568, 14, 14, 8), w64["k2"])
    return {**w64, "conv1": conv1.reshape(784, 1568), "conv2": conv2.reshape(1568, 784)}


def _pre_activations(layers: dict[str, np.ndarray], xs: np.ndarray) -> list[np.ndarray]:
    x = xs.astype(np.float64)
    a1 = x @ layers["conv1"] + np.tile(layers["b1"], 196)
    a2 = np.maximum(a1, 0) @ layers["conv2"] + np.tile(layers["b2"], 49)
    a3 = np.maximum(a2, 0) @ layers["w3"] + layers["b3"]
    return [a1, a2, a3]


def _near_kinks(layers: dict[str, np.ndarray], xs: np.ndarray) -> np.ndarray:
    """Which inputs have a ReLU within KINK_MARGIN of its kink (float64)."""
    near = np.zeros(len(xs), bool)
    for a in _pre_activations(layers, xs):
        near |= (np.abs(a) < KINK_MARGIN * np.abs(a).max(axis=1, keepdims=True)).any(axis=1)
    return near


def numpy_jacobians(w: dict[str, np.ndarray], xs: np.ndarray) -> np.ndarray:
    """[n, 10, 784] Jacobians in float64 by NumPy alone, independent of every framework:
    at each input, the product of the layers' matrices with that input's ReLU masks in
    between."""
    layers = _dense_layers(w)
    a1, a2, a3 = _pre_activations(layers, xs)
    # Back from the outputs: [n, 10, width] rows times each layer's mask and matrix.
    rows = np.broadcast_to(layers["w4"].T, (len(xs), 10, 64)) * (a3 > 0)[:, None, :]
    rows = (rows @ layers["w3"].T) * (a2 > 0)[:, None, :]
    rows = (rows @ layers["conv2"].T) * (a1 > 0)[:, None, :]
    return rows @ layers["conv1"].T
