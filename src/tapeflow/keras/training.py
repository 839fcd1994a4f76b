"""Keras `Model`: the model-subclassing API (layers assigned as attributes are tracked;
`model(x)` builds; `trainable_variables`, `weights`, `summary()`), and the base of
`Sequential` and of functional models; `compile`, `fit`, `evaluate` and `predict` by
way of keras/fitting.py."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..core import no_recorders
from ..module import name_scope
from ..tensor import Tensor, TensorShape, Variable
from ..saving import bundle, keras_h5, keras_model
from ..saving.checkpoint import Checkpoint, write_pointer
from . import fitting
from .base_layer import Layer
from .common import call_accepts, dedup

__all__ = ["Model"]


def _readable_size(size: float) -> str:
    for unit in ("Byte", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _weights_path(filepath: Any, save_format: str | None, who: str) -> str:
    path = os.fspath(filepath)
    if save_format == "keras" or path.endswith(".keras"):
        raise NotImplementedError(f"{who}: {path!r} is a Keras model file, which tapeflow does "
                                  "not read or write yet; save the weights to a .h5 file or a "
                                  "checkpoint prefix.")
    if save_format not in (None, "tf"):
        raise ValueError(f"{who}: save_format must be 'tf' or 'h5'; got {save_format!r}.")
    return path


def _probe(shape: Any, dtype: str) -> Any:
    """Zeros of `shape` (unknown dims taken as 1), or a list of them for a list of shapes."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple,
                                                                           TensorShape)):
        return [_probe(s, dtype) for s in shape]
    dims = [1 if d is None else int(d) for d in TensorShape(shape)]
    return Tensor(np.zeros(dims, _dt.as_dtype(dtype)._np))


class Model(Layer):
    """A layer with training-loop conveniences: subclass it, assign layers as attributes
    in `__init__` and write `call(self, inputs, training=False)`; calling the model builds
    its layers. ``Model(inputs, outputs)`` makes a functional model from `keras.Input`
    placeholders (see `keras.Input`).

    The model's weights are its layers' (in the order the layers were assigned), named
    under the model's name as in Keras; `layers` lists the layers assigned directly.

    Example:
        >>> import tapeflow as tf
        >>> class MLP(tf.keras.Model):
        ...     def __init__(self):
        ...         super().__init__(name="mlp")
        ...         self.hidden = tf.keras.layers.Dense(4, activation="relu", name="hidden")
        ...         self.out = tf.keras.layers.Dense(1, name="out")
        ...     def call(self, x, training=False):
        ...         return self.out(self.hidden(x))
        >>> model = MLP()
        >>> model(tf.ones([2, 3])).shape
        TensorShape([2, 1])
        >>> [v.name for v in model.trainable_variables]
        ['mlp/hidden/kernel:0', 'mlp/hidden/bias:0', 'mlp/out/kernel:0', 'mlp/out/bias:0']
        >>> model.summary()
        Model: "mlp"
        _________________________________________________________________
         Layer (type)                Output Shape              Param #
        =================================================================
         hidden (Dense)              multiple                  16
        <BLANKLINE>
         out (Dense)                 multiple                  5
        <BLANKLINE>
        =================================================================
        Total params: 21 (84.00 Byte)
        Trainable params: 21 (84.00 Byte)
        Non-trainable params: 0 (0.00 Byte)
        _________________________________________________________________
    """

    # functional.py subclasses Model and registers its class here, so that
    # Model(inputs, outputs) can make one without this module importing functional.py.
    _functional_class: Any = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "Model":
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            if Model._functional_class is None:
                raise NotImplementedError("Model(inputs, outputs): the functional API is not "
                                          "available.")
            # a new Functional (not a call of it): Python then runs its __init__ once
            return super().__new__(Model._functional_class)
        return super().__new__(cls, *args, **kwargs)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Model":
        """A model from `get_config()`: ``keras.Model.from_config`` of a functional
        model's config rebuilds it (as tf_keras); a subclass gets ``cls(**config)``."""
        if cls is Model and "input_layers" in config and "layers" in config:
            return Model._functional_class.from_config(config, custom_objects)
        return super().from_config(config)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__name__}: positional arguments are only accepted as "
                            f"Model(inputs, outputs); received {len(args)} positional "
                            f"argument(s). Pass name=..., trainable=..., dtype=... by keyword.")
        super().__init__(**kwargs)

    # -------------------------------------------------- structure
    @property
    def layers(self) -> list[Layer]:
        """The layers assigned to the model's attributes, in assignment order."""
        return list(self._children())

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer of `layers` by name or by index.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, name="out")])
            >>> model.get_layer("out") is model.layers[0]
            True
        """
        layers = self.layers
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        if index is not None:
            if len(layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{[l.name for l in layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    # -------------------------------------------------- build and call
    def _scope(self) -> Any:
        try:
            return name_scope(self.name)
        except ValueError:  # a name no scope accepts: the weights go unscoped
            return contextlib.nullcontext()

    def _maybe_build(self, input_shape: Any) -> None:
        if type(self).build is Model.build:
            # a subclassed model's layers build themselves in its first call
            self.built = True
            self._build_input_shape = input_shape
        else:
            super()._maybe_build(input_shape)

    def build_from_config(self, config: dict) -> None:
        """Build for a saved ``build_config``: a subclassed model's layers are made by
        calling it, which its `build` does (its `_maybe_build` only marks it built)."""
        if type(self).build is Model.build:
            self.build(config["input_shape"])
        else:
            super().build_from_config(config)

    def build(self, input_shape: Any) -> None:
        """Create the weights by calling the model once on zeros of `input_shape` (unknown
        dims taken as 1), seen by no tape or trace.

        Example:
            >>> import tapeflow as tf
            >>> class Net(tf.keras.Model):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.dense = tf.keras.layers.Dense(2)
            ...     def call(self, x):
            ...         return self.dense(x)
            >>> net = Net(); net.build((None, 3))
            >>> net.count_params()
            8
        """
        if input_shape is None:
            raise ValueError(f"{self.name}.build: `input_shape` is None; expected the shape of "
                             f"the inputs, e.g. (None, features).")
        kwargs = {"training": False} if call_accepts(self.call)[0] else {}
        with no_recorders(), self._scope():
            self.call(_probe(input_shape, self.dtype), **kwargs)
        self._build_input_shape = input_shape
        self.built = True

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        with self._scope():
            return super().__call__(inputs, *args, **kwargs)

    # -------------------------------------------------- training (keras/fitting.py)
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                **kwargs: Any) -> None:
        """Configure training: the optimizer, the loss and the metrics, by object or by
        tf_keras's names (``jit_compile=``, ``run_eagerly=`` as tf_keras's;
        NOTE(fit) in keras/fitting.py).

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
            >>> model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
            >>> history = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0)
            >>> sorted(history.history), len(history.history["loss"])
            (['loss', 'mae'], 2)
        """
        fitting.compile_model(self, optimizer, loss, metrics, **kwargs)

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None,
            epochs: int = 1, verbose: Any = "auto", callbacks: Any = None,
            **kwargs: Any) -> Any:
        """Train for `epochs` on arrays (`x`, `y`, in batches of `batch_size`, shuffled
        each epoch) or a tf.data.Dataset of batches, running `train_step` as one traced
        function; `validation_data`, `validation_split`, `sample_weight`, `class_weight`,
        `initial_epoch`, `steps_per_epoch` and callbacks as tf_keras's. Returns the
        `History`."""
        return fitting.fit(self, x, y, batch_size, epochs, verbose, callbacks, **kwargs)

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", **kwargs: Any) -> Any:
        """The loss and the compiled metrics on the data (`test_step` over its batches):
        a scalar, a list, or with ``return_dict=True`` a dict by name."""
        return fitting.evaluate(self, x, y, batch_size, verbose, **kwargs)

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                **kwargs: Any) -> Any:
        """The model's outputs on `x` as NumPy arrays, computed in batches by
        `predict_step` (``model(x, training=False)``).

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="ones")])
            >>> model.predict(tf.ones([2, 3]), verbose=0)
            array([[3.],
                   [3.]], dtype=float32)
        """
        return fitting.predict(self, x, batch_size, verbose, **kwargs)

    def train_on_batch(self, x: Any, y: Any = None, **kwargs: Any) -> Any:
        """One training step on one batch; its loss and metrics."""
        return fitting.train_on_batch(self, x, y, **kwargs)

    def test_on_batch(self, x: Any, y: Any = None, **kwargs: Any) -> Any:
        """The loss and metrics on one batch."""
        return fitting.test_on_batch(self, x, y, **kwargs)

    def predict_on_batch(self, x: Any) -> Any:
        """The outputs on one batch, as NumPy arrays."""
        return fitting.predict_on_batch(self, x)

    def train_step(self, data: Any) -> dict:
        """One step of `fit` (override it to customize fit, as tf_keras's guide does):
        the loss under a tape, the optimizer's update, the metrics' results by name."""
        return fitting.default_train_step(self, data)

    def test_step(self, data: Any) -> dict:
        """One step of `evaluate`: the loss and the metrics' results by name."""
        return fitting.default_test_step(self, data)

    def predict_step(self, data: Any) -> Any:
        """One step of `predict`: ``self(x, training=False)``."""
        return fitting.default_predict_step(self, data)

    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None) -> Any:
        """The compiled loss of a batch (plus the model's `losses`)."""
        return fitting.compute_loss(self, x, y, y_pred, sample_weight)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict:
        """Update the compiled metrics with a batch; their results by name."""
        return fitting.update_metrics(self, y, y_pred, sample_weight, None)

    @property
    def metrics(self) -> list:
        """The loss tracker and the compiled metrics (once a batch has made them), then the
        metrics the layers added with `add_metric`."""
        compiled = self.__dict__.get("_compiled")
        own = [] if compiled is None else [compiled.loss_tracker] + list(compiled.metrics or [])
        return own + super().metrics

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        """Reset the state of every metric."""
        for m in self.metrics:
            m.reset_state()

    @property
    def stateful(self) -> bool:
        """Whether any of the model's layers is stateful (tf_keras)."""
        return any(getattr(layer, "stateful", False) for layer in self.layers)

    def reset_states(self) -> None:
        """Reset the states of the model's stateful layers (their `reset_states()`), as
        tf_keras.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.SimpleRNN(
            ...     2, stateful=True, bias_initializer="ones", batch_input_shape=(1, 3, 1))])
            >>> _ = model(tf.ones([1, 3, 1]))
            >>> model.reset_states()
            >>> float(tf.reduce_sum(tf.abs(model.layers[0].states[0])))
            0.0
        """
        for layer in self.layers:
            if hasattr(layer, "reset_states") and getattr(layer, "stateful", False):
                layer.reset_states()

    # -------------------------------------------------- files
    def save(self, filepath: Any, overwrite: bool = True, save_format: str | None = None,
             include_optimizer: bool = True, **kwargs: Any) -> None:
        """Save the model (its config and weights) to a Keras model file: ``.keras`` (a
        zip, tf_keras's native format) or legacy ``.h5``; `tf.keras.models.load_model`
        reads it back, as tf_keras does (docs/saving.md).

        Example:
            >>> import os, tempfile
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
            >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
            >>> model.save(path)
            >>> again = tf.keras.models.load_model(path)
            >>> bool((again(tf.ones([1, 3])).numpy() == model(tf.ones([1, 3])).numpy()).all())
            True
        """
        path = os.fspath(filepath)
        if save_format == "h5" and not keras_h5.is_h5(path):
            path += ".h5"
        keras_model.save_model(self, path, overwrite=overwrite)

    # -------------------------------------------------- weights
    def save_weights(self, filepath: Any, overwrite: bool = True, save_format: str | None = None,
                     options: Any = None) -> None:
        """Save the model's weights: to an HDF5 file where `filepath` ends with ``.h5``
        (``.weights.h5``: tf_keras's newer layout; other ``.h5``: the legacy one), else as
        a TensorFlow-format checkpoint at prefix `filepath` (``filepath.index`` and its
        data file, and the directory's ``checkpoint`` file); docs/saving.md.

        Example:
            >>> import os, tempfile
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
            >>> model.build((None, 3))
            >>> path = os.path.join(tempfile.mkdtemp(), "weights")
            >>> model.save_weights(path)
            >>> other = tf.keras.Sequential([tf.keras.layers.Dense(2)])
            >>> _ = other.load_weights(path)  # assigned when other builds
            >>> other.build((None, 3))
            >>> bool((other.weights[0].numpy() == model.weights[0].numpy()).all())
            True
        """
        path = _weights_path(filepath, save_format, "save_weights")
        h5 = keras_h5.is_h5(path) or save_format == "h5"
        if not overwrite and (os.path.exists(path) if h5 else bundle.exists(path)):
            raise FileExistsError(f"save_weights: {path!r} exists and overwrite=False.")
        if h5:
            keras_h5.save_weights(self, path)
            return
        Checkpoint(self).write(path)
        write_pointer(os.path.dirname(path) or ".", path, [path])

    def load_weights(self, filepath: Any, skip_mismatch: bool = False, by_name: bool = False,
                     options: Any = None) -> Any:
        """Load weights saved by `save_weights` or by tf_keras: an HDF5 file (``.h5``,
        either layout) into a built model, or a TensorFlow-format checkpoint prefix, whose
        restore status is returned (weights not made yet are assigned when the model
        builds, as in tf_keras)."""
        if skip_mismatch or by_name:
            raise NotImplementedError("load_weights: `skip_mismatch` and `by_name` are not "
                                      "supported by tapeflow.")
        path = _weights_path(filepath, None, "load_weights")
        if keras_h5.is_h5(path):
            keras_h5.load_weights(self, path)
            return None
        return Checkpoint(self).read(path)

    def _assert_weights_created(self) -> None:
        # as Keras: only a model with its own build() can be asked before being built
        if type(self).build is not Model.build and "build" in type(self).__dict__ \
                and not self.built:
            raise ValueError(f"Weights for model '{self.name}' have not yet been created. Weights "
                             f"are created when the model is first called on inputs or `build()` "
                             f"is called with an `input_shape`.")

    def _summary_shape(self, layer: Layer) -> str:
        return "multiple"  # as Keras for layers of subclassed models: no recorded graph

    def _summary_layout(self) -> tuple[int, list, list]:
        """The summary's default line length, column positions and header."""
        return 65, [0.45, 0.85, 1.0], ["Layer (type)", "Output Shape", "Param #"]

    def _summary_fields(self, layer: Layer) -> list:
        """A layer's row in the summary (without the Trainable column)."""
        params = layer.count_params() if layer.built else "0 (unused)"
        return [f"{layer.name} ({type(layer).__name__})", self._summary_shape(layer), params]

    @property
    def weights(self) -> list[Variable]:
        """Every weight, layer by layer (each layer's `weights` in turn)."""
        self._assert_weights_created()
        out = []
        for layer in self._children():
            out += layer.weights
        return dedup(out + self._own_variables())

    def count_params(self) -> int:
        """The number of scalars in the model's weights (the model must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             f"layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(int(np.prod(w.shape, dtype=np.int64)) for w in self.weights))

    # -------------------------------------------------- summary
    def summary(self, line_length: int | None = None, positions: list | None = None,
                print_fn: Callable[[str], Any] | None = None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range: Any = None) -> None:
        """Print a table of the layers, their output shapes and parameter counts
        (Keras 2's layout); the model must be built.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,), name="d")],
            ...                             name="m")
            >>> model.summary(line_length=50)
            Model: "m"
            __________________________________________________
             Layer (type)          Output Shape        Param #
            ==================================================
             d (Dense)             (None, 3)           15
            <BLANKLINE>
            ==================================================
            Total params: 15 (60.00 Byte)
            Trainable params: 15 (60.00 Byte)
            Non-trainable params: 0 (0.00 Byte)
            __________________________________________________
        """
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_fn = print_fn or print
        default_length, default_positions, header = self._summary_layout()
        line_length = line_length or default_length
        positions = list(positions or default_positions)
        if positions[-1] <= 1:
            positions = [int(line_length * p) for p in positions]
        if show_trainable:
            line_length += 11
            positions.append(line_length)
            header.append("Trainable")

        def row(fields: list, nested: int = 0) -> None:
            left = [str(f) for f in fields]
            while any(left):
                line = ""
                for col in range(len(left)):
                    start = positions[col - 1] if col > 0 else 0
                    end = positions[col]
                    space = 2 if col != len(positions) - 1 else 0
                    cutoff = end - start - space - (1 if col != len(positions) - 1 else 0)
                    if col == 0:
                        cutoff -= nested
                    fit = left[col][:cutoff]
                    breaks = [fit.find(b) + len(b) for b in ("),", "},", "],", "',")
                              if fit.find(b) >= 0]
                    if breaks:
                        cutoff = min(breaks)
                        fit = fit[:cutoff]
                    if col == 0:
                        line += "|" * nested + " "
                    line += fit + " " * space
                    left[col] = left[col][cutoff:]
                    if nested and col == len(positions) - 1:
                        line += " " * (positions[col] - len(line) - nested)
                    else:
                        line += " " * (positions[col] - len(line))
                print_fn(line + "|" * nested)

        def show(layer: Layer, nested: int, last: bool) -> None:
            fields = self._summary_fields(layer)
            if show_trainable:
                fields.append("Y" if layer.trainable else "N")
            row(fields, nested)
            if expand_nested and isinstance(layer, Model) and layer.layers:
                bar = "|" * (nested + 1)
                print_fn(bar + "¯" * (line_length - 2 * nested - 2) + bar)
                for i, sub in enumerate(layer.layers):
                    show(sub, nested + 1, i == len(layer.layers) - 1)
                print_fn("|" * nested + "¯" * (line_length - 2 * nested) + "|" * nested)
                last = True  # as Keras: no blank line after an expanded block
            if not last:
                print_fn("|" * nested + " " * (line_length - 2 * nested) + "|" * nested)

        print_fn(f'Model: "{self.name}"')
        print_fn("_" * line_length)
        row(header)
        print_fn("=" * line_length)
        layers = self.layers
        if layer_range is not None:
            names = [l.name for l in layers]
            lo, hi = (names.index(n) for n in layer_range)
            layers = layers[lo:hi + 1]
        for layer in layers:
            show(layer, 0, False)
        print_fn("=" * line_length)
        trainable, frozen = self.trainable_weights, self.non_trainable_weights

        def size(ws: list) -> tuple[int, int]:
            counts = [int(np.prod(w.shape, dtype=np.int64)) for w in ws]
            return sum(counts), sum(c * w.dtype.size for c, w in zip(counts, ws, strict=True))

        (nt, bt), (nf, bf) = size(trainable), size(frozen)
        print_fn(f"Total params: {nt + nf} ({_readable_size(bt + bf)})")
        print_fn(f"Trainable params: {nt} ({_readable_size(bt)})")
        print_fn(f"Non-trainable params: {nf} ({_readable_size(bf)})")
        print_fn("_" * line_length)
