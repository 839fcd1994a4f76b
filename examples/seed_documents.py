"""The two seed documents' examples with `import tapeflow as tf`: TensorFlow's
ForwardAccumulator documentation (nested accumulators, forward-over-backward
Hessian-vector products, a Dense layer's Jacobian both ways) and the question of
re-evaluating a Jacobian at many inputs (answered by a traced, replayed Jacobian).

Run: python examples/seed_documents.py [--quick]
"""

from __future__ import annotations

import sys

import numpy as np

import tapeflow as tf


def main(quick: bool = False) -> None:
    # Nested accumulators: the inner JVP is a first derivative, the outer one of it a second.
    primal = tf.constant(1.1)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.0)) as outer:
        with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.0)) as inner:
            primal_out = primal ** tf.constant(3.5)
    inner_jvp = inner.jvp(primal_out)
    print("d/dx x^3.5 at 1.1:", inner_jvp.numpy(), " second derivative:",
          outer.jvp(inner_jvp).numpy())

    # Forward over backward: a Hessian-vector product without the Hessian.
    v = tf.Variable([1.0, 2.0])
    with tf.autodiff.ForwardAccumulator(v, tf.constant([1.0, 0.0])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.0)
        backward = tape.gradient(y, v)
    print("gradient:", backward.numpy(), " H @ [1, 0]:", acc.jvp(backward).numpy())

    # A Dense layer's loss derivative by forward mode (one column per tangent) and reverse.
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    dense = tf.keras.layers.Dense(1)
    dense.build([None, 2])
    loss_fn = lambda: tf.reduce_sum((dense(x) - tf.constant([1.0, -1.0])) ** 2.0)  # noqa: E731
    columns = []
    for tangent in ([[1.0], [0.0]], [[0.0], [1.0]]):
        with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant(tangent)) as acc:
            columns.append(acc.jvp(loss_fn()))
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad = tape.gradient(loss, dense.kernel)
    np.testing.assert_allclose(kernel_grad.numpy()[:, 0], tf.stack(columns).numpy(), rtol=1e-5)
    print("kernel gradient, reverse and forward mode agree:", kernel_grad.numpy()[:, 0])

    # The question: a network's Jacobian at many inputs. Trace once, replay at each input.
    rng = np.random.default_rng(0)
    w1 = tf.constant(rng.standard_normal((3, 16)))
    w2 = tf.constant(rng.standard_normal((16, 2)))

    @tf.function
    def jacobian_at(point):
        with tf.GradientTape() as tape:
            tape.watch(point)
            out = tf.matmul(tf.tanh(tf.matmul(point[None], w1)), w2)[0]
        return tape.jacobian(out, point)

    for point in rng.standard_normal((5 if quick else 100, 3)):
        J = jacobian_at(tf.constant(point))
    print(f"Jacobian {tuple(J.shape)} at many inputs, traced "
          f"{jacobian_at.experimental_get_tracing_count()} time(s)")


if __name__ == "__main__":
    main("--quick" in sys.argv)
