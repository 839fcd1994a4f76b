"""tapeflow.progress: tqdm bars when tqdm is installed, plain lines on stderr without it;
Jacobians report their chunks when asked, and give the same values."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.progress import progress


def test_plain_text_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert list(progress(range(3), desc="steps")) == [0, 1, 2]
    assert capsys.readouterr().err.splitlines()[-1] == "steps: 3/3"
    assert list(progress(iter([1, 2]), desc="n")) == [1, 2]  # no length: no total
    assert capsys.readouterr().err.splitlines()[-1] == "n: 2"


def test_disabled_is_the_iterable_itself():
    r = range(3)
    assert progress(r, enabled=False) is r


@pytest.mark.parametrize("fn", [tf.jacfwd, tf.jacrev])
def test_chunked_jacobians_report_progress_and_agree(fn, capsys):
    f = lambda x: tf.sin(x) * tf.reduce_sum(x)  # noqa: E731
    x = np.arange(1.0, 11.0)
    plain = fn(f)(x).numpy()
    shown = fn(f, chunk_size=3, progress=True)(x).numpy()
    np.testing.assert_array_equal(shown, plain)
    assert "Jacobian chunks" in capsys.readouterr().err
    J = tf.jacobian(f, chunk_size=4, progress=True)(x).numpy()
    np.testing.assert_allclose(J, plain, rtol=1e-12)
