"""JAX-style function transforms, built from GradientTape, ForwardAccumulator and vmap.

Arguments and results may be nested lists/tuples/dicts of tensors, NumPy arrays
or Python scalars. Every transform is made of the same three interpreters, so
they compose: ``jacfwd(jacrev(f))``, ``vmap(grad(f))``, ``grad(lambda x:
vmap(f)(x).sum())`` all work. Jacobians are one vectorized pass (a `vmap` of
a VJP or JVP over the basis), never a loop over rows; ``chunk_size`` splits the
basis to bound peak memory.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as _dt
from . import nest
from .batching import vmap_chunks
from .core import Zero, bind, reading_records
from .forward import ForwardAccumulator
from .ops.convert import as_tensor
from .ops.shape import identity_p
from .ops.creation import basis
from .ops.structural import reshape_p, shape_of, transpose_p
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, TensorBase, convert_to_tensor

__all__ = ["grad", "value_and_grad", "jvp", "vjp", "linearize", "jacfwd", "jacrev",
           "jacobian", "hessian", "hvp"]


# ---------------------------------------------------------------------------- arguments
def _argnums(argnums: int | Sequence[int], nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: `argnums` is empty.")
    for a in nums:
        if not isinstance(a, (int, np.integer)) or not -nargs <= a < nargs:
            raise ValueError(f"{fname}: argnums={argnums!r} is out of range for a call with "
                             f"{nargs} positional argument(s).")
    return tuple(int(a) % nargs for a in nums)


def _diff_tree(tree: Any, fname: str, where: str) -> Any:
    """Every leaf of an argument as a fresh tensor that can carry derivatives.

    Fresh: the transform differentiates this very tensor, so it must be distinct from
    anything the function closes over, at every nesting level (in ``grad(lambda y: x *
    y)(x)`` the captured x is a constant: 3, not 6). It is an identity op, so recorders
    outside the transform (an outer transform's tape, a trace, vmap) see it computed
    from the caller's tensor: higher derivatives, tracing and batching go through it.
    """
    def convert(x: Any) -> Tensor:
        t = as_tensor(x, fname, where)
        if _dt.kind(t._value.dtype) not in "fc":
            raise TypeError(f"{fname}: {where} has dtype {t.dtype.name}; only floating and complex "
                            "arguments can be differentiated (cast it, or leave it out of "
                            "argnums).")
        return bind(identity_p, t)
    return nest.map_structure(convert, tree)


def _check_outputs(out: Any, fname: str) -> None:
    """A TypeError naming the first output that is not floating or complex: an integer or
    bool output has no derivative (its Jacobian would be zeros by construction), as JAX
    refuses it."""
    for i, o in enumerate(nest.flatten(out)):
        if isinstance(o, TensorBase) and not (o.dtype.is_floating or o.dtype.is_complex):
            raise TypeError(f"{fname}: output {i} of the function has dtype {o.dtype.name}; "
                            f"{fname} differentiates floating and complex outputs only (cast "
                            "the output to a float type if its derivative is meant).")


def _split(args: tuple, nums: tuple, fname: str) -> tuple[list, list]:
    """Arguments with the differentiated ones converted, and the list of those trees."""
    args = list(args)
    trees = []
    for n in nums:
        args[n] = _diff_tree(args[n], fname, f"argument {n}")
        trees.append(args[n])
    return args, trees


def _pick(trees: list, argnums: Any) -> Any:
    """One tree for an int argnums, a tuple of trees otherwise (as JAX)."""
    return trees[0] if isinstance(argnums, (int, np.integer)) else tuple(trees)


def _regroup(flat: list, trees: list) -> list:
    out, pos = [], 0
    for tree in trees:
        n = len(nest.flatten(tree))
        out.append(nest.pack_sequence_as(tree, flat[pos:pos + n]))
        pos += n
    return out


def _zero_if_none(g: Any, like: Tensor) -> Tensor:
    return Tensor(np.zeros_like(like._value)) if g is None else g


# ---------------------------------------------------------------------------- reverse mode
def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """A function returning ``(f(*args), grad)``; see `grad`.

    Example:
        >>> import tapeflow as tf
        >>> v, g = tf.value_and_grad(lambda x: x ** 3.)(2.)
        >>> float(v), float(g)
        (8.0, 12.0)
    """
    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "grad")
        args, trees = _split(args, nums, "grad")
        leaves = nest.flatten(trees)
        with GradientTape() as tape:
            tape.watch(leaves)
            out = f(*args, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("grad: with has_aux=True the function must return a pair "
                                "(value, aux).")
            out, aux = out
        if not isinstance(out, TensorBase) or np.ndim(out._value) != 0:
            shape = tuple(np.shape(out._value)) if isinstance(out, TensorBase) else type(out).__name__
            raise TypeError(f"grad: the function must return a scalar tensor; got {shape}. Use "
                            "jacrev/jacobian for non-scalar outputs.")
        _check_outputs(out, "grad")
        grads = tape.gradient(out, leaves, unconnected_gradients=UnconnectedGradients.ZERO)
        g = _pick(_regroup(grads, trees), argnums)
        return ((out, aux), g) if has_aux else (out, g)

    return wrapped


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function with respect to the arguments in `argnums`.

    Returns one gradient (the argument's structure) for an int `argnums`, a tuple
    for a sequence; unconnected arguments get zeros. With `has_aux`, `f` returns
    ``(value, aux)`` and the result is ``(grad, aux)``.

    Example:
        >>> import tapeflow as tf
        >>> float(tf.grad(lambda x: x ** 3.)(2.))
        12.0
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)``: ``vjp_fn(cotangent)`` returns one cotangent per primal.

    `vjp_fn` can be called many times (and under `vmap`, which is how `jacrev`
    gets every row in one pass).

    Example:
        >>> import tapeflow as tf
        >>> y, f_vjp = tf.vjp(lambda x: x * x, tf.constant([1., 2.]))
        >>> f_vjp(tf.constant([1., 1.]))[0].numpy()
        array([2., 4.], dtype=float32)
    """
    args, trees = _split(primals, tuple(range(len(primals))), "vjp")
    leaves = nest.flatten(trees)
    with GradientTape(persistent=True) as tape:
        tape.watch(leaves)
        out = f(*args)
    aux = None
    if has_aux:
        out, aux = out
    flat_out = nest.flatten(out)

    def vjp_fn(cotangent: Any) -> tuple:
        try:
            cts = nest.flatten_up_to(out, cotangent)
        except ValueError as e:
            raise ValueError(f"vjp_fn: the cotangent must have the structure of the output: "
                             f"{e}") from None
        cts = [as_tensor(c, "vjp_fn", f"cotangent {i}") for i, c in enumerate(cts)]
        for i, (c, o) in enumerate(zip(cts, flat_out, strict=True)):
            if shape_of(c) != shape_of(o):
                raise ValueError(f"vjp_fn: cotangent {i} has shape {shape_of(c)}, the output "
                                 f"has shape {shape_of(o)}.")
        grads = tape.gradient(flat_out, leaves, output_gradients=cts,
                              unconnected_gradients=UnconnectedGradients.ZERO)
        return tuple(_regroup(grads, trees))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# ---------------------------------------------------------------------------- forward mode
def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple:
    """``(f(*primals), J v)``: the forward-mode Jacobian-vector product.

    `primals` and `tangents` are sequences with the same structure.

    Example:
        >>> import tapeflow as tf
        >>> y, t = tf.jvp(tf.sin, (0.,), (2.,))
        >>> float(y), float(t)
        (0.0, 2.0)
    """
    if not isinstance(primals, (list, tuple)) or not isinstance(tangents, (list, tuple)):
        raise TypeError("jvp: `primals` and `tangents` must be tuples or lists (one entry per "
                        "argument of f).")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents.")
    args, trees = _split(tuple(primals), tuple(range(len(primals))), "jvp")
    leaves = nest.flatten(trees)
    tans = nest.flatten_up_to(list(trees), list(tangents))
    with ForwardAccumulator(leaves, tans) as acc:
        out = f(*args)
    jv = nest.map_structure(lambda o: _zero_if_none(acc.jvp(o), o), out)
    return out, jv


def _tangent_like(t: Any, primal: Tensor, fname: str, i: int) -> Tensor:
    """A tangent converted to its primal's dtype, with the primal's shape (or a clear error)."""
    t = as_tensor(t, fname, f"tangent {i}") if isinstance(t, TensorBase) else \
        convert_to_tensor(t, dtype=primal.dtype)
    if t._value.dtype != primal._value.dtype:
        raise TypeError(f"{fname}: tangent {i} has dtype {t.dtype.name}, its primal has dtype "
                        f"{primal.dtype.name}.")
    if shape_of(t) != shape_of(primal):
        raise ValueError(f"{fname}: tangent {i} has shape {shape_of(t)}, its primal has shape "
                         f"{shape_of(primal)}.")
    return t


def linearize(f: Callable, *primals: Any) -> tuple:
    """``(f(*primals), f_jvp)``: `f_jvp(*tangents)` is the JVP at `primals`, evaluated
    without running `f` again (its tangent rules are replayed on the recorded ops).

    Example:
        >>> import tapeflow as tf
        >>> y, f_jvp = tf.linearize(tf.sin, 0.)
        >>> float(f_jvp(3.))
        3.0
    """
    args, trees = _split(primals, tuple(range(len(primals))), "linearize")
    leaves = nest.flatten(trees)
    tape = GradientTape(persistent=True)
    tape._keep_all = True  # the JVP rules replayed below read what the VJP rules may not
    with tape:
        tape.watch(leaves)
        out = f(*args)
    plan, _ = tape._plan(leaves, merge=False)  # every op's tangent rule runs
    leaf_keys = [tape._key_of(x) for x in leaves]
    out_keys = nest.map_structure(tape._key_of, out)

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise ValueError(f"linearize: f_jvp takes {len(primals)} tangent(s); got "
                             f"{len(tangents)}.")
        tan: dict[int, Any] = {}
        for i, (x, k, t) in enumerate(zip(leaves, leaf_keys, nest.flatten_up_to(
                list(trees), list(tangents)), strict=True)):
            tan[k] = _tangent_like(t, x, "linearize: f_jvp", i)
        with reading_records():  # the record may hold tensors of a finished trace
            for prim, in_keys, o_keys, inputs, outputs, params in plan:
                found = [tan.get(k) for k in in_keys]
                if all(t is None for t in found):
                    continue
                ts = tuple(Zero.like(x) if t is None else t
                           for x, t in zip(inputs, found, strict=True))
                for k, t in zip(o_keys, _jvp_rule(prim)(ts, outputs, inputs, **params),
                                strict=True):
                    if type(t) is not Zero and k is not None:
                        tan[k] = t
        return nest.map_structure(lambda o, k: _zero_if_none(tan.get(k), o), out, out_keys)

    return out, f_jvp


def _jvp_rule(prim: Any) -> Callable:
    rule = prim.rules.get("jvp")
    if rule is None:
        raise NotImplementedError(f"linearize: primitive {prim.name!r} has no forward-mode "
                                  "rule (its `jvp`, tapeflow.extend.define).")
    return rule


# ---------------------------------------------------------------------------- jacobians
def _over_basis(fn: Callable, x: Tensor, chunks: tuple, out_axes: Any = 0) -> Any:
    """vmap `fn` over the one-hot basis of x, made chunk by chunk (never whole when
    chunked); `chunks` is (chunk_size, show_progress)."""
    n = int(np.size(x._value))
    return vmap_chunks(fn, n, lambda a, b: basis(x, a, None if a == 0 and b == n else b),
                       chunks[0], out_axes, show_progress=chunks[1])


def _rows_to_jacobian(rows: Tensor, out_shape: tuple, in_shape: tuple, rows_are_out: bool) -> Tensor:
    """[n, ...] rows of one basis into the out_shape + in_shape Jacobian."""
    if not rows_are_out:  # forward mode: row j is d out / d in[j], shape [n_in, *out]
        n_out = len(out_shape)
        if n_out:
            rows = bind(transpose_p, rows, perm=tuple(range(1, n_out + 1)) + (0,))
    # reverse mode: row i is d out[i] / d in, shape [n_out, *in]
    shape = tuple(out_shape) + tuple(in_shape)
    return rows if shape_of(rows) == shape else bind(reshape_p, rows, shape=shape)


def jacrev(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           chunk_size: int | None = None, progress: bool = False) -> Callable:
    """The Jacobian by reverse mode: one batched VJP over all output basis vectors.

    The result has shape ``out.shape + in.shape`` per (output leaf, argument leaf), in
    the structure output-of-arguments. Best when outputs are fewer than inputs.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.jacrev(lambda x: x * x)(np.array([1., 2.])).numpy()
        array([[2., 0.],
               [0., 4.]])
    """
    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacrev")
        args, trees = _split(args, nums, "jacrev")
        res = _jacrev_at(f, args, nums, trees, argnums, has_aux, (chunk_size, progress))
        return res

    return wrapped


def _partial(f: Callable, args: list, nums: tuple, has_aux: bool = False) -> Callable:
    """f as a function of the differentiated arguments only (others fixed)."""
    def g(*diff: Any) -> Any:
        full = list(args)
        for n, d in zip(nums, diff, strict=True):
            full[n] = d
        return f(*full)
    return g


def _jacrev_at(f: Callable, args: list, nums: tuple, trees: list, argnums: Any,
               has_aux: bool, chunks: tuple) -> Any:
    res = vjp(_partial(f, args, nums), *trees, has_aux=has_aux)
    out, vjp_fn = res[0], res[1]
    _check_outputs(out, "jacrev")
    jac = _jacrev_from(out, vjp_fn, trees, argnums, chunks)
    return (jac, res[2]) if has_aux else jac


def _jacrev_from(out: Any, vjp_fn: Callable, trees: list, argnums: Any,
                 chunks: tuple) -> Any:
    flat_out = nest.flatten(out)
    in_leaves = nest.flatten(trees)
    per_out = []
    for k, o in enumerate(flat_out):
        def row(ct: Tensor, k: int = k) -> list:
            cts = [ct if j == k else Tensor(np.zeros_like(oj._value)) for j, oj in enumerate(flat_out)]
            return nest.flatten(list(vjp_fn(nest.pack_sequence_as(out, cts))))
        rows = _over_basis(row, o, chunks)
        jacs = [_rows_to_jacobian(r, shape_of(o), shape_of(x), True) for r, x in zip(rows, in_leaves, strict=True)]
        per_out.append(_pick(_regroup(jacs, trees), argnums))
    return nest.pack_sequence_as(out, per_out)


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           chunk_size: int | None = None, progress: bool = False) -> Callable:
    """The Jacobian by forward mode: one batched JVP over all input basis vectors.

    Same result layout as `jacrev`. Best when inputs are fewer than outputs; keeps
    no intermediates (forward mode).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.jacfwd(lambda x: x * x)(np.array([1., 2.])).numpy()
        array([[2., 0.],
               [0., 4.]])
    """
    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacfwd")
        args, trees = _split(args, nums, "jacfwd")
        return _jacfwd_at(f, args, nums, trees, argnums, has_aux, (chunk_size, progress))

    return wrapped


def _jacfwd_at(f: Callable, args: list, nums: tuple, trees: list, argnums: Any,
               has_aux: bool, chunks: tuple) -> Any:
    g = _partial(f, args, nums)
    in_leaves = nest.flatten(trees)
    per_in: list = []
    out = aux = None
    for k, x in enumerate(in_leaves):
        def column(t: Tensor, k: int = k) -> Any:
            tans = [t if j == k else Tensor(np.zeros_like(xj._value)) for j, xj in enumerate(in_leaves)]
            with ForwardAccumulator(in_leaves, tans) as acc:
                y = g(*trees)
            y, a = y if has_aux else (y, None)
            # The primal output does not depend on the batched tangent: out_axes None.
            return nest.map_structure(lambda o: _zero_if_none(acc.jvp(o), o), y), y, a
        cols, out, aux = _over_basis(column, x, chunks, out_axes=(0, None, None))
        _check_outputs(out, "jacfwd")
        per_in.append(nest.flatten(cols))
    flat_out = nest.flatten(out)
    per_out = []
    for j, o in enumerate(flat_out):
        jacs = [_rows_to_jacobian(per_in[k][j], shape_of(o), shape_of(x), False)
                for k, x in enumerate(in_leaves)]
        per_out.append(_pick(_regroup(jacs, trees), argnums))
    jac = nest.pack_sequence_as(out, per_out)
    return (jac, aux) if has_aux else jac


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, mode: str = "auto",
             chunk_size: int | None = None, progress: bool = False) -> Callable:
    """The Jacobian, by forward or reverse mode.

    ``mode="auto"`` runs `f` once under a tape and then picks forward mode when the
    differentiated inputs have fewer elements than the outputs (fewer JVPs than VJPs),
    reverse mode otherwise; ``"forward"``/``"fwd"`` or ``"reverse"``/``"rev"`` force one.
    ``progress=True`` reports the chunks of a long chunked Jacobian (tqdm when installed).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.jacobian(lambda x: tf.reduce_sum(x * x))(np.array([1., 2.])).numpy()
        array([2., 4.])
    """
    modes = {"auto": "auto", "forward": "fwd", "fwd": "fwd", "reverse": "rev", "rev": "rev"}
    if mode not in modes:
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse'; got {mode!r}.")
    chosen = modes[mode]

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacobian")
        args, trees = _split(args, nums, "jacobian")
        chunks = (chunk_size, progress)
        if chosen == "fwd":
            return _jacfwd_at(f, args, nums, trees, argnums, False, chunks)
        out, vjp_fn = vjp(_partial(f, args, nums), *trees)
        _check_outputs(out, "jacobian")
        n_in = sum(int(np.size(x._value)) for x in nest.flatten(trees))
        n_out = sum(int(np.size(o._value)) for o in nest.flatten(out))
        if chosen == "auto" and n_in < n_out:
            return _jacfwd_at(f, args, nums, trees, argnums, False, chunks)
        return _jacrev_from(out, vjp_fn, trees, argnums, chunks)

    return wrapped


def hessian(f: Callable, argnums: int | Sequence[int] = 0,
            chunk_size: int | None = None) -> Callable:
    """The Hessian of a scalar function: forward-over-reverse, ``jacfwd(jacrev(f))``.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.hessian(lambda x: tf.reduce_sum(x ** 3.))(np.array([1., 2.])).numpy()
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    return jacfwd(jacrev(f, argnums, chunk_size=chunk_size), argnums, chunk_size=chunk_size)


def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product H v of a scalar function, forward-over-reverse
    (the JVP of the gradient), without forming H.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.hvp(lambda x: tf.reduce_sum(x ** 3.), (np.array([1., 2.]),),
        ...        (np.array([1., 0.]),)).numpy()
        array([6., 0.])
    """
    argnums = tuple(range(len(primals)))
    _, out = jvp(grad(f, argnums=argnums), tuple(primals), tuple(tangents))
    return out[0] if len(primals) == 1 else out
