"""Keras weight initializers (tf.keras / Keras 2 names, arguments and defaults).

Every initializer is called as ``init(shape, dtype=None)`` and returns a tensor
(dtype float32 by default). As in Keras 2, a *seeded* initializer is stateless:
each call with the same shape and dtype gives the same values. An unseeded one
draws the next numbers of tapeflow's global random sequence, so
`tf.random.set_seed` makes a program's initial weights reproducible.

`get` turns a name (``"glorot_uniform"`` or ``"GlorotUniform"``), a config dict,
a class, an instance or any callable into an initializer.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..ops import random as _random
from ..tensor import Tensor
from ..tensor import constant as _tf_constant
from .backend import floatx
from .utils import with_custom

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "ConstantInitializer", "RandomUniform", "RandomNormal",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "Identity",
           "zeros", "ones", "constant", "random_uniform", "random_normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "orthogonal", "identity", "get", "serialize",
           "deserialize"]

# 1 / the standard deviation of a standard normal truncated to [-2, 2] (Keras' constant).
_TRUNCATED_STDDEV = 0.87962566103423978


# ---------------------------------------------------------------- helpers
def _shape(shape: Any) -> tuple:
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        dims = (int(shape),)
    if any(d < 0 for d in dims):
        raise ValueError(f"An initializer's shape must have non-negative dims; got {tuple(shape)}.")
    return dims


def _get_dtype(dtype: Any) -> _dt.DType:
    return _dt.as_dtype(dtype if dtype is not None else floatx())


def _assert_float_dtype(dtype: Any, who: str) -> _dt.DType:
    dt = _get_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"{who}: expected a floating point dtype, got {dt.name}.")
    return dt


def _check_kwargs(who: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(f"{who}: unknown keyword arguments {sorted(kwargs)}.")


def _seeded_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([_random._seed_entropy(seed)])


def _uniform(shape: tuple, minval: float, maxval: float, dt: _dt.DType, seed: Any) -> Tensor:
    if seed is not None:
        return Tensor(np.asarray(_seeded_rng(seed).uniform(minval, maxval, shape)).astype(dt._np))
    return _random.uniform(shape, minval, maxval, dtype=dt)


def _normal(shape: tuple, mean: float, stddev: float, dt: _dt.DType, seed: Any) -> Tensor:
    if seed is not None:
        draws = _seeded_rng(seed).standard_normal(shape) * stddev + mean
        return Tensor(np.asarray(draws).astype(dt._np))
    return _random.normal(shape, mean, stddev, dt)


def _truncated(shape: tuple, mean: float, stddev: float, dt: _dt.DType, seed: Any) -> Tensor:
    """Normal draws, those more than two standard deviations out drawn again (as Keras)."""
    if seed is not None:
        rng = _seeded_rng(seed)
        draw: Callable[[int], np.ndarray] = lambda n: rng.standard_normal(n)  # noqa: E731
    else:
        draw = lambda n: _random.normal([n], dtype=_dt.float64)._value  # noqa: E731
    z = np.asarray(draw(int(np.prod(shape, dtype=np.int64))), np.float64)
    bad = np.abs(z) > 2
    while bad.any():
        z[bad] = draw(int(bad.sum()))
        bad = np.abs(z) > 2
    return Tensor((z.reshape(shape) * stddev + mean).astype(dt._np))


def _compute_fans(shape: tuple) -> tuple[int, int]:
    """(fan_in, fan_out) as Keras: a conv kernel [..., in, out] counts its receptive field."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2], dtype=np.int64))
    return shape[-2] * receptive, shape[-1] * receptive


# ---------------------------------------------------------------- base and constants
class Initializer:
    """Base class: ``init(shape, dtype=None)`` returns a tensor of that shape and dtype.

    Subclass it and implement ``__call__``; `get_config` returns the constructor
    arguments, `from_config` rebuilds an initializer from them.

    Example:
        >>> import tapeflow as tf
        >>> class Twos(tf.keras.initializers.Initializer):
        ...     def __call__(self, shape, dtype=None, **kwargs):
        ...         return 2 * tf.ones(shape, dtype=dtype or tf.float32)
        >>> Twos()((2,)).numpy()
        array([2., 2.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        raise NotImplementedError("Initializer subclasses must implement the `__call__()` method.")

    def get_config(self) -> dict:
        """The constructor arguments, as a dict."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Initializer":
        """An initializer from `get_config`'s dict."""
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros (any numeric or bool dtype).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.Zeros()((2, 2), dtype="int32").numpy()
        array([[0, 0],
               [0, 0]], dtype=int32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("Zeros", kwargs)
        return Tensor(np.zeros(_shape(shape), _get_dtype(dtype)._np))


class Ones(Initializer):
    """All ones (any numeric or bool dtype).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.Ones()((3,)).numpy()
        array([1., 1., 1.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("Ones", kwargs)
        return Tensor(np.ones(_shape(shape), _get_dtype(dtype)._np))


class Constant(Initializer):
    """Every element `value`; `value` may also be an array that has the shape's
    number of elements (as `tf.constant(value, shape=...)`).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.Constant(3.)((2,)).numpy()
        array([3., 3.], dtype=float32)
    """

    def __init__(self, value: Any = 0) -> None:
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("Constant", kwargs)
        value = self.value.numpy() if hasattr(self.value, "numpy") else self.value
        return _tf_constant(value, dtype=_get_dtype(dtype), shape=_shape(shape))

    def get_config(self) -> dict:
        return {"value": self.value}


class ConstantInitializer(Constant):
    """TensorFlow's `tf.constant_initializer`: `Constant`, except that without a `dtype`
    the tensor takes the value's own (an int list gives int32), as TensorFlow's does.

    Example:
        >>> import tapeflow as tf
        >>> tf.constant_initializer([1, 2])(shape=[2]).dtype
        tf.int32
        >>> tf.constant_initializer(3)(shape=[2], dtype=tf.float64).numpy()
        array([3., 3.])
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("constant_initializer", kwargs)
        value = self.value.numpy() if hasattr(self.value, "numpy") else self.value
        return _tf_constant(value, dtype=None if dtype is None else _get_dtype(dtype),
                            shape=_shape(shape))


# ---------------------------------------------------------------- random
class RandomUniform(Initializer):
    """Uniform draws in [minval, maxval) (floating or integer dtypes).

    Example:
        >>> import tapeflow as tf
        >>> w = tf.keras.initializers.RandomUniform(-1., 1., seed=3)((4, 5))
        >>> bool(((w.numpy() >= -1) & (w.numpy() < 1)).all())
        True
    """

    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: int | None = None) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("RandomUniform", kwargs)
        dt, dims = _get_dtype(dtype), _shape(shape)
        if dt.is_integer:
            if self.seed is not None:
                values = _seeded_rng(self.seed).integers(self.minval, self.maxval, dims)
                return Tensor(np.asarray(values).astype(dt._np))
            return _random.uniform(dims, int(self.minval), int(self.maxval), dtype=dt)
        if not dt.is_floating:
            raise ValueError(f"RandomUniform: expected a float or integer dtype, got {dt.name}.")
        return _uniform(dims, self.minval, self.maxval, dt, self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(Initializer):
    """Normal draws with `mean` and `stddev` (floating dtypes).

    Example:
        >>> import tapeflow as tf
        >>> init = tf.keras.initializers.RandomNormal(stddev=1., seed=0)
        >>> bool((init((3,)).numpy() == init((3,)).numpy()).all())  # seeded: stateless
        True
    """

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("RandomNormal", kwargs)
        dt = _assert_float_dtype(dtype, "RandomNormal")
        return _normal(_shape(shape), self.mean, self.stddev, dt, self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(Initializer):
    """Normal draws with `mean` and `stddev`, redrawn where more than two
    standard deviations from the mean.

    Example:
        >>> import tapeflow as tf
        >>> w = tf.keras.initializers.TruncatedNormal(stddev=1., seed=1)((1000,))
        >>> bool((abs(w.numpy()) <= 2).all())
        True
    """

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("TruncatedNormal", kwargs)
        dt = _assert_float_dtype(dtype, "TruncatedNormal")
        return _truncated(_shape(shape), self.mean, self.stddev, dt, self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class VarianceScaling(Initializer):
    """Draws scaled to the weight's fans: variance ``scale / n`` where n is fan_in,
    fan_out or their mean (`mode`); `distribution` "truncated_normal" (alias
    "normal"), "untruncated_normal" or "uniform" (on [-limit, limit],
    limit = sqrt(3 scale / n)). A conv kernel [kh, kw, in, out] has
    fan_in = kh kw in and fan_out = kh kw out.

    Example:
        >>> import tapeflow as tf
        >>> init = tf.keras.initializers.VarianceScaling(2., "fan_in", "uniform", seed=0)
        >>> w = init((50, 10))
        >>> bool((abs(w.numpy()) <= (3 * 2 / 50) ** 0.5).all())
        True
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None) -> None:
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive float. Received: scale={scale}.")
        modes = ("fan_in", "fan_out", "fan_avg")
        if mode not in modes:
            raise ValueError(f"Invalid `mode` argument: {mode!r}. Please use one of {modes}.")
        distribution = str(distribution).lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        kinds = ("uniform", "truncated_normal", "untruncated_normal")
        if distribution not in kinds:
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}. "
                             f"Allowed distributions: {kinds}.")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        who = type(self).__name__
        _check_kwargs(who, kwargs)
        dt, dims = _assert_float_dtype(dtype, who), _shape(shape)
        fan_in, fan_out = _compute_fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return _truncated(dims, 0.0, math.sqrt(scale) / _TRUNCATED_STDDEV, dt, self.seed)
        if self.distribution == "untruncated_normal":
            return _normal(dims, 0.0, math.sqrt(scale), dt, self.seed)
        limit = math.sqrt(3.0 * scale)
        return _uniform(dims, -limit, limit, dt, self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    _args: tuple = ()

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(*self._args, seed=seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """Uniform on [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)): Keras'
    default kernel initializer.

    Example:
        >>> from tapeflow.keras import initializers
        >>> w = initializers.GlorotUniform(seed=0)((3, 2))
        >>> bool((abs(w.numpy()) <= (6 / 5) ** 0.5).all())
        True
    """

    _args = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal with stddev = sqrt(2 / (fan_in + fan_out)) (after truncation).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.GlorotNormal(seed=0)((3, 3, 1, 8)).shape
        TensorShape([3, 3, 1, 8])
    """

    _args = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """Truncated normal with stddev = sqrt(2 / fan_in) (after truncation).

    Example:
        >>> import tapeflow as tf
        >>> w = tf.keras.initializers.HeNormal(seed=0)((200, 100))
        >>> bool(abs(w.numpy().std() - (2 / 200) ** 0.5) < 0.01)
        True
    """

    _args = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """Uniform on [-limit, limit] with limit = sqrt(6 / fan_in).

    Example:
        >>> import tapeflow as tf
        >>> w = tf.keras.initializers.HeUniform(seed=0)((24, 5))
        >>> bool((abs(w.numpy()) <= 0.5).all())
        True
    """

    _args = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal with stddev = sqrt(1 / fan_in) (after truncation).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.LecunNormal(seed=0)((4, 2)).dtype
        tf.float32
    """

    _args = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform on [-limit, limit] with limit = sqrt(3 / fan_in).

    Example:
        >>> import tapeflow as tf
        >>> w = tf.keras.initializers.LecunUniform(seed=0)((12, 5))
        >>> bool((abs(w.numpy()) <= 0.5).all())
        True
    """

    _args = (1.0, "fan_in", "uniform")


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`, from the QR decomposition of a normal
    draw; shapes of rank > 2 are orthogonal as [prod(shape[:-1]), shape[-1]].

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> q = tf.keras.initializers.Orthogonal(seed=0)((3, 3), dtype="float64").numpy()
        >>> bool(np.allclose(q.T @ q, np.eye(3)))
        True
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        self.gain, self.seed = gain, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("Orthogonal", kwargs)
        dt, dims = _assert_float_dtype(dtype, "Orthogonal"), _shape(shape)
        if len(dims) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={dims} of rank {len(dims)}.")
        rows, cols = int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]
        a = _normal((max(rows, cols), min(rows, cols)), 0.0, 1.0, _dt.float64, self.seed)._value
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return Tensor((self.gain * q.reshape(dims)).astype(dt._np))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only; rectangular allowed).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.Identity(2.)((2, 3)).numpy()
        array([[2., 0., 0.],
               [0., 2., 0.]], dtype=float32)
    """

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        _check_kwargs("Identity", kwargs)
        dt, dims = _assert_float_dtype(dtype, "Identity"), _shape(shape)
        if len(dims) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices. "
                             f"Received: shape={dims} of rank {len(dims)}.")
        return Tensor((self.gain * np.eye(*dims)).astype(dt._np))

    def get_config(self) -> dict:
        return {"gain": self.gain}


# Keras 2's lower-case aliases are the classes themselves.
zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform

_CLASSES = (Zeros, Ones, Constant, RandomUniform, RandomNormal, TruncatedNormal, VarianceScaling,
            GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform,
            Orthogonal, Identity)
_BY_NAME: dict[str, type] = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_uniform": RandomUniform, "uniform": RandomUniform,
    "random_normal": RandomNormal, "normal": RandomNormal, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
    "identity": Identity,
})


def serialize(initializer: Any) -> Any:
    """An initializer's class and config, as tf_keras 2.21 writes them (what layers'
    `get_config` holds). A plain function, which has no config, is returned as itself.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.serialize(tf.keras.initializers.HeNormal(seed=1))
        {'module': 'keras.initializers', 'class_name': 'HeNormal', 'config': {'seed': 1}, 'registered_name': None}
    """
    if initializer is None or not isinstance(initializer, Initializer):
        return initializer
    if type(initializer) is ConstantInitializer:  # TensorFlow's class, as tf_keras names it
        return {"module": "tensorflow.python.ops.init_ops_v2", "class_name": "Constant",
                "config": initializer.get_config(), "registered_name": "Constant"}
    return {"module": "keras.initializers", "class_name": type(initializer).__name__,
            "config": initializer.get_config(), "registered_name": None}


def deserialize(config: Any, custom_objects: dict | None = None) -> Initializer:
    """An initializer from a name or a ``{"class_name", "config"}`` dict.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.deserialize({"class_name": "Constant", "config": {"value": 2}})
        Constant(value=2)
    """
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret initializer config: {config!r}.")
    name = config["class_name"]
    cls = with_custom(custom_objects).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Unknown initializer: {name!r}. Known: {sorted(_BY_NAME)}.")
    return cls.from_config(config.get("config") or {}) if hasattr(cls, "from_config") \
        else cls(**(config.get("config") or {}))


def get(identifier: Any) -> Any:
    """An initializer from a name (``"he_normal"``, ``"HeNormal"``), a config dict, a
    class, an instance or a callable; None gives None (as Keras).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.initializers.get("he_uniform")
        HeUniform(seed=None)
    """
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier() if isinstance(identifier, type) else identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}.")
