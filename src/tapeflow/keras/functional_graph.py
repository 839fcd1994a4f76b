"""The graph a functional model is made of: `keras.Input` (and the `InputLayer` behind
it), the symbolic `KerasTensor`, the `Node`s that calling layers on KerasTensors
records, and `map_graph`, the walk that orders a graph's nodes for a model.

Calling a layer (or a model) on KerasTensors computes nothing: it records a `Node`
(the layer, the call's arguments, its symbolic outputs) on the layer, through the hook
this module sets in common.SYMBOLIC. A functional model (`Functional`, functional.py)
collects the nodes between its inputs and its outputs with `map_graph` once, at
construction, and replays them on real tensors at each call.

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

import contextlib
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from .. import nest
from ..core import no_recorders
from ..errors import SymbolicValueError
from ..tensor import Tensor, TensorBase, TensorShape
from .base_layer import Layer
from .masks import get_mask, set_mask
from .op_layers import SlicingOpLambda, TFOpLambda, op_at
from .recurrent import states_kept
from .training import Model
from .common import LAYER_CLASSES, SYMBOLIC, call_accepts, check_input, unique_name

__all__ = ["Input", "InputLayer", "KerasTensor", "Node", "call_symbolic", "is_symbolic",
           "map_graph"]


_LAMBDA_HINT = ("wrap the computation in a layer, e.g. "
                "tf.keras.layers.Lambda(lambda t: ...)(x), or compute it in a Layer "
                "subclass's call")


class KerasTensor:
    """A symbolic tensor of the functional API: a shape (batch dim None), a dtype and a
    name, and the layer call that produced it. It holds no value: pass it to layers,
    then to ``keras.Model(inputs, outputs)``; ``+ - * / ** @``, unary minus, indexing
    and the tf ops (``tf.reduce_sum(x)``, NOTE(symbolic-dispatch) in ops/__init__.py)
    record an op layer. Code that needs a value (NumPy, ``float(x)``) must run in a layer.

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
    def _no_value(self, what: str) -> SymbolicValueError:
        return SymbolicValueError(
            f"{what} needs a value, but {self.name!r} is a symbolic KerasTensor (from "
            f"keras.Input or a layer called on one): it has a shape {tuple(self.shape)} and "
            f"dtype {self.dtype.name}, no value. Build the model with "
            f"keras.Model(inputs, outputs) and call it on real tensors (tf ops called on it "
            f"record layers); to compute with its value (NumPy, Python numbers), "
            f"{_LAMBDA_HINT}.")

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

    @staticmethod
    def _symbolic_call(op: Callable, path: str, args: tuple, kwargs: dict) -> Any:
        """A tf op called on KerasTensors: recorded as a `TFOpLambda` layer's call (the
        namespaces' hook, NOTE(symbolic-dispatch))."""
        layer = (SlicingOpLambda if path == "__operators__.getitem" else TFOpLambda)(path, op)
        first, rest = layer._split(args, kwargs)
        return call_symbolic(layer, first, (), rest)  # (even where `first` has a value)

    # -------------------------------------------------- operators record op layers
    def __getitem__(self, key: Any) -> "KerasTensor":
        return _operator("__operators__.getitem", self, key)

    def __neg__(self) -> "KerasTensor":
        return _operator("math.negative", self)

    def __abs__(self) -> "KerasTensor":
        return _operator("math.abs", self)


def _operator(path: str, *args: Any) -> Any:
    """An operator of KerasTensors as tf_keras records it: a TFOpLambda of the op at
    `path`, whose config names it (so a saved model keeps it without code)."""
    if len(args) == 2 and path != "__operators__.getitem" and not isinstance(
            args[1], (KerasTensor, TensorBase, int, float, complex, bool, np.ndarray,
                      np.generic)):
        return NotImplemented
    return KerasTensor._symbolic_call(op_at(path), path, args, {})


def _binary(symbol: str, name: str, fn: Callable[[Any, Any], Any]) -> tuple[Callable, Callable]:
    def forward(self: KerasTensor, other: Any) -> KerasTensor:
        return _operator(name, self, other)

    def reverse(self: KerasTensor, other: Any) -> KerasTensor:
        if not isinstance(other, (TensorBase, int, float, complex, bool, np.ndarray,
                                  np.generic)):
            return NotImplemented
        return KerasTensor._symbolic_call(op_at(name), name, (other, self), {})

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
# comparisons have no reflected methods: Python asks `y > x` for `x < y`; == and != stay
# identity (a KerasTensor is a dict key and a list member, as tf_keras's)
for _sym, _name, _dunder, _fn in (
        ("<", "math.less", "lt", lambda a, b: a < b),
        ("<=", "math.less_equal", "le", lambda a, b: a <= b),
        (">", "math.greater", "gt", lambda a, b: a > b),
        (">=", "math.greater_equal", "ge", lambda a, b: a >= b)):
    setattr(KerasTensor, f"__{_dunder}__", _binary(_sym, _name, _fn)[0])


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
            name = unique_name("input", zero_based=False)
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
def is_symbolic(x: Any) -> bool:
    """Whether `x`, or any value in the lists, tuples and dicts it nests, is a
    KerasTensor: a layer called on such arguments records a node (`call_symbolic`)
    instead of computing.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(2,), name="is_symbolic_x")
        >>> is_symbolic([tf.ones([1, 2]), {"b": x}]), is_symbolic(tf.ones([1, 2]))
        (True, False)
    """
    if isinstance(x, (list, tuple)):
        return any(is_symbolic(v) for v in x)
    if isinstance(x, dict):
        return any(is_symbolic(v) for v in x.values())
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
    if call_accepts(layer.call)[0]:
        kwargs["training"] = False  # a probe must not move statistics or draw masks
    with no_recorders(), np.errstate(all="ignore"), states_kept():  # nor write RNN states
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
        check_input(layer, layer.input_spec, inputs.shape)
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


SYMBOLIC[0] = (is_symbolic, call_symbolic)


# ---------------------------------------------------------------- the graph
def map_graph(inputs: list[KerasTensor], outputs: list[Any]) -> tuple[list[Node], dict, list]:
    """Keras' _map_graph_network: the nodes from `inputs` to `outputs` (flat lists of
    KerasTensors) in an order that computes each before its users, their depths (by the
    node's id), and the layers in Keras' order (deepest first; ties in the order a walk
    back from the outputs meets them). Raises ValueError for a graph the inputs do not
    reach ("Graph disconnected"), a cycle, or two layers of one name.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(2,), name="map_graph_x")
        >>> y = tf.keras.layers.Dense(1, name="map_graph_d")(x)
        >>> nodes, depths, layers = map_graph([x], [y])
        >>> [node.layer.name for node in nodes], [depths[id(node)] for node in nodes]
        (['map_graph_x', 'map_graph_d'], [1, 0])
    """
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
