"""HDF5 files read in a child process, so a damaged one cannot crash this one.

NOTE(h5-isolated): h5py parses a file with the HDF5 C library, which crashes the process
(SIGSEGV) on some damaged files: a bit flipped in a weights file is enough, about once
in five seeds of 150 flips. A file being loaded is hostile input, so its groups,
attributes and datasets are read by a child Python process (h5py and NumPy only) and
sent back as data: a JSON line describing the tree, then each array as `np.save` writes
it (no pickle; `np.load(allow_pickle=False)` reads it). Here the tree answers the part of
h5py's API the Keras loaders use (`attrs`, `in`, `[...]` by path, `get`, `len`,
`visititems`, a dataset's ``[()]``). A child that dies or fails becomes a
`DataLossError` naming the file; this process never runs the C library on it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any, Callable

import numpy as np

from ..errors import DataLossError

__all__ = ["read_tree", "Group"]

_CHILD = r"""
import io, json, sys
import numpy as np, h5py
out = sys.stdout.buffer
arrays = []

def value(v):
    if isinstance(v, bytes):
        return {"bytes": v.decode("latin-1")}
    if isinstance(v, str):
        return {"str": v}
    a = np.asarray(v)
    if a.dtype.kind == "O":
        items = [x.decode("latin-1") if isinstance(x, bytes) else str(x) for x in a.ravel()]
        return {"strings": items, "shape": list(a.shape)}
    if a.dtype.kind not in "biufcSU":
        raise TypeError(f"an attribute or dataset of dtype {a.dtype}")
    arrays.append(np.array(a, order="C"))  # (ascontiguousarray makes a scalar 1-D)
    return {"array": len(arrays) - 1}

def node(obj):
    attrs = {k: value(obj.attrs[k]) for k in obj.attrs}
    if isinstance(obj, h5py.Dataset):
        return {"dataset": value(obj[()]), "attrs": attrs}
    return {"group": {k: node(obj[k]) for k in obj}, "attrs": attrs}

source = sys.argv[1] if sys.argv[1] != "-" else io.BytesIO(sys.stdin.buffer.read())
with h5py.File(source, "r") as f:
    tree = node(f)
out.write(json.dumps(tree).encode() + b"\n")
for a in arrays:
    np.save(out, a, allow_pickle=False)
out.flush()
"""


class Dataset:
    """A dataset read from the file: ``d[()]`` is its value."""

    def __init__(self, value: Any, attrs: dict) -> None:
        self._value = value
        self.attrs = attrs

    def __getitem__(self, key: Any) -> Any:
        return self._value[key] if isinstance(self._value, np.ndarray) else self._value


class Group:
    """A group read from the file, with the part of h5py's Group API the loaders use."""

    def __init__(self, children: dict, attrs: dict, name: str = "") -> None:
        self._children = children
        self.attrs = attrs
        self.name = name

    def _find(self, path: str) -> Any:
        node: Any = self
        for part in [p for p in path.split("/") if p]:
            if not isinstance(node, Group) or part not in node._children:
                return None
            node = node._children[part]
        return node

    def __contains__(self, path: str) -> bool:
        return self._find(path) is not None

    def __getitem__(self, path: str) -> Any:
        found = self._find(path)
        if found is None:
            raise KeyError(f"no object {path!r} in {self.name or '/'}")
        return found

    def get(self, path: str, default: Any = None) -> Any:
        found = self._find(path)
        return default if found is None else found

    def __len__(self) -> int:
        return len(self._children)

    def __iter__(self) -> Any:
        return iter(self._children)

    def visititems(self, fn: Callable[[str, Any], Any]) -> Any:
        def visit(group: "Group", prefix: str) -> Any:
            for name, child in group._children.items():
                path = f"{prefix}{name}"
                result = fn(path, child)
                if result is not None:
                    return result
                if isinstance(child, Group):
                    result = visit(child, path + "/")
                    if result is not None:
                        return result
            return None
        return visit(self, "")


def read_tree(path: str, source: bytes | None = None) -> Group:
    """The HDF5 file at `path` (or the bytes `source`, a zip member) read by a child
    process into a tree (NOTE(h5-isolated)); a DataLossError naming `path` where the file
    is not readable HDF5 or the child dies on it."""
    done = subprocess.run([sys.executable, "-c", _CHILD, "-" if source is not None else path],
                          input=source, capture_output=True, timeout=3600)
    if done.returncode < 0:
        raise DataLossError(f"{path!r} crashed the HDF5 library reading it (signal "
                            f"{-done.returncode}, in a child process): a damaged file.")
    if done.returncode:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        raise DataLossError(f"{path!r} is not a readable HDF5 file ({last[0]}).")
    stream = io.BytesIO(done.stdout)
    try:
        header = json.loads(stream.readline().decode())
        arrays: list = []
        while stream.tell() < len(done.stdout):
            arrays.append(np.load(stream, allow_pickle=False))
        return _node(header, arrays, "")
    except (ValueError, KeyError, TypeError, IndexError, EOFError) as e:
        raise DataLossError(f"{path!r}: its HDF5 contents could not be read back ({e}).") \
            from None


def _value(v: dict, arrays: list) -> Any:
    if "bytes" in v:
        return v["bytes"].encode("latin-1")
    if "str" in v:
        return v["str"]
    if "strings" in v:
        return np.array(v["strings"], dtype=object).reshape(v["shape"])
    return arrays[v["array"]]


def _node(d: dict, arrays: list, name: str) -> Any:
    attrs = {k: _value(v, arrays) for k, v in d["attrs"].items()}
    if "dataset" in d:
        return Dataset(_value(d["dataset"], arrays), attrs)
    return Group({k: _node(c, arrays, f"{name}/{k}") for k, c in d["group"].items()}, attrs,
                 name)
