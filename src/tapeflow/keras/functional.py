"""The Keras functional API: `keras.Input`, symbolic `KerasTensor`s, and functional models
(`keras.Model(inputs, outputs)`, the class `Functional`).

Calling a layer (or a model) on KerasTensors computes nothing: it records a `Node`
(the layer, the call's arguments, its symbolic outputs) on the layer. A functional model
walks those nodes back from its outputs to its inputs once, at construction, and each
call replays them in topological order on real tensors. Replaying is plain Python over
the layers' calls, so tapes, `tf.function` and vmap see ordinary ops.

NOTE(symbolic-shapes): a node's output shapes and dtypes come from running the layer on
small zero tensors (no recorder sees it), not from `compute_output_shape`. Running the
layer's own `call` is the one source that cannot disagree with the real computation: it
gives dtypes (an Embedding of int inputs is float, an argmax int), nested outputs
(LSTM's `return_state` list) and shapes for layers that never wrote a
`compute_output_shape` (custom layers, Lambda). Only the shapes' unknown dims need more: a
layer's own `compute_output_shape` (the built-in layers have one) says which output dims
are unknown; without one, the layer is probed a second time with other sizes for the
unknown input dims, and output dims that differ are unknown. Where the probe fails (a
stack of convolutions on unknown spatial sizes the probe is too small for), the shapes
of `compute_output_shape` and the layer's dtype are used.
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from .. import nest
from ..core import no_recorders
from ..ops.convert import as_tensor
from ..tensor import Tensor, TensorBase, TensorShape
from . import base_layer
from .base_layer import _LAYER_CLASSES, _NAME_UIDS, Layer, _call_accepts, _unique_name
from .core_layers import _function_config, _function_from_config
from .functional_config import functional_config, functional_from_config
from .masks import get_mask, set_mask
from .training import Model

__all__ = ["Input", "InputLayer", "KerasTensor", "Functional"]


_LAMBDA_HINT = ("wrap the computation in a layer, e.g. "
                "tf.keras.layers.Lambda(lambda t: ...)(x), or compute it in a Layer "
                "subclass's call")


class KerasTensor:
    """A symbolic tensor of the functional API: a shape (batch dim None), a dtype and a
    name, and the layer call that produced it. It holds no value: pass it to layers,
    then to ``keras.Model(inputs, outputs)``; ``+ - * / ** @``, unary minus and indexing
    record a small op layer, and any other tf op must be wrapped in a `Lambda` layer.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(4,), name="features")
        >>> x.shape, x.dtype, x.name
        (TensorShape([None, 4]), tf.float32, 'features')
        >>> tf.keras.layers.Dense(2)(x).shape
        TensorShape([None, 2])
    """

    _keras_symbolic = True  # what base_layer looks for to route a call here
    __array_priority__ = 1000  # NumPy defers `array + x` to our operators

    def __init__(self, shape: Any, dtype: Any, name: str | None = None) -> None:
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name
        self._keras_history: tuple[Layer, int, int] | None = None

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def node(self) -> "Node | None":
        """The node (layer call) that produced this tensor."""
        if self._keras_history is None:
            return None
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __repr__(self) -> str:
        layer = self._keras_history[0].name if self._keras_history else None
        return (f"KerasTensor(type_spec=TensorSpec(shape={tuple(self.shape)}, "
                f"dtype={self.dtype!r}, name={self.name!r}), name={self.name!r}, "
                f"description=\"created by layer '{layer}'\")")

    # -------------------------------------------------- eager use is an error
    def _no_value(self, what: str) -> TypeError:
        return TypeError(
            f"{what} needs a value, but {self.name!r} is a symbolic KerasTensor (from "
            f"keras.Input or a layer called on one): it has a shape {tuple(self.shape)} and "
            f"dtype {self.dtype.name}, no value. Build the model with "
            f"keras.Model(inputs, outputs) and call it on real tensors; to apply a tf op to "
            f"a KerasTensor, {_LAMBDA_HINT}.")

    def numpy(self) -> np.ndarray:
        """Raises: a KerasTensor has no value."""
        raise self._no_value("numpy()")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        # tf ops convert their arguments through NumPy: this is where they fail
        raise self._no_value("Converting to a tensor")

    def __bool__(self) -> bool:
        raise self._no_value("bool()")

    def __float__(self) -> float:
        raise self._no_value("float()")

    def __int__(self) -> int:
        raise self._no_value("int()")

    def __index__(self) -> int:
        raise self._no_value("Using it as an index")

    def __iter__(self) -> Any:
        raise TypeError(f"A KerasTensor cannot be iterated ({self.name!r}, shape "
                        f"{tuple(self.shape)}); to split it, {_LAMBDA_HINT}.")

    def __len__(self) -> int:
        raise TypeError("len() of a KerasTensor is not defined (its batch dim is unknown); "
                        "use x.shape instead.")

    __hash__ = object.__hash__

    # -------------------------------------------------- operators record op layers
    def __getitem__(self, key: Any) -> "KerasTensor":
        return _op(lambda a: a[key], "__operators__.getitem", self)

    def __neg__(self) -> "KerasTensor":
        return _op(lambda a: -a, "math.negative", self)

    def __abs__(self) -> "KerasTensor":
        return _op(abs, "math.abs", self)


def _binary(symbol: str, name: str, fn: Callable[[Any, Any], Any]) -> tuple[Callable, Callable]:
    def forward(self: KerasTensor, other: Any) -> KerasTensor:
        return _op2(fn, name, self, other)

    def reverse(self: KerasTensor, other: Any) -> KerasTensor:
        return _op2(lambda a, b: fn(b, a), name, self, other)

    forward.__doc__ = f"``x {symbol} y``, recorded as an op layer."
    reverse.__doc__ = f"``y {symbol} x``, recorded as an op layer."
    return forward, reverse


for _sym, _name, _dunder, _fn in (
        ("+", "__operators__.add", "add", lambda a, b: a + b),
        ("-", "math.subtract", "sub", lambda a, b: a - b),
        ("*", "math.multiply", "mul", lambda a, b: a * b),
        ("/", "math.truediv", "truediv", lambda a, b: a / b),
        ("//", "math.floordiv", "floordiv", lambda a, b: a // b),
        ("%", "math.floormod", "mod", lambda a, b: a % b),
        ("**", "math.pow", "pow", lambda a, b: a ** b),
        ("@", "linalg.matmul", "matmul", lambda a, b: a @ b)):
    _f, _r = _binary(_sym, _name, _fn)
    setattr(KerasTensor, f"__{_dunder}__", _f)
    setattr(KerasTensor, f"__r{_dunder}__", _r)


class _OpLayer(Layer):
    """An operator applied to KerasTensors (tf_keras' TFOpLambda): no weights, no cast."""

    _preserve_input_structure_in_config = True  # called on a list, even of one tensor

    def __init__(self, fn: Callable, op_name: str, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name or _unique_name(f"tf.{op_name}"), **kwargs)
        self._autocast = False  # `x * 2` on float64 inputs stays float64, as the op would
        self.fn = fn
        self.op_name = op_name

    def call(self, inputs: Any) -> Any:
        return self.fn(*inputs)

    def get_config(self) -> dict:
        # the operator as a Lambda saves its function: tf_keras' TFOpLambda names a tf op,
        # and an operator's function here is a closure over it and its constant operand
        fn, fn_type, module = _function_config(self.fn)
        return dict(super().get_config(), function=fn, function_type=fn_type, module=module,
                    op_name=self.op_name)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "_OpLayer":
        config = dict(config)
        fn = _function_from_config(config, custom_objects, "function", "module",
                                   "function_type")
        config.pop("function")
        return cls(fn, **config)


_LAYER_CLASSES["_OpLayer"] = _OpLayer  # private, so not registered by its class statement


def _op(fn: Callable, op_name: str, x: KerasTensor) -> KerasTensor:
    return _OpLayer(fn, op_name)([x])


def _op2(fn: Callable, op_name: str, x: KerasTensor, other: Any) -> KerasTensor:
    if isinstance(other, KerasTensor):
        return _OpLayer(fn, op_name)([x, other])
    if isinstance(other, TensorBase) or isinstance(other, (int, float, complex, bool,
                                                           np.ndarray, np.generic)):
        return _OpLayer(lambda a: fn(a, other), op_name)([x])
    return NotImplemented


# ---------------------------------------------------------------- nodes
class Node:
    """One call of a layer on symbolic inputs: its arguments (KerasTensors among other
    values) and its outputs (a structure of KerasTensors)."""

    def __init__(self, layer: Layer, args: tuple, kwargs: dict, outputs: Any) -> None:
        self.layer = layer
        self.args, self.kwargs = args, kwargs
        self.keras_inputs = [v for v in nest.flatten((args, kwargs)) if isinstance(v, KerasTensor)]
        self.outputs = outputs
        self.flat_outputs = nest.flatten(outputs)
        self.is_input = False

    @property
    def parent_nodes(self) -> list["Node"]:
        return [kt.node for kt in self.keras_inputs]

    def __repr__(self) -> str:
        return f"<Node of layer {self.layer.name!r}: {len(self.keras_inputs)} input(s)>"


def _add_node(layer: Layer, args: tuple, kwargs: dict, outputs: Any) -> Node:
    node = Node(layer, args, kwargs, outputs)
    nodes = layer.__dict__.setdefault("_inbound_nodes", [])
    nodes.append(node)
    for i, kt in enumerate(node.flat_outputs):
        if isinstance(kt, KerasTensor):
            kt._keras_history = (layer, len(nodes) - 1, i)
            mask = getattr(kt, "_keras_mask", None)
            if isinstance(mask, KerasTensor):  # made by the same call: the same node
                mask._keras_history = (layer, len(nodes) - 1, i)
    return node


# ---------------------------------------------------------------- Input
class InputLayer(Layer):
    """The layer behind `keras.Input`: no weights; its output (`output`) is the
    placeholder. As the first layer of a `Sequential`, it gives the model its input shape
    (the model does not list it in `layers`, as tf_keras).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(3,), name="x")
        >>> type(x.node.layer).__name__, x.node.layer.name
        ('InputLayer', 'x')
        >>> model = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(3,)),
        ...                              tf.keras.layers.Dense(2)])
        >>> model.built, len(model.layers)
        (True, 1)
    """

    def __init__(self, input_shape: Any = None, batch_size: int | None = None,
                 dtype: Any = None, input_tensor: Any = None, sparse: bool | None = None,
                 name: str | None = None, ragged: bool | None = None, type_spec: Any = None,
                 **kwargs: Any) -> None:
        batch_shape = kwargs.pop("batch_input_shape", None)
        if batch_shape is None:
            batch_shape = kwargs.pop("batch_shape", None)
        kwargs.pop("optional", None)
        for arg, value in (("input_tensor", input_tensor), ("sparse", sparse),
                           ("ragged", ragged), ("type_spec", type_spec)):
            if value:
                raise NotImplementedError(f"InputLayer: `{arg}` is not supported by tapeflow.")
        if kwargs:
            raise TypeError(f"InputLayer: unexpected keyword argument(s) {sorted(kwargs)}.")
        if batch_shape is None:
            if input_shape is None:
                raise ValueError("InputLayer needs `input_shape` (without the batch dim) or "
                                 "`batch_input_shape`.")
            batch_shape = (batch_size,) + tuple(input_shape)
        if name is None:
            # as Keras: "input_1", "input_2", ... (one-based, unlike other layers)
            _NAME_UIDS["input"] += 1
            name = f"input_{_NAME_UIDS['input']}"
        super().__init__(name=name, dtype=dtype)
        self.built = True
        self._batch_input_shape = tuple(TensorShape(batch_shape))
        kt = KerasTensor(batch_shape, self.dtype, name=self.name)
        node = _add_node(self, (), {}, kt)
        node.is_input = True
        self.output = kt

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name, "optional": False}

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"InputLayer {self.name!r} is not called: use the KerasTensor that "
                        f"keras.Input returns.")

    def count_params(self) -> int:
        return 0


def Input(shape: Any = None, batch_size: int | None = None, name: str | None = None,
          dtype: Any = None, sparse: bool | None = None, tensor: Any = None,
          ragged: bool | None = None, type_spec: Any = None, **kwargs: Any) -> KerasTensor:
    """A symbolic input of a functional model: a `KerasTensor` of shape
    ``(batch_size, *shape)`` (batch dim None unless given) and `dtype` (float32 by
    default). Call layers on it, then make a model with ``keras.Model(inputs, outputs)``.
    `batch_shape=` (a keyword) gives the full shape instead.

    Example:
        >>> import tapeflow as tf
        >>> inputs = tf.keras.Input(shape=(4,), name="x")
        >>> outputs = tf.keras.layers.Dense(2, kernel_initializer="ones", name="d")(inputs)
        >>> model = tf.keras.Model(inputs, outputs)
        >>> model(tf.ones([3, 4])).numpy()
        array([[4., 4.],
               [4., 4.],
               [4., 4.]], dtype=float32)
    """
    batch_shape = kwargs.pop("batch_shape", None)
    if kwargs:
        raise TypeError(f"Input: unexpected keyword argument(s) {sorted(kwargs)}.")
    for arg, value in (("sparse", sparse), ("tensor", tensor), ("ragged", ragged),
                       ("type_spec", type_spec)):
        if value:
            raise NotImplementedError(f"Input: `{arg}` is not supported by tapeflow's "
                                      f"functional API.")
    if batch_shape is not None:
        if shape is not None or batch_size is not None:
            raise ValueError("Input: give either `shape` (with `batch_size`) or `batch_shape`, "
                             "not both.")
        full = batch_shape
    elif shape is None:
        raise ValueError("Please provide to Input a `shape` or a `batch_shape` argument. Note "
                         "that `shape` does not include the batch dimension.")
    else:
        if isinstance(shape, (int, np.integer)) or not isinstance(shape, (list, tuple)):
            raise TypeError(f"Input: `shape` must be a tuple of dims without the batch dim, "
                            f"e.g. shape=(4,) for vectors of 4 features; received {shape!r}.")
        full = (batch_size,) + tuple(shape)
    try:
        full = TensorShape(full)
    except (TypeError, ValueError):
        raise TypeError(f"Input: the shape must hold ints or None; received {full!r}.") from None
    if any(d is not None and d < 0 for d in full):
        raise ValueError(f"Input: dims must be >= 0 or None; received shape {tuple(full)}.")
    return InputLayer(batch_input_shape=full, dtype=dtype, name=name).output


# ---------------------------------------------------------------- calling on KerasTensors
def _is_symbolic(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_is_symbolic(v) for v in x)
    if isinstance(x, dict):
        return any(_is_symbolic(v) for v in x.values())
    return isinstance(x, KerasTensor)


def _symbolic_shapes(x: Any) -> Any:
    if isinstance(x, KerasTensor):
        return x.shape
    if isinstance(x, (list, tuple)):
        return type(x)(_symbolic_shapes(v) for v in x)
    if isinstance(x, dict):
        return {k: _symbolic_shapes(v) for k, v in x.items()}
    if isinstance(x, TensorBase):
        return TensorShape(np.shape(x._value))
    return x


# The two probe sizes of an unknown dim: the batch axis, and the others (large enough for
# a few valid convolutions and poolings, and far enough apart that a floor division
# does not make them equal).
_PROBE_SIZES = ((2, 3), (32, 64))


def _probe_value(kt: KerasTensor, which: int) -> Tensor:
    dims = [(_PROBE_SIZES[0] if i == 0 else _PROBE_SIZES[1])[which] if d is None else d
            for i, d in enumerate(kt.shape)]
    # a bool probe is True: as a mask, it keeps every step, as the data's probe is made of
    value = Tensor(np.ones(dims, bool) if kt.dtype == _dt.bool else np.zeros(dims, kt.dtype._np))
    mask = getattr(kt, "_keras_mask", None)
    if isinstance(mask, KerasTensor):
        set_mask(value, _probe_value(mask, which))
    return value


def _run_probe(layer: Layer, args: tuple, kwargs: dict, which: int) -> Any:
    args, kwargs = nest.map_structure(
        lambda v: _probe_value(v, which) if isinstance(v, KerasTensor) else v, (args, kwargs))
    if _call_accepts(layer.call)[0]:
        kwargs["training"] = False  # a probe must not move statistics or draw masks
    with no_recorders(), np.errstate(all="ignore"):
        return layer(*args, **kwargs)


def _declared_shapes(layer: Layer, inputs: Any) -> list[TensorShape] | None:
    """The flat output shapes the layer's own `compute_output_shape` gives for the symbolic
    input shapes, or None where it has no rule of its own or the rule fails."""
    if type(layer).compute_output_shape is Layer.compute_output_shape or \
            getattr(layer, "_output_shape_arg", 0) is None:
        return None  # the base rule (a Lambda's too) probes with unknown dims taken as 1
    try:
        shapes = layer.compute_output_shape(_symbolic_shapes(inputs))
    except Exception:  # noqa: BLE001 -- the probe decides; a failing rule says nothing
        return None
    if isinstance(shapes, (list, tuple)) and shapes and \
            all(isinstance(v, (list, tuple)) for v in shapes):
        return [TensorShape(v) for v in shapes]
    try:
        return [TensorShape(shapes)]
    except (TypeError, ValueError):
        return None


def call_symbolic(layer: Layer, inputs: Any, args: tuple, kwargs: dict) -> Any:
    """Record `layer(inputs, *args, **kwargs)` on KerasTensors as a node and return its
    symbolic outputs (NOTE(symbolic-shapes) for how their shapes are found)."""
    for v in nest.flatten((inputs, args, kwargs)):
        if isinstance(v, KerasTensor) and v._keras_history is None:
            raise ValueError(f"KerasTensor {v.name!r} was not made by keras.Input or a layer; "
                             f"use tf.keras.Input(shape=...) to make model inputs.")
    args = (inputs,) + tuple(args)
    if isinstance(inputs, KerasTensor) and layer.input_spec is not None:
        base_layer._check_input(layer, layer.input_spec, inputs.shape)
    if not layer.built:
        with layer._scope() if isinstance(layer, Model) else contextlib.nullcontext():
            layer._maybe_build(_symbolic_shapes(inputs))
    declared = _declared_shapes(layer, inputs)
    unknown = any(d is None for v in nest.flatten((args, kwargs)) if isinstance(v, KerasTensor)
                  for d in v.shape)
    probed = None
    try:
        first = _run_probe(layer, args, kwargs, 0)
    except Exception as e:  # noqa: BLE001 -- re-raised unless compute_output_shape answers
        if declared is None:
            e.add_note(f"(while calling layer {layer.name!r} on symbolic inputs with shapes "
                       f"{_symbolic_shapes(inputs)}: the layer is run on zeros of those "
                       f"shapes, unknown dims taken as {_PROBE_SIZES[0][0]} (batch) or "
                       f"{_PROBE_SIZES[1][0]})")
            raise
        outputs = [KerasTensor(shape, layer.dtype) for shape in declared]
        if len(outputs) == 1:
            outputs = outputs[0]
    else:
        leaves = [t for t in nest.flatten(first) if isinstance(t, TensorBase)]
        if declared is not None and len(declared) == len(leaves) and all(
                len(d) == t.ndim for d, t in zip(declared, leaves, strict=True)):
            shapes = iter(declared)  # the layer's rule knows its unknown dims exactly
        else:
            second = _run_probe(layer, args, kwargs, 1) if unknown else first
            shapes = iter([
                TensorShape(x if x == y else None for x, y in zip(
                    np.shape(a._value), np.shape(b._value), strict=True))
                if np.ndim(a._value) == np.ndim(b._value) else TensorShape([None] * a.ndim)
                for a, b in zip(leaves, [t for t in nest.flatten(second)
                                         if isinstance(t, TensorBase)], strict=True)])
        outputs = nest.map_structure(
            lambda a: KerasTensor(next(shapes), a.dtype) if isinstance(a, TensorBase) else a,
            first)
        probed = first
    flat = nest.flatten(outputs)
    for i, kt in enumerate(flat):
        if isinstance(kt, KerasTensor):
            kt.name = layer.name if len(flat) == 1 else f"{layer.name}/{i}"
    if probed is not None:
        _symbolic_masks(flat, nest.flatten(probed))
    _add_node(layer, args, dict(kwargs), outputs)
    return outputs


def _symbolic_masks(flat: list, probed: list) -> None:
    """Give each symbolic output whose probe came out with a mask a KerasTensor for that
    mask (tf_keras' `_keras_mask` of a KerasTensor): its dims are the output's leading
    dims where the probe's mask matches them, else the probe's with the batch dim None."""
    for kt, value in zip(flat, probed, strict=True):
        mask = get_mask(value) if isinstance(value, TensorBase) else None
        if not isinstance(kt, KerasTensor) or not isinstance(mask, TensorBase):
            continue
        mshape = np.shape(mask._value)
        if len(mshape) <= value.ndim and mshape == np.shape(value._value)[:len(mshape)]:
            shape = TensorShape(tuple(kt.shape)[:len(mshape)])
        else:
            shape = TensorShape((None,) + tuple(mshape[1:]) if mshape else ())
        kt._keras_mask = KerasTensor(shape, mask.dtype, name=f"{kt.name}/mask")


base_layer._SYMBOLIC[0] = (_is_symbolic, call_symbolic)


# ---------------------------------------------------------------- the graph
def _map_graph(inputs: list[KerasTensor], outputs: list[Any]) -> tuple[list[Node], dict, list]:
    """Keras' _map_graph_network: the nodes from `inputs` to `outputs` in an order that
    computes each before its users, their depths, and the layers in Keras' order
    (deepest first; ties in the order a walk back from the outputs meets them)."""
    input_ids = {id(x) for x in inputs}
    finished: set[int] = set()
    in_progress: set[int] = set()
    order: list[Node] = []
    layer_index: dict[int, int] = {}
    layers_by_id: dict[int, Layer] = {}

    def visit(kt: KerasTensor) -> None:
        node = kt.node
        if id(node) in finished:
            return
        if id(node) in in_progress:
            raise ValueError(f'Tensor {kt} from layer "{node.layer.name}" is part of a cycle.')
        layer_index.setdefault(id(node.layer), len(layer_index))
        layers_by_id[id(node.layer)] = node.layer
        in_progress.add(id(node))
        if not node.is_input and id(kt) not in input_ids:
            for parent in node.keras_inputs:
                if id(parent) not in input_ids:
                    visit(parent)
                else:
                    visit_input(parent)
        in_progress.discard(id(node))
        finished.add(id(node))
        order.append(node)

    def visit_input(kt: KerasTensor) -> None:
        layer_index.setdefault(id(kt.node.layer), len(layer_index))
        layers_by_id[id(kt.node.layer)] = kt.node.layer
        if id(kt.node) not in finished:
            finished.add(id(kt.node))
            order.append(kt.node)

    for out in outputs:
        if id(out) in input_ids:
            visit_input(out)
        else:
            visit(out)
    for x in inputs:
        visit_input(x)

    node_depth: dict[int, int] = {}
    layer_depth: dict[int, int] = {}
    by_id = {id(n): n for n in order}
    for node in reversed(order):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        node_depth[id(node)] = depth
        if not node.is_input:
            for kt in node.keras_inputs:
                p = id(kt.node)
                node_depth[p] = max(depth + 1, node_depth.get(p, 0))
    for x in inputs:  # an input no output depends on: listed first, as Keras
        if id(x.node.layer) not in layer_depth:
            layer_depth[id(x.node.layer)], layer_index[id(x.node.layer)] = 0, -1
            node_depth[id(x.node)] = 0

    computable = set(input_ids)
    done: list[str] = []
    for node in order:
        if node.is_input or all(id(o) in input_ids for o in node.flat_outputs
                                if isinstance(o, KerasTensor)):
            continue
        for kt in node.keras_inputs:
            if id(kt) not in computable:
                raise ValueError(
                    f"Graph disconnected: cannot obtain value for tensor {kt} at layer "
                    f'"{node.layer.name}". The following previous layers were accessed '
                    f"without issue: {done}. Pass every keras.Input the outputs depend on "
                    f"in `inputs=`.")
        computable.update(id(o) for o in node.flat_outputs)
        computable.update(id(m) for m in _output_masks(node))
        done.append(node.layer.name)
    layers = sorted(layers_by_id.values(),
                    key=lambda l: (-layer_depth[id(l)], layer_index[id(l)]))
    names = [l.name for l in layers]
    for name in names:
        if names.count(name) != 1:
            raise ValueError(f'The name "{name}" is used {names.count(name)} times in the '
                             f"model. All layer names should be unique.")
    depths = {id(n): node_depth[id(n)] for n in order}
    del by_id
    return order, depths, layers


def _output_masks(node: Node) -> list[KerasTensor]:
    """The mask KerasTensors of a node's outputs."""
    masks = (getattr(o, "_keras_mask", None) for o in node.flat_outputs)
    return [m for m in masks if isinstance(m, KerasTensor)]


def _shape_str(shape: Any) -> str:
    return str(tuple(shape)) if isinstance(shape, TensorShape) else str(shape)


# ---------------------------------------------------------------- the model
class Functional(Model):
    """A model made from a graph of layer calls: ``keras.Model(inputs, outputs)`` where
    `inputs` come from `keras.Input` and `outputs` from layers called on them. Each
    argument is a KerasTensor, a list or a dict of them; calling the model takes and
    returns the same structures. A layer called twice in the graph shares its weights.
    `training=` reaches every layer that takes it, unless the graph fixed it at the call.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.keras.Input(shape=(2,), name="a")
        >>> b = tf.keras.Input(shape=(2,), name="b")
        >>> shared = tf.keras.layers.Dense(3, kernel_initializer="ones", name="shared")
        >>> out = tf.keras.layers.Dense(1, kernel_initializer="ones", name="out")(
        ...     shared(a) + shared(b))
        >>> model = tf.keras.Model([a, b], out, name="siamese")
        >>> model([tf.ones([1, 2]), tf.zeros([1, 2])]).numpy()
        array([[6.]], dtype=float32)
        >>> [type(layer).__name__ for layer in model.layers]   # `+` made an op layer
        ['InputLayer', 'InputLayer', 'Dense', '_OpLayer', 'Dense']
        >>> [v.name for v in model.trainable_variables]
        ['shared/kernel:0', 'shared/bias:0', 'out/kernel:0', 'out/bias:0']
    """

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None,
                 trainable: bool = True, **kwargs: Any) -> None:
        if inputs is None or outputs is None:
            raise TypeError("Model(inputs, outputs): both `inputs` and `outputs` are needed "
                            "for a functional model.")
        super().__init__(name=name or _unique_name("model"), trainable=trainable, **kwargs)
        self._autocast = False  # as Keras: each layer casts its own inputs
        for what, structure in (("inputs", inputs), ("outputs", outputs)):
            for v in nest.flatten(structure):
                if not isinstance(v, KerasTensor):
                    raise TypeError(
                        f"Model(inputs, outputs): every element of `{what}` must be a "
                        f"KerasTensor (from keras.Input, or a layer called on one); received "
                        f"{type(v).__name__} {v!r:.80}. A model built from tensors with values "
                        f"is a subclassed Model.")
        d = self.__dict__
        if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and not isinstance(inputs[0],
                                                                                    (list, dict)):
            d["_single_list_input"] = True
        d["_nested_inputs"] = inputs
        d["_nested_outputs"] = outputs
        d["_input_list"] = nest.flatten(inputs)
        d["_output_list"] = nest.flatten(outputs)
        if len({id(x) for x in d["_input_list"]}) != len(d["_input_list"]):
            raise ValueError("Model(inputs, outputs): a KerasTensor is listed twice in `inputs`.")
        nodes, depths, layers = _map_graph(d["_input_list"], d["_output_list"])
        d["_nodes"] = nodes
        d["_node_depths"] = depths
        d["_graph_layers"] = layers
        self.built = True

    # -------------------------------------------------- structure
    @property
    def inputs(self) -> list[KerasTensor]:
        """The model's input KerasTensors, as a flat list."""
        return list(self._input_list)

    @property
    def outputs(self) -> list[KerasTensor]:
        """The model's output KerasTensors, as a flat list."""
        return list(self._output_list)

    @property
    def input(self) -> Any:
        """The input KerasTensor, or the inputs' structure."""
        return self._nested_inputs

    @property
    def output(self) -> Any:
        """The output KerasTensor, or the outputs' structure."""
        return self._nested_outputs

    @property
    def input_shape(self) -> Any:
        """The input shape (a list of them for several inputs)."""
        shapes = [x.shape for x in self._input_list]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def layers(self) -> list[Layer]:
        """The layers of the graph, input layers first, in Keras' order (by depth)."""
        return list(self._graph_layers)

    def _children(self) -> list[Layer]:
        extra = [s for s in self._sublayers if not any(s is l for l in self._graph_layers)]
        return list(self._graph_layers) + extra

    # -------------------------------------------------- calling
    def _flatten_call_inputs(self, inputs: Any) -> list[Any]:
        want = self._nested_inputs
        n = len(self._input_list)
        if isinstance(want, dict):
            if not isinstance(inputs, dict):
                raise ValueError(f'Layer "{self.name}" expects a dict of inputs with keys '
                                 f"{sorted(want)}; received {type(inputs).__name__}.")
            missing = [k for k in want if k not in inputs]
            if missing:
                raise ValueError(f'Layer "{self.name}": missing input(s) {missing}; expected a '
                                 f"dict with keys {sorted(want)}, received keys "
                                 f"{sorted(inputs)}.")
            return nest.flatten_up_to(want, {k: inputs[k] for k in want})
        if isinstance(inputs, dict) and not isinstance(want, dict):
            names = [x.name for x in self._input_list]
            if set(names) <= set(inputs):
                return [inputs[k] for k in names]
            raise ValueError(f'Layer "{self.name}" expects inputs named {names}; received a '
                             f"dict with keys {sorted(inputs)}.")
        if isinstance(inputs, (list, tuple)) and (
                n > 1 or any(isinstance(v, (TensorBase, np.ndarray)) for v in inputs)):
            flat = list(inputs)
        else:
            flat = [inputs]  # one tensor, or one input given as nested lists of numbers
        if len(flat) != n:
            raise ValueError(f'Layer "{self.name}" expects {n} input(s), but it received '
                             f"{len(flat)} input tensors. Pass them as a list in the order of "
                             f"model.inputs ({[x.name for x in self._input_list]}).")
        return flat

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_symbolic(inputs) or _is_symbolic((args, kwargs)):
            return call_symbolic(self, inputs, args, kwargs)
        return self.call(inputs, *args, **kwargs)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Replay the graph of layer calls on `inputs`, in an order that computes each
        layer's inputs first."""
        flat = self._flatten_call_inputs(inputs)
        masks = None if mask is None else nest.flatten(mask)
        if masks is not None and len(masks) != len(flat):
            raise ValueError(f'Layer "{self.name}": `mask` must hold one mask (or None) per '
                             f"input, {len(flat)}; received {len(masks)}.")
        values: dict[int, Any] = {}
        for i, (kt, x) in enumerate(zip(self._input_list, flat, strict=True)):
            t = as_tensor(x, self.name, f"inputs[{i}]")
            shape = np.shape(t._value)
            if len(shape) != len(kt.shape) or any(w is not None and w != g
                                                   for w, g in zip(kt.shape, shape)):
                raise ValueError(f'Input {i} of layer "{self.name}" is incompatible with the '
                                 f"layer: expected shape={tuple(kt.shape)}, found "
                                 f"shape={shape}. (input {kt.name!r} of the model)")
            if t.dtype != kt.dtype:
                from ..ops.elementwise import cast  # noqa: PLC0415 -- keras builds after ops
                t = cast(t, kt.dtype)
            if masks is not None and masks[i] is not None:
                set_mask(t, masks[i])  # as tf_keras: the input tensor carries the mask
            values[id(kt)] = t
        for node in self._nodes:
            if node.is_input or all(id(o) in values for o in node.flat_outputs):
                continue
            args, kwargs = nest.map_structure(
                lambda v: values[id(v)] if isinstance(v, KerasTensor) else v,
                (node.args, node.kwargs))
            if training is not None and "training" not in kwargs and \
                    _call_accepts(node.layer.call)[0]:
                kwargs["training"] = training
            out = node.layer(*args, **kwargs)
            got = nest.flatten(out)
            if len(got) != len(node.flat_outputs):
                raise ValueError(f"Layer {node.layer.name!r} returned {len(got)} output(s) "
                                 f"where the graph recorded {len(node.flat_outputs)}.")
            for kt, t in zip(node.flat_outputs, got, strict=True):
                values[id(kt)] = t
                if isinstance(getattr(kt, "_keras_mask", None), KerasTensor):
                    values[id(kt._keras_mask)] = get_mask(t)
        return nest.pack_sequence_as(self._nested_outputs,
                                     [values[id(o)] for o in self._output_list])

    def get_config(self) -> dict:
        """The model as tf_keras 2.21 writes it: its layers' configs with the calls between
        them (`inbound_nodes`), `input_layers` and `output_layers`
        (functional_config.py).

        Example:
            >>> import tapeflow as tf
            >>> x = tf.keras.Input(shape=(3,), name="x")
            >>> model = tf.keras.Model(x, tf.keras.layers.Dense(2, name="d")(x), name="m")
            >>> config = model.get_config()
            >>> [(layer["name"], layer["inbound_nodes"]) for layer in config["layers"]]
            [('x', []), ('d', [[['x', 0, 0, {}]]])]
            >>> config["input_layers"], config["output_layers"]
            ([['x', 0, 0]], [['d', 0, 0]])
        """
        return functional_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Functional":
        """A new model from `get_config()`: new layers, called as the config says (copy
        the weights with `get_weights`/`set_weights`). As in tf_keras, a Lambda saved as
        code runs that code: load configs you trust.

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> a = tf.keras.Input(shape=(2,))
            >>> hidden = tf.keras.layers.Dense(3, activation="relu")(a)
            >>> model = tf.keras.Model(a, tf.keras.layers.Dense(1)(hidden) + a[:, :1])
            >>> copy = tf.keras.Model.from_config(model.get_config())
            >>> copy.set_weights(model.get_weights())
            >>> x = np.ones((1, 2), np.float32)
            >>> bool(np.all(copy(x).numpy() == model(x).numpy()))
            True
        """
        return functional_from_config(cls, config, custom_objects)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The masks of the outputs: the graph is run on `inputs` (tf_keras' rule).

        Example:
            >>> import tapeflow as tf
            >>> ids = tf.keras.Input(shape=(None,), dtype="int32")
            >>> model = tf.keras.Model(ids, tf.keras.layers.Embedding(4, 2, mask_zero=True)(ids))
            >>> model.compute_mask(tf.constant([[2, 0]])).numpy()
            array([[ True, False]])
        """
        return nest.map_structure(get_mask, self.call(inputs, mask=mask))

    def build(self, input_shape: Any = None) -> None:
        """A functional model is built when made: its layers were built by their calls."""
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shapes recorded in the graph (batch dim None)."""
        shapes = [TensorShape(o.shape) for o in self._output_list]
        return shapes[0] if len(shapes) == 1 else shapes

    # -------------------------------------------------- summary
    def _own_nodes(self, layer: Layer) -> list[tuple[int, Node]]:
        ids = set(self._node_depths)
        return [(i, n) for i, n in enumerate(layer.__dict__.get("_inbound_nodes", []))
                if id(n) in ids]

    def _sequential_like(self) -> bool:
        by_depth = collections.Counter(self._node_depths.values())
        if any(c > 1 for c in by_depth.values()):
            return False
        if any(len(n.keras_inputs) > 1 for n in self._nodes):
            return False
        return all(len(self._own_nodes(l)) <= 1 for l in self._graph_layers)

    def _summary_layout(self) -> tuple[int, list, list]:
        if self._sequential_like():
            return super()._summary_layout()
        return 98, [0.3, 0.6, 0.70, 1.0], ["Layer (type)", "Output Shape", "Param #",
                                           "Connected to"]

    def _summary_shape(self, layer: Layer) -> str:
        shapes = []
        for node in layer.__dict__.get("_inbound_nodes", []):
            outs = [_shape_str(o.shape) for o in node.flat_outputs if isinstance(o, KerasTensor)]
            shapes.append(f"[{', '.join(outs)}]" if node.is_input or len(outs) != 1
                          else outs[0])
        if not shapes or any(s != shapes[0] for s in shapes):
            return "multiple"
        return shapes[0]

    def _summary_fields(self, layer: Layer) -> list:
        if self._sequential_like():
            return super()._summary_fields(layer)
        links = []
        for _, node in self._own_nodes(layer):
            for kt in node.keras_inputs:
                source, node_index, tensor_index = kt._keras_history
                links.append(f"{source.name}[{node_index}][{tensor_index}]")
        return [f"{layer.name} ({type(layer).__name__})", self._summary_shape(layer),
                layer.count_params(), links]


Model._functional_class = Functional
