"""`tapeflow.function`: tracing once per input signature, replaying after.

The decorator with and without arguments and on methods; what makes a call retrace
(a new shape, dtype or Python argument value); nested structures, None and Python
numbers as arguments and outputs; concrete functions (their graph, operations and
DOT text, wrong-shape and wrong-dtype calls); the tracing count. Python side effects
(appends to a list) count how often the Python body actually ran.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import _c, _close

import tapeflow as tf
from tapeflow.graph import ConcreteFunction, TracingError


def test_decorator_without_arguments():
    @tf.function
    def f(x):
        return tf.sin(x) * 2.0

    assert isinstance(f, tf.graph.Function)
    _close(f(_c(0.5)), 2 * np.sin([0.5]))


def test_decorator_with_arguments():
    @tf.function()
    def f(x):
        return x + 1.0

    @tf.function(reduce_retracing=True, jit_compile=False)
    def g(x):
        return x * 3.0

    _close(f(_c(1.0)), [2.0])
    _close(g(_c(1.0)), [3.0])
    assert f.__name__ == "f" and g.python_function.__name__ == "g"


def test_method_two_instances_use_their_own_attributes():
    class Scaler:
        def __init__(self, scale):
            self.scale = scale

        @tf.function
        def apply(self, x):
            return x * self.scale

    a, b = Scaler(2.0), Scaler(3.0)
    x = _c(1.0, 2.0)
    _close(a.apply(x), [2.0, 4.0])
    _close(b.apply(x), [3.0, 6.0])
    _close(a.apply(_c(5.0, 6.0)), [10.0, 12.0])
    _close(b.apply(_c(5.0, 6.0)), [15.0, 18.0])


def test_method_get_concrete_function():
    class Model:
        def __init__(self):
            self.w = tf.Variable(np.array([1.0, 2.0]))

        @tf.function
        def __call__(self, x):
            return x * self.w

    m = Model()
    cf = m.__call__.get_concrete_function(_c(1.0, 1.0))
    _close(cf(m, _c(3.0, 4.0)), [3.0, 8.0])


@pytest.mark.filterwarnings("ignore:tapeflow.function.*traced")  # each instance traces
def test_method_new_instance_after_old_one_died_uses_its_own_attributes():
    class Scaler:
        def __init__(self, scale):
            self.scale = scale

        @tf.function
        def apply(self, x):
            return x * self.scale

    x = _c(1.0)
    for scale in range(1, 11):
        s = Scaler(float(scale))
        _close(s.apply(x), [float(scale)])
        del s


def test_first_call_traces_and_same_signature_replays_without_python():
    runs = []

    @tf.function
    def f(x):
        runs.append(1)
        return tf.sin(x) * x

    _close(f(_c(1.0, 2.0)), np.sin([1.0, 2.0]) * [1.0, 2.0])
    assert len(runs) == 1
    for v in ([3.0, 4.0], [-1.0, 0.5], [0.0, 7.0]):
        _close(f(_c(*v)), np.sin(v) * np.array(v))
    assert len(runs) == 1
    assert f.experimental_get_tracing_count() == 1


def test_new_shape_retraces():
    runs = []

    @tf.function
    def f(x):
        runs.append(1)
        return tf.reduce_sum(x * x)

    f(_c(1.0, 2.0))
    _close(f(_c(1.0, 2.0, 3.0)), 14.0)
    assert len(runs) == 2
    f(_c(5.0, 5.0))
    f(_c(5.0, 5.0, 5.0))
    assert len(runs) == 2


def test_new_dtype_retraces():
    runs = []

    @tf.function
    def f(x):
        runs.append(1)
        return x * x

    f(tf.constant([1.0, 2.0], dtype=tf.float64))
    out = f(tf.constant([3.0, 4.0], dtype=tf.float32))
    assert out.dtype == tf.float32
    _close(out, [9.0, 16.0])
    assert len(runs) == 2


def test_new_python_argument_value_retraces():
    runs = []

    @tf.function
    def f(x, power):
        runs.append(power)
        return x ** power

    _close(f(_c(2.0), 2.0), [4.0])
    _close(f(_c(3.0), 2.0), [9.0])
    assert runs == [2.0]
    _close(f(_c(2.0), 3.0), [8.0])
    assert runs == [2.0, 3.0]
    _close(f(_c(3.0), 3.0), [27.0])
    assert runs == [2.0, 3.0]


def test_python_scalar_type_is_part_of_the_signature():
    runs = []

    @tf.function
    def f(x, flag):
        runs.append(flag)
        return x * 2.0 if flag else x

    _close(f(_c(1.0), True), [2.0])
    _close(f(_c(1.0), 1), [2.0])
    _close(f(_c(1.0), False), [1.0])
    assert len(runs) == 3


def test_tensor_numpy_and_python_scalar_arguments():
    runs = []

    @tf.function
    def f(x, y, s):
        runs.append(1)
        return x * y + s

    out = f(tf.constant([1.0, 2.0], dtype=tf.float64), np.array([3.0, 4.0]), 1.0)
    _close(out, [4.0, 9.0])
    out = f(tf.constant([2.0, 2.0], dtype=tf.float64), np.array([5.0, 6.0]), 1.0)
    _close(out, [11.0, 13.0])
    assert len(runs) == 1
    # A NumPy argument is a graph input: its values are not frozen.
    out = f(np.array([1.0, 1.0]), np.array([-1.0, 2.0]), 1.0)
    _close(out, [0.0, 3.0])
    assert len(runs) == 1


def test_keyword_arguments():
    @tf.function
    def f(x, *, scale=1.0, shift=None):
        y = x * scale
        return y if shift is None else y + shift

    _close(f(_c(1.0), scale=2.0), [2.0])
    _close(f(_c(3.0), scale=2.0), [6.0])
    _close(f(_c(3.0), scale=2.0, shift=_c(1.0)), [7.0])
    _close(f(_c(4.0), scale=2.0, shift=_c(-1.0)), [7.0])
    assert f.experimental_get_tracing_count() == 2


def test_nested_list_tuple_dict_arguments_and_outputs():
    runs = []

    @tf.function
    def f(inputs):
        runs.append(1)
        a, (b, c) = inputs["pair"][0], inputs["pair"][1]
        return {"sum": a + b + c, "parts": [a * b, (b - c, c * 2.0)], "k": inputs["k"]}

    def make(a, b, c):
        return {"pair": [_c(a), (_c(b), _c(c))], "k": _c(a * 10)}

    for args in ((1.0, 2.0, 3.0), (4.0, -5.0, 6.0)):
        a, b, c = args
        out = f(make(*args))
        assert set(out) == {"sum", "parts", "k"}
        assert isinstance(out["parts"], list) and isinstance(out["parts"][1], tuple)
        _close(out, {"sum": [a + b + c], "parts": [[a * b], ([b - c], [c * 2])], "k": [a * 10]})
    assert len(runs) == 1


def test_returning_none():
    @tf.function
    def f(x):
        x * 2.0
        return None

    assert f(_c(1.0)) is None
    assert f(_c(2.0)) is None


def test_returning_none_inside_a_structure():
    @tf.function
    def f(x):
        return x * 2.0, None

    out = f(_c(1.0))
    out = f(_c(4.0))
    assert out[1] is None
    _close(out[0], [8.0])


def test_returning_python_numbers():
    @tf.function
    def f(x, n):
        return x + 1.0, n * 2, 2.5

    for x in (1.0, 3.0):
        y, n2, c = f(_c(x), 3)
        _close(y, [x + 1])
        assert int(n2) == 6
        assert float(c) == 2.5


def test_returning_an_object_raises_tracing_error():
    @tf.function
    def f(x):
        return "not a tensor"

    with pytest.raises(TracingError):
        f(_c(1.0))


def test_returning_an_object_inside_a_structure_raises_tracing_error():
    @tf.function
    def f(x):
        return [x, {"label": object()}]

    with pytest.raises(TracingError):
        f(_c(1.0))


def test_get_concrete_function_is_callable_at_new_inputs():
    runs = []

    @tf.function
    def f(x):
        runs.append(1)
        return tf.sin(x) * x

    cf = f.get_concrete_function(_c(1.0, 2.0))
    assert isinstance(cf, ConcreteFunction)
    assert len(runs) == 1
    _close(cf(_c(3.0, 4.0)), np.sin([3.0, 4.0]) * [3.0, 4.0])
    assert len(runs) == 1
    assert f.get_concrete_function(_c(7.0, 8.0)) is cf


def test_concrete_function_graph_prints_primitive_names():
    @tf.function
    def f(x):
        return tf.exp(tf.sin(x)) * x

    text = str(f.get_concrete_function(_c(1.0, 2.0)).graph)
    for name in ("sin", "exp", "multiply"):
        assert name in text


def test_concrete_function_get_operations():
    @tf.function
    def f(x, y):
        return tf.tanh(x) + y

    graph = f.get_concrete_function(_c(1.0), _c(2.0)).graph
    ops = graph.get_operations()
    assert [op.type for op in ops] == ["tanh", "add"]
    for op in ops:
        assert isinstance(op.inputs, list) and isinstance(op.outputs, list)
        assert len(op.outputs) == 1
    assert len(ops[0].inputs) == 1 and len(ops[1].inputs) == 2
    assert ops[0].outputs[0] in ops[1].inputs   # tanh feeds add
    assert len(graph.inputs) == 2 and len(graph.outputs) == 1


def test_concrete_function_to_dot():
    @tf.function
    def f(x):
        return tf.sin(x) * 2.0

    dot = f.get_concrete_function(_c(1.0)).graph.to_dot()
    assert dot.startswith("digraph")
    assert "sin" in dot and dot.rstrip().endswith("}")


def test_concrete_function_wrong_shape_raises_type_error():
    @tf.function
    def f(x):
        return x * 2.0

    cf = f.get_concrete_function(_c(1.0, 2.0))
    with pytest.raises(TypeError):
        cf(_c(1.0, 2.0, 3.0))


def test_concrete_function_wrong_dtype_raises_type_error():
    @tf.function
    def f(x):
        return x * 2.0

    cf = f.get_concrete_function(_c(1.0, 2.0))
    with pytest.raises(TypeError):
        cf(tf.constant([1.0, 2.0], dtype=tf.float32))


def test_concrete_function_different_python_argument_is_not_silently_ignored():
    @tf.function
    def f(x, p):
        return x ** p

    cf = f.get_concrete_function(_c(2.0), 2.0)
    try:
        out = cf(_c(3.0), 3.0)
    except TypeError:
        return                      # TensorFlow's behaviour: a clear error
    _close(out, [27.0])             # or the right answer; never x ** 2


def test_experimental_get_tracing_count():
    @tf.function
    def f(x):
        return x + 1.0

    assert f.experimental_get_tracing_count() == 0
    f(_c(1.0))
    assert f.experimental_get_tracing_count() == 1
    f(_c(2.0))
    assert f.experimental_get_tracing_count() == 1
    f(_c(1.0, 2.0))
    assert f.experimental_get_tracing_count() == 2


# ---------------------------------------------------------------- argument identity
def test_the_same_tensor_passed_twice_is_two_inputs():
    f = tf.function(lambda a, b: a - b)
    t = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(f(t, t).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(f(tf.constant([5.0, 5.0]), tf.constant([1.0, 1.0])).numpy(),
                                  [4.0, 4.0])
    assert f.experimental_get_tracing_count() == 1


def test_an_argument_that_is_also_captured_is_an_input_and_a_constant():
    c = tf.constant([1.0, 2.0])
    f = tf.function(lambda x: x * 10.0 + c)
    np.testing.assert_array_equal(f(c).numpy(), [11.0, 22.0])
    np.testing.assert_array_equal(f(tf.constant([3.0, 4.0])).numpy(), [31.0, 42.0])


def test_gradient_through_a_first_call_whose_arguments_repeat():
    f = tf.function(lambda a, b: a * b)
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x, x)
    assert float(tape.gradient(y, x)) == 6.0


def test_a_concrete_functions_graph_is_a_tf_graph():
    cf = tf.function(lambda a: a * 2.0).get_concrete_function(tf.constant(1.0))
    assert isinstance(cf.graph, tf.Graph)
