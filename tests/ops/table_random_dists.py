"""Op-table entries of the gamma and Poisson draws (src/tapeflow/ops/random_dists.py).

`random_gamma_grad` (D_k = -(d^k P / da^k) / p, TensorFlow's RandomGammaGrad at k = 1) has
rows on both sides of its computation (the power series below x = a + 1, the continued
fraction above) and at order 2, against an independent reference: P's alternating
series, differentiated term by term in a. Its rules are D_(k+1) and elementary functions,
so the rows' second-order checks reach D_3.

The draws are functions of their seed: `random_poisson` has no derivative, and the rows of
`random_gamma` check its values (against NumPy's generator seeded alike), batching, replay,
compilation and saving as functions of the seed; its derivative in alpha is the implicit
reparameterization gradient, not the derivative of NumPy's sampler at a fixed seed, so
finite differences of the draw cannot check it: tests/ops/test_random_dists.py checks it
against finite differences of the gamma CDF, forward against reverse, batched against a
loop and compiled against eager.
"""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.random_dists import gamma_grad_p, gamma_p, poisson_p

from op_table import NondiffRow, Row, args, uniform


def _np_gamma_grad(a, x, order=1):
    """D_1 or D_2 from P(a, x) = sum_n (-1)^n x^(a+n) / (n! (a + n) Gamma(a)), each term
    differentiated in a. The series alternates, its terms near e^x while the sum is near
    D e^-x: rounding costs about 1e-16 e^(2x), so the rows keep x below 3.3."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    psi = tf.math.digamma(a).numpy()
    psi1 = tf.math.polygamma(np.ones_like(a), a).numpy()
    out = np.empty(a.shape)
    for idx in np.ndindex(a.shape):
        ai, xi = a[idx], x[idx]
        terms = []
        for n in range(120):
            c = math.log(xi) - 1 / (ai + n) - psi[idx]
            d = c if order == 1 else c * c + 1 / (ai + n) ** 2 - psi1[idx]
            terms.append((-1) ** n * xi ** (n + 1) / (math.factorial(n) * (ai + n)) * d)
        out[idx] = -math.exp(xi) * math.fsum(terms)
    return out


def _draw_seed(s):
    return tf.cast(s, tf.int64)


ALPHA = np.array([[0.5, 2.0, 7.0], [0.05, 1.0, 30.0]])
LAM = np.array([0.0, 0.7, 12.0, 400.0])


def _np_gamma(s):
    a, b = (int(v) % 2 ** 64 for v in s)
    return np.random.default_rng([a, b]).standard_gamma(ALPHA, (3,) + ALPHA.shape)


def _np_poisson(s, lam):
    a, b = (int(v) % 2 ** 64 for v in s)
    return np.random.default_rng([a, b]).poisson(np.asarray(lam, np.float64), (2,) + lam.shape)


ROWS: list = [
    Row("random_gamma_grad", lambda a, x: bind(gamma_grad_p, a, x, order=1),
        args(uniform(1.5, 3.0, 5), uniform(0.3, 2.5, 5)), _np_gamma_grad),
    Row("random_gamma_grad_upper", lambda a, x: bind(gamma_grad_p, a, x, order=1),
        args(uniform(0.3, 1.2, 5), uniform(2.3, 3.3, 5)), _np_gamma_grad,
        prims=("random_gamma_grad",)),
    Row("random_gamma_grad_order2", lambda a, x: bind(gamma_grad_p, a, x, order=2),
        args(uniform(0.8, 2.5, 3, 1), uniform(0.4, 3.2, 4)),
        lambda a, x: _np_gamma_grad(a, x, order=2), prims=("random_gamma_grad",)),
]

NONDIFF_ROWS: list = [
    NondiffRow("random_gamma_seeded",
               lambda s: bind(gamma_p, _draw_seed(s), tf.constant(ALPHA), shape=(3,), lead=0),
               args(uniform(-900.0, 900.0, 2)), _np_gamma, prims=("random_gamma",)),
    NondiffRow("random_poisson_seeded",
               lambda s, lam: bind(poisson_p, _draw_seed(s), lam, shape=(2,), lead=0,
                                   dtype=np.dtype(np.int64)),
               args(uniform(0.0, 900.0, 2), lambda rng: LAM), _np_poisson,
               prims=("random_poisson",)),
]

EXEMPT: dict = {}
