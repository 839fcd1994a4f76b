"""Keras attention layers: `Attention` (Luong-style, dot-product scores), `AdditiveAttention`
(Bahdanau-style) and `MultiHeadAttention`, whose projections are `EinsumDense` layers
(einsum_dense.py), with tf_keras 2.21's arguments, weights, configs and masks.

Each is its ops composed (einsum, matmul, softmax, ...): their derivatives are the ops'
own. Masks are tf_keras's: a mask entry that is False adds a large negative number
(-1e9; a float16 layer's is smaller, to stay finite) to the scores before the softmax,
so a masked position gets weight 0 unless a whole row is masked. A layer reads its
sizes from its inputs' shapes, and builds its causal mask from sizes, so a traced call
with None dimensions gives the eager call's values at every size.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..errors import InvalidArgumentError
from ..module import name_scope
from ..ops.convert import as_tensor
from ..tensor import Tensor, TensorBase, TensorShape
from . import initializers
from .base_layer import Layer
from .core_layers import Dropout
from .common import unique_name
from .einsum_dense import WEIGHT_OPTIONS, EinsumDense, attention_equations, projection_equation
from .masks import get_mask
from .penalties import weight_options, weight_options_config

__all__ = ["Attention", "AdditiveAttention", "MultiHeadAttention", "EinsumDense"]

# ---------------------------------------------------------------- helpers
def _shape(x: Tensor) -> tuple:
    return np.shape(x._value)


def _rate(value: Any, who: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
            or not 0 <= value <= 1:
        raise ValueError(f"{who}: `dropout` must be a float between 0 and 1; received "
                         f"{value!r}.")
    return value


def _broadcasts(a: tuple, b: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _and(a: Tensor | None, b: Tensor | None, who: str) -> Tensor | None:
    """a & b of two bool masks (either may be None), or an error naming their shapes."""
    if a is None or b is None:
        return b if a is None else a
    if _broadcasts(_shape(a), _shape(b)) is None:
        raise InvalidArgumentError(f"{who}: masks of shapes {_shape(a)} and {_shape(b)} do not "
                                   f"broadcast together.")
    return ops.elementwise.logical_and(a, b)


def _lower_triangle(rows: Tensor, cols: Tensor) -> Tensor:
    """[rows, cols] bool, True where the column is at most the row, for sizes held by 1-D
    tensors (of tf.shape): a size-generic trace reads them when it runs."""
    ones = ops.creation.ones(ops.shape.concat([rows, cols], 0), dtype="int32")
    return ops.elementwise.greater_equal(ops.reduction.cumsum(ones, axis=0),
                                         ops.reduction.cumsum(ones, axis=1))


def _large_negative(dtype: Any, attention: bool) -> float:
    """What a masked score becomes: -1e9, or, in float16, a number it holds (tf_keras's
    dense attention subtracts float16's largest; its softmax layer adds half its lowest)."""
    if _dt.as_dtype(dtype) == _dt.float16:
        return -65504.0 if attention else -32752.0
    return -1e9


def _dropout(x: Tensor, rate: float) -> Tensor:
    """tf.nn.dropout's form: keep each entry with probability 1 - rate, scale the kept."""
    if rate >= 1:
        return x * 0.0
    u = ops.random.uniform(_shape(x), dtype=x.dtype)
    keep = ops.elementwise.cast(ops.elementwise.greater_equal(u, rate), x.dtype)
    return x * (1.0 / (1.0 - rate)) * keep


def _check_float(who: str, **tensors: Tensor) -> None:
    for arg, t in tensors.items():
        if _dt.kind(t._value.dtype) != "f":
            raise InvalidArgumentError(f"{who}: `{arg}` must be floating; received dtype "
                                       f"{t.dtype.name}. Cast it first, e.g. tf.cast(x, "
                                       f"tf.float32).")


# ---------------------------------------------------------------- dense attention
class _BaseDenseAttention(Layer):
    """What Attention and AdditiveAttention share: inputs ``[query, value]`` or ``[query,
    value, key]``, masks ``[query_mask, value_mask]``, the causal mask, the masked softmax
    of the scores, dropout on them while training, and their weighted sum of the values.
    Subclasses compute the scores (`_calculate_scores`)."""

    def __init__(self, dropout: float = 0.0, **kwargs: Any) -> None:
        causal = kwargs.pop("causal", None)
        if causal is not None:
            warnings.warn("`causal` argument is deprecated. Please use `use_causal_mask` in "
                          "call() method to specify causal masking.", stacklevel=2)
        super().__init__(**kwargs)
        self.dropout = _rate(dropout, type(self).__name__)
        self.causal = bool(causal)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        self._validate_shapes(input_shape)
        super().build(input_shape)

    def _validate_shapes(self, input_shape: Any) -> None:
        if isinstance(input_shape, list) and \
                not all(isinstance(s, (list, tuple)) for s in input_shape):
            input_shape = TensorShape(input_shape)  # one shape, written as a list
        self._validate_call_args(input_shape, None)

    def _validate_call_args(self, inputs: Any, mask: Any) -> None:
        name = type(self).__name__
        if not isinstance(inputs, list):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely [query, "
                             f"value] or [query, value, key]. Received: {inputs}.")
        if len(inputs) < 2 or len(inputs) > 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None and not (isinstance(mask, list) and not mask):
            if not isinstance(mask, list):
                raise ValueError(f"{name} layer mask must be a list, namely [query_mask, "
                                 f"value_mask]. Received: {mask}.")
            if len(mask) < 2 or len(mask) > len(inputs):
                raise ValueError(f"{name} layer mask must be a list of length 2, namely "
                                 f"[query_mask, value_mask]. Received length: {len(mask)}.")

    def _check(self, q: Tensor, v: Tensor, k: Tensor) -> None:
        who = f"{type(self).__name__} '{self.name}'"
        _check_float(who, query=q, value=v, key=k)
        sq, sv, sk = _shape(q), _shape(v), _shape(k)
        if min(len(sq), len(sv), len(sk)) < 2:
            raise InvalidArgumentError(f"{who}: query, value and key need rank >= 2 ([batch, "
                                       f"steps, dim]); received shapes {sq}, {sv}, {sk}.")
        if sq[-1] != sk[-1]:
            raise InvalidArgumentError(f"{who}: the query's last dimension ({sq[-1]}) must "
                                       f"equal the key's ({sk[-1]}); query shape {sq}, key "
                                       f"shape {sk}.")
        if sk[-2] != sv[-2]:
            raise InvalidArgumentError(f"{who}: key and value must have as many steps (axis "
                                       f"-2); key shape {sk}, value shape {sv}.")
        batch = _broadcasts(sq[:-2], sk[:-2])
        if batch is None or _broadcasts(batch, sv[:-2]) is None:
            raise InvalidArgumentError(f"{who}: the batch dimensions of query {sq}, value {sv} "
                                       f"and key {sk} do not broadcast together.")

    def _calculate_scores(self, query: Tensor, key: Tensor) -> Tensor:
        raise NotImplementedError

    def _apply_scores(self, scores: Tensor, value: Tensor, scores_mask: Tensor | None = None,
                      training: Any = None) -> tuple[Tensor, Tensor]:
        """(softmax(masked scores) @ value, the softmax, after dropout while training)."""
        if scores_mask is not None:
            padding = ops.elementwise.cast(ops.elementwise.logical_not(scores_mask), scores.dtype)
            scores = scores + _large_negative(scores.dtype, True) * padding
        weights = ops.nn.softmax(scores)
        if training and self.dropout > 0:
            weights = _dropout(weights, self.dropout)
        return ops.linalg.matmul(weights, value), weights

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             return_attention_scores: bool = False, use_causal_mask: bool = False) -> Any:
        """The attention of each query over the values: [batch, Tq, dim] (and the scores
        [batch, Tq, Tv] after masking and softmax, with `return_attention_scores`)."""
        self._validate_call_args(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        self._check(q, v, k)
        who = f"{type(self).__name__} '{self.name}'"
        q_mask = as_tensor(mask[0], who, "query_mask") if mask and mask[0] is not None else None
        v_mask = as_tensor(mask[1], who, "value_mask") if mask and mask[1] is not None else None
        scores = self._calculate_scores(query=q, key=k)
        if v_mask is not None:
            if v_mask.dtype != _dt.bool:
                raise InvalidArgumentError(f"{who}: the value mask must be bool; received "
                                           f"dtype {v_mask.dtype.name}.")
            v_mask = ops.shape.expand_dims(v_mask, -2)
            if _broadcasts(_shape(v_mask), _shape(scores)) is None:
                raise InvalidArgumentError(f"{who}: a value mask of shape "
                                           f"{_shape(v_mask)[:-2] + _shape(v_mask)[-1:]} does "
                                           f"not fit the scores {_shape(scores)} "
                                           f"([batch, Tq, Tv]); it must be [batch, Tv].")
        causal = None
        if self.causal or use_causal_mask:
            sizes = ops.creation.shape(scores)
            causal = _lower_triangle(sizes[-2:-1], sizes[-1:])
        result, weights = self._apply_scores(scores, v, _and(v_mask, causal, who), training)
        if q_mask is not None:
            q_mask = ops.shape.expand_dims(q_mask, -1)
            if _broadcasts(_shape(q_mask), _shape(result)) != _shape(result):
                raise InvalidArgumentError(f"{who}: a query mask of shape {_shape(q_mask)[:-1]}"
                                           f" does not fit the output {_shape(result)}; it "
                                           f"must be [batch, Tq].")
            result = result * ops.elementwise.cast(q_mask, result.dtype)
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The query's mask (None without masks)."""
        self._validate_call_args(inputs, mask)
        if mask and mask[0] is not None:
            return as_tensor(mask[0], type(self).__name__, "query_mask")
        return None

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The query's shape, with the value's last dimension."""
        query, value = TensorShape(input_shape[0]), TensorShape(input_shape[1])
        return TensorShape(tuple(query[:-1]) + tuple(value[-1:]))

    def get_config(self) -> dict:
        return dict(super().get_config(), dropout=self.dropout)


class Attention(_BaseDenseAttention):
    """Dot-product (Luong-style) attention: ``softmax(query @ key^T) @ value`` over
    inputs ``[query, value]`` or ``[query, value, key]`` (key defaults to value).

    `use_scale` multiplies the scores by a trained scalar; ``score_mode="concat"`` scores
    with ``sum(tanh(query + key))`` instead. Call with ``mask=[query_mask, value_mask]``
    (or inputs that carry masks), ``use_causal_mask=True`` to keep each query from later
    steps, and ``return_attention_scores=True`` for the attention distribution too.

    Example:
        >>> import tapeflow as tf
        >>> query = tf.constant([[[1., 0.]]])
        >>> value = tf.constant([[[1., 0.], [0., 1.]]])
        >>> out, scores = tf.keras.layers.Attention()([query, value],
        ...                                           return_attention_scores=True)
        >>> scores.numpy().round(4)
        array([[[0.7311, 0.2689]]], dtype=float32)
        >>> out.shape
        TensorShape([1, 1, 2])
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.score_mode = score_mode
        if score_mode not in ("dot", "concat"):
            raise ValueError(f'Received: score_mode={score_mode}. Acceptable values are: '
                             f'["dot", "concat"]')
        self.scale = None
        self.concat_score_weight = None

    def build(self, input_shape: Any) -> None:
        """Create `scale` (with `use_scale`) and `concat_score_weight` (in "concat" mode),
        both scalars initialized to 1."""
        self._validate_shapes(input_shape)
        if self.use_scale:
            self.scale = self.add_weight("scale", (), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (),
                                                       initializer="ones")
        super().build(input_shape)

    def _calculate_scores(self, query: Tensor, key: Tensor) -> Tensor:
        """[batch, Tq, Tv] scores of each query against each key."""
        if self.score_mode == "dot":
            scores = ops.linalg.matmul(query, key, transpose_b=True)
            return scores if self.scale is None else scores * self.scale
        pairs = ops.shape.expand_dims(query, -2) + ops.shape.expand_dims(key, -3)
        if self.scale is not None:
            pairs = self.scale * pairs
        return self.concat_score_weight * ops.reduction.reduce_sum(
            ops.transcendental.tanh(pairs), axis=-1)

    def get_config(self) -> dict:
        return dict(super().get_config(), use_scale=self.use_scale, score_mode=self.score_mode)


class AdditiveAttention(_BaseDenseAttention):
    """Additive (Bahdanau-style) attention: scores ``sum(scale * tanh(query + key))`` over
    the feature axis, then ``softmax(scores) @ value``, over inputs ``[query, value]`` or
    ``[query, value, key]``; `scale` is a trained vector (with `use_scale`, the default).
    Masks, the causal mask and the returned scores are Attention's.

    Example:
        >>> import tapeflow as tf
        >>> layer = tf.keras.layers.AdditiveAttention(use_scale=False)
        >>> out = layer([tf.ones([2, 3, 4]), tf.ones([2, 5, 4])])
        >>> out.shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, use_scale: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.scale = None

    def build(self, input_shape: Any) -> None:
        """Create `scale` [value's last dimension] (with `use_scale`), Glorot-uniform."""
        self._validate_shapes(input_shape)
        if self.use_scale:
            dim = TensorShape(input_shape[1])[-1] if len(input_shape[1]) else None
            if dim is None:
                raise ValueError(f"AdditiveAttention: the value's last dimension must be "
                                 f"known to build `scale`; received input shapes "
                                 f"{input_shape}.")
            self.scale = self.add_weight("scale", (int(dim),), initializer="glorot_uniform")
        super().build(input_shape)

    def _check(self, q: Tensor, v: Tensor, k: Tensor) -> None:
        super()._check(q, v, k)
        if self.scale is not None and _shape(k)[-1] != self.scale.shape[0]:
            raise InvalidArgumentError(
                f"AdditiveAttention '{self.name}': `scale` has {self.scale.shape[0]} entries "
                f"(the value's last dimension when it was built), but query and key have "
                f"{_shape(k)[-1]} features; received key shape {_shape(k)}.")

    def _calculate_scores(self, query: Tensor, key: Tensor) -> Tensor:
        """[batch, Tq, Tv] scores: ``sum(scale * tanh(query + key), -1)``."""
        pairs = ops.transcendental.tanh(ops.shape.expand_dims(query, -2)
                                        + ops.shape.expand_dims(key, -3))
        if self.scale is not None:
            pairs = self.scale * pairs
        return ops.reduction.reduce_sum(pairs, axis=-1)

    def get_config(self) -> dict:
        return dict(super().get_config(), use_scale=self.use_scale)


# ---------------------------------------------------------------- multi-head attention
def _signature_shape(x: Any) -> TensorShape:
    """A tensor's shape (a KerasTensor's with its unknown sizes), or a shape itself."""
    if isinstance(x, TensorBase):
        return TensorShape(_shape(x))
    if hasattr(x, "shape"):
        return TensorShape(x.shape)
    is_shape = all(d is None or isinstance(d, (int, np.integer)) for d in x)
    return TensorShape(x if is_shape else np.shape(x))


class _MaskedSoftmax(Layer):
    """tf_keras's Softmax layer as MultiHeadAttention uses it: over one or several axes,
    a mask adding a large negative number where it is 0 (with `robust_masking`, the
    masked entries set to it)."""

    def __init__(self, axis: tuple, robust_masking: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis, self.robust_masking = tuple(axis), bool(robust_masking)

    def call(self, inputs: Tensor, mask: Any = None) -> Tensor:
        if mask is not None:
            negative = _large_negative(inputs.dtype, False)
            if self.robust_masking:
                if mask.dtype != _dt.bool:
                    mask = ops.elementwise.greater(mask, ops.elementwise.cast(0.5, mask.dtype))
                inputs = ops.elementwise.where(mask, inputs, negative)
            else:
                inputs = inputs + (1.0 - ops.elementwise.cast(mask, inputs.dtype)) * negative
        if len(self.axis) == 1:
            return ops.nn.softmax(inputs, axis=self.axis[0])
        return ops.transcendental.exp(
            inputs - ops.reduction.reduce_logsumexp(inputs, axis=list(self.axis), keepdims=True))

    def get_config(self) -> dict:
        return dict(super().get_config(), axis=self.axis, robust_masking=self.robust_masking)


_CALL_ARGS = ("value", "key", "attention_mask", "return_attention_scores", "training",
              "use_causal_mask")


def _positive(value: Any, arg: str, optional: bool = False) -> Any:
    if optional and not value:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"MultiHeadAttention: `{arg}` must be a positive integer; received "
                         f"{value!r}.")
    return int(value)


class MultiHeadAttention(Layer):
    """Multi-head attention ("Attention is all you need"): `query`, `key` and `value` are
    projected to `num_heads` heads (query and key of `key_dim` each, value of
    `value_dim`, by default `key_dim`), each query attends over the keys with
    ``softmax(q k^T / sqrt(key_dim))``, and the heads' weighted values are projected back
    to the query's last dimension (or `output_shape`).

    Call ``layer(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=None, use_causal_mask=False)``;
    `attention_mask` ([batch, T, S], True where a query may attend) combines with the
    masks query, value and key carry and the causal mask. `attention_axes` are the axes
    attended over (by default all but the batch and the features). The projections are
    the sublayers `query`, `key`, `value` and `attention_output` (EinsumDense), with
    tf_keras's weights, so ``set_weights`` takes a tf_keras layer's ``get_weights()``.

    Example:
        >>> import tapeflow as tf
        >>> layer = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
        >>> out, scores = layer(tf.ones([4, 8, 16]), tf.ones([4, 5, 16]),
        ...                     return_attention_scores=True)
        >>> out.shape, scores.shape
        (TensorShape([4, 8, 16]), TensorShape([4, 2, 8, 5]))
        >>> [tuple(w.shape) for w in layer.weights[::2]]
        [(16, 2, 3), (16, 2, 3), (16, 2, 3), (2, 3, 16)]
    """

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape: Any = None,
                 attention_axes: Any = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 softmax_robust_masking: bool = False, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        weight_options(self, kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
        self.supports_masking = True
        self._num_heads = _positive(num_heads, "num_heads")
        self._key_dim = _positive(key_dim, "key_dim")
        self._value_dim = _positive(value_dim, "value_dim", optional=True) or self._key_dim
        self._dropout = _rate(dropout, "MultiHeadAttention")
        self._use_bias = bool(use_bias)
        # not `_output_shape`: the base layer keeps the shape of its model's output there
        self._output_dims = output_shape
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._softmax_robust_masking = bool(softmax_robust_masking)
        if attention_axes is not None and not isinstance(attention_axes, (list, tuple)):
            attention_axes = (attention_axes,)
        self._attention_axes = attention_axes
        self._built_from_signature = False
        self._query_shape = self._key_shape = self._value_shape = None

    # -------------------------------------------------- building
    def _scope(self) -> Any:
        try:
            return name_scope(self.name)
        except ValueError:  # a name no scope accepts: the projections' weights go unscoped
            return contextlib.nullcontext()

    def _sublayer_kwargs(self) -> dict:
        def fresh(init: Any) -> Any:  # each projection draws its own initial values
            return type(init).from_config(init.get_config()) if hasattr(init, "get_config") \
                else init
        return {"kernel_initializer": fresh(self._kernel_initializer),
                "bias_initializer": fresh(self._bias_initializer), "dtype": self.dtype,
                "kernel_regularizer": self.kernel_regularizer,
                "bias_regularizer": self.bias_regularizer,
                "activity_regularizer": self.activity_regularizer,
                "kernel_constraint": self.kernel_constraint,
                "bias_constraint": self.bias_constraint}

    def _build_from_signature(self, query: Any, value: Any, key: Any = None) -> None:
        """Make the projections (and their weights) for inputs of these shapes (tensors or
        shapes), and the attention's equations for their rank."""
        q, v = _signature_shape(query), _signature_shape(value)
        k = v if key is None else _signature_shape(key)
        rank = len(q)
        if len(v) != rank or len(k) != rank:
            raise ValueError(f"MultiHeadAttention '{self.name}': query, value and key must "
                             f"have the same rank; received shapes {tuple(q)}, {tuple(v)}, "
                             f"{tuple(k)}.")
        axes = tuple(range(1, rank - 1)) if self._attention_axes is None \
            else tuple(self._attention_axes)
        if not axes or len(set(axes)) != len(axes) or any(
                isinstance(a, bool) or not isinstance(a, (int, np.integer))
                or not 0 <= a <= rank - 2 for a in axes):
            raise ValueError(f"MultiHeadAttention '{self.name}': `attention_axes` must name "
                             f"distinct axes of the query other than its last, in [0, "
                             f"{rank - 2}] (the default, all between the batch and the "
                             f"features, needs rank >= 3); received attention_axes="
                             f"{self._attention_axes} for query shape {tuple(q)}.")
        self._query_shape, self._value_shape, self._key_shape = q, v, k
        self._built_from_signature = True
        heads = [self._num_heads]
        with self._scope():
            self._query_dense = self._projection("query", q, heads + [self._key_dim])
            self._key_dense = self._projection("key", k, heads + [self._key_dim])
            self._value_dense = self._projection("value", v, heads + [self._value_dim])
            self._build_attention(rank + 1, axes)
            self._output_dense = self._make_output_dense(
                rank - 1, self._sublayer_kwargs(), "attention_output")
            self._output_dense._maybe_build(
                TensorShape(tuple(q[:-1]) + (self._num_heads, self._value_dim)))

    def _projection(self, name: str, shape: TensorShape, dims: list) -> EinsumDense:
        equation, bias_axes = projection_equation(len(shape) - 1, 1, 2)
        layer = EinsumDense(equation, output_shape=[None] * (len(shape) - 2) + dims,
                            bias_axes=bias_axes if self._use_bias else None, name=name,
                            **self._sublayer_kwargs())
        layer._maybe_build(shape)
        return layer

    def _make_output_dense(self, free_dims: int, common_kwargs: dict,
                           name: str | None = None) -> EinsumDense:
        """The projection of the heads' values to the output."""
        if self._output_dims:
            dims = list(self._output_dims) if isinstance(self._output_dims, (list, tuple)) \
                else [self._output_dims]
        else:
            dims = [self._query_shape[-1]]
        equation, bias_axes = projection_equation(free_dims, 2, len(dims))
        return EinsumDense(equation, output_shape=[None] * (free_dims - 1) + dims,
                           bias_axes=bias_axes if self._use_bias else None, name=name,
                           **common_kwargs)

    def _build_attention(self, rank: int, axes: tuple | None = None) -> None:
        """The equations, softmax and dropout of the attention over projected tensors of
        `rank`."""
        if axes is None:
            axes = tuple(range(1, rank - 2)) if self._attention_axes is None \
                else tuple(self._attention_axes)
        self._attention_axes = axes
        self._dot_product_equation, self._combine_equation, scores_rank = \
            attention_equations(rank, axes)
        self._softmax = _MaskedSoftmax(tuple(range(scores_rank - len(axes), scores_rank)),
                                       robust_masking=self._softmax_robust_masking,
                                       name=unique_name("softmax"), dtype=self.dtype)
        self._dropout_layer = Dropout(rate=self._dropout, dtype=self.dtype)

    # -------------------------------------------------- calling
    def __call__(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        # The call's arguments after the query go by name, as tf_keras records them in a
        # functional model's config; the projections are made from the first call's shapes,
        # unknown sizes (a KerasTensor's) included.
        if len(args) > len(_CALL_ARGS):
            raise TypeError(f"MultiHeadAttention.call() takes at most {len(_CALL_ARGS) + 1} "
                            f"positional arguments; received {len(args) + 1}.")
        for name, value in zip(_CALL_ARGS, args):
            if name in kwargs:
                raise TypeError(f"MultiHeadAttention.call() got multiple values for argument "
                                f"'{name}'.")
            kwargs[name] = value
        if "value" not in kwargs:
            raise TypeError("MultiHeadAttention.call() missing 1 required positional argument: "
                            "'value'")
        if not self._built_from_signature:
            self._build_from_signature(query, kwargs["value"], kwargs.get("key"))
        return super().__call__(query, **kwargs)

    def call(self, query: Tensor, value: Any, key: Any = None, attention_mask: Any = None,
             return_attention_scores: bool = False, training: Any = None,
             use_causal_mask: bool = False) -> Any:
        """The attention output (query's shape, with `output_shape` for its last axes), and
        the scores (batch, heads, T, S) with `return_attention_scores`."""
        if not self._built_from_signature:
            self._build_from_signature(query, value, key)
        who = f"MultiHeadAttention '{self.name}'"
        value = as_tensor(value, who, "value")
        key = value if key is None else as_tensor(key, who, "key")
        self._check_shapes(query, value, key)
        attention_mask = self._compute_attention_mask(
            query, value, key=key, attention_mask=attention_mask,
            use_causal_mask=use_causal_mask)
        query = self._query_dense(query)
        key = self._key_dense(key)
        value = self._value_dense(value)
        output, scores = self._compute_attention(query, key, value, attention_mask, training)
        output = self._output_dense(output)
        if return_attention_scores:
            return output, scores
        return output

    def _check_shapes(self, query: Tensor, value: Tensor, key: Tensor) -> None:
        who = f"MultiHeadAttention '{self.name}'"
        sq, sv, sk = _shape(query), _shape(value), _shape(key)
        rank = len(self._query_shape)
        if not len(sq) == len(sv) == len(sk) == rank:
            raise InvalidArgumentError(f"{who}: query, value and key must have rank {rank}, as "
                                       f"when the layer was built; received shapes {sq}, "
                                       f"{sv}, {sk}.")
        if sv[:-1] != sk[:-1]:
            raise InvalidArgumentError(f"{who}: value and key must have the same shape but for "
                                       f"their last axis; received value {sv}, key {sk}.")
        for axis in range(rank - 1):
            if axis not in self._attention_axes and sq[axis] != sk[axis]:
                raise InvalidArgumentError(f"{who}: query and key must agree on axis {axis}, "
                                           f"which is not an attention axis "
                                           f"{self._attention_axes}; received query {sq}, "
                                           f"key {sk}.")

    def _compute_attention_mask(self, query: Tensor, value: Tensor, key: Tensor | None = None,
                                attention_mask: Any = None,
                                use_causal_mask: bool = False) -> Tensor | None:
        """`attention_mask` and the inputs' own masks, the query's [B, T, 1], the value's and
        key's [B, 1, S], and the causal mask [1, T, S], combined with `&` (tf_keras's)."""
        who = f"MultiHeadAttention '{self.name}'"
        auto = None
        for arg, x, axis in (("query", query, 2), ("value", value, 1), ("key", key, 1)):
            mask = None if x is None else get_mask(x)
            if mask is not None:
                mask = ops.elementwise.cast(as_tensor(mask, who, f"{arg}'s mask"), _dt.bool)
                if _shape(x)[:len(_shape(mask))] != _shape(mask):
                    raise InvalidArgumentError(f"{who}: the {arg}'s mask has shape "
                                               f"{_shape(mask)}; it must be the {arg}'s "
                                               f"leading dims, of its shape {_shape(x)}.")
                auto = _and(auto, ops.shape.expand_dims(mask, axis), who)
        if use_causal_mask:
            auto = _and(auto, self._compute_causal_mask(query, value), who)
        if attention_mask is not None:
            attention_mask = as_tensor(attention_mask, who, "attention_mask")
        if auto is None:
            return attention_mask
        if attention_mask is None:
            return auto
        return _and(ops.elementwise.cast(attention_mask, _dt.bool), auto, who)

    def _compute_causal_mask(self, query: Tensor, value: Tensor | None = None) -> Tensor:
        """[1, T, S] bool, True where the query step is at or after the value step."""
        rows = ops.creation.shape(query)[1:2]
        cols = rows if value is None else ops.creation.shape(value)[1:2]
        return ops.shape.expand_dims(_lower_triangle(rows, cols), 0)

    def _masked_softmax(self, attention_scores: Tensor, attention_mask: Any = None) -> Tensor:
        if attention_mask is not None:
            scores_shape, shape = _shape(attention_scores), _shape(attention_mask)
            axis = -len(self._attention_axes) * 2 - 1
            missing = len(scores_shape) - len(shape)
            fits = missing >= 0 and len(shape) >= -axis - 1
            if fits:
                for _ in range(missing):
                    attention_mask = ops.shape.expand_dims(attention_mask, axis)
                fits = _broadcasts(_shape(attention_mask), scores_shape) == scores_shape
            if not fits:
                raise InvalidArgumentError(
                    f"MultiHeadAttention '{self.name}': the attention mask of shape {shape} "
                    f"does not fit the scores of shape {scores_shape} (batch, heads, "
                    f"<query attention axes>, <key attention axes>); it must broadcast to "
                    f"them, e.g. [batch, T, S] for T query and S key steps.")
        return self._softmax(attention_scores, mask=attention_mask)

    def _compute_attention(self, query: Tensor, key: Tensor, value: Tensor,
                           attention_mask: Any = None, training: Any = None) -> tuple:
        """(the heads' attention outputs, the scores) of projected query [B, T, N, key_dim],
        key [B, S, N, key_dim] and value [B, S, N, value_dim]."""
        query = query * (1.0 / math.sqrt(float(self._key_dim)))
        scores = ops.einsum.einsum(self._dot_product_equation, key, query)
        scores = self._masked_softmax(scores, attention_mask)
        dropped = self._dropout_layer(scores, training=training)
        return ops.einsum.einsum(self._combine_equation, dropped, value), scores

    def compute_output_shape(self, query_shape: Any, value_shape: Any,
                             key_shape: Any = None) -> TensorShape:
        """The query's shape, its last axis replaced by `output_shape` if given."""
        query_shape, value_shape = TensorShape(query_shape), TensorShape(value_shape)
        key_shape = value_shape if key_shape is None else TensorShape(key_shape)
        if query_shape[-1] != value_shape[-1]:
            raise ValueError(f"The last dimension of `query_shape` and `value_shape` must be "
                             f"equal, but are {query_shape[-1]}, {value_shape[-1]}. Received: "
                             f"query_shape={query_shape}, value_shape={value_shape}")
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(f"All dimensions of `value` and `key`, except the last one, must "
                             f"be equal. Received {value_shape} and {key_shape}")
        if self._output_dims:
            dims = self._output_dims if isinstance(self._output_dims, (list, tuple)) \
                else [self._output_dims]
            return TensorShape(tuple(query_shape[:-1]) + tuple(dims))
        return query_shape

    # -------------------------------------------------- config
    def get_config(self) -> dict:
        def plain(shape: Any) -> Any:
            return None if shape is None else list(shape)
        return dict(super().get_config(), num_heads=self._num_heads, key_dim=self._key_dim,
                    value_dim=self._value_dim, dropout=self._dropout, use_bias=self._use_bias,
                    output_shape=self._output_dims, attention_axes=self._attention_axes,
                    kernel_initializer=initializers.serialize(self._kernel_initializer),
                    bias_initializer=initializers.serialize(self._bias_initializer),
                    **weight_options_config(self, *WEIGHT_OPTIONS),
                    query_shape=plain(self._query_shape),
                    key_shape=plain(self._key_shape), value_shape=plain(self._value_shape),
                    softmax_robust_masking=self._softmax_robust_masking)

    @classmethod
    def from_config(cls, config: dict) -> "MultiHeadAttention":
        """A layer from `get_config`'s dict, with its weights made for the shapes it holds
        (fresh values: copy them with `set_weights`)."""
        config = dict(config)
        shapes = [config.pop(k, None) for k in ("query_shape", "key_shape", "value_shape")]
        layer = super().from_config(config)
        if all(s is not None for s in shapes):
            query, key, value = (TensorShape(s) for s in shapes)
            layer._build_from_signature(query, value, key)
        return layer
