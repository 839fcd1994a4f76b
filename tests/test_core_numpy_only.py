"""The core needs NumPy only: in an interpreter where every third-party package but
NumPy is unimportable (as in an install without extras), tapeflow imports, and
tapes, accumulators, traced functions, vmap, Jacobians, sparsity detection, Keras
layers and graph pictures' dot source all work; the optional parts name their extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import importlib.abc, sys

    allowed = set(sys.stdlib_module_names) | {"numpy", "tapeflow"}
    before = set(sys.modules)  # what site and startup hooks loaded

    class NoExtras(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] not in allowed:
                raise ImportError(f"{name} is not installed in this test")
            return None

    sys.meta_path.insert(0, NoExtras())

    import numpy as np
    import tapeflow as tf
    from tapeflow.sparse_jacobians import _detect

    x = tf.Variable([1.0, 2.0])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(x ** 3.0)
        g = tape.gradient(y, x)
    assert acc.jvp(g).numpy().tolist() == [6.0, 0.0]
    jac = tf.function(tf.jacfwd(lambda v: tf.sin(v) * v))
    assert jac(tf.constant([0.0, 1.0])).shape == (2, 2)
    assert tf.vmap(tf.grad(lambda v: tf.reduce_sum(v * v)))(np.ones((3, 2))).shape == (3, 2)
    pattern, _ = _detect(lambda v: v[1:] * v[:-1], tf.constant(np.ones(4)))
    assert pattern.nnz == 6
    layer = tf.keras.layers.Dense(2)
    assert layer(tf.ones([1, 3])).shape == (1, 2)
    import tempfile, os
    tf.plot_graph(lambda v: v * 2.0, tf.constant(1.0), path=os.path.join(tempfile.mkdtemp(), "g.dot"))
    for extra, call in (("scipy", lambda: tf.sparse_jacobian(lambda v: v * 2.0, np.ones(3))),
                        ("plot", lambda: tf.plot_graph(lambda v: v, tf.constant(1.0),
                                                       path=os.path.join(tempfile.mkdtemp(), "g.svg")))):
        try:
            call()
        except ImportError as e:
            assert f"tapeflow[{extra}]" in str(e), str(e)
        else:
            raise AssertionError(f"{extra}: no ImportError")
    for module in ("tapeflow.scipy", "tapeflow.dask"):
        try:
            __import__(module)
        except ImportError as e:
            assert "pip install 'tapeflow[" in str(e), str(e)
        else:
            raise AssertionError(f"{module} imported without its extra")
    third_party = sorted(m for m in sys.modules if m not in before and m.partition(".")[0]
                         not in allowed and not m.startswith(("_cython", "cython_runtime")))
    assert not third_party, third_party
    print("ok")
''')


def test_the_core_runs_with_numpy_alone():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
