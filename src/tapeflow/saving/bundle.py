"""The checkpoint file format: raw arrays in a data file, described by a JSON index.

NOTE(bundle-format): a checkpoint at prefix ``P`` is two files, named as TensorFlow
names them (user code globs for them): ``P.data-00000-of-00001`` holds each array's
bytes, C order, little-endian, each starting at a multiple of 64 bytes; ``P.index`` is
UTF-8 JSON::

    {"format": "tapeflow-checkpoint", "version": 1,
     "data_file": "P.data-00000-of-00001" (its base name), "data_bytes": total size,
     "entries": {key: {"dtype": "float32", "shape": [3, 4], "offset": 0,
                       "nbytes": 48, "checksum": ...}, ...},
     "index_crc32": CRC-32 of this JSON without this field (sorted keys, compact)}

An array's checksum (`checksum`): its bytes, zero-padded to whole 4 KiB blocks, read as
little-endian uint64 words; each block's words summed modulo 2**64; the CRC-32 of those
block sums (little-endian uint64). Any flipped bit changes its block's sum, and moved
blocks change the CRC of the sums; NumPy sums at memory speed where CRC-32 over the
whole array would cost more than reading it. It guards against damage, not tampering.

Reading trusts nothing in the files: the format and version, every field's type, each
dtype (a tapeflow dtype's name), shape, offset and size against the data file's, and
the checksums of the index and of every array are checked before any value is used,
and nothing is executed (no pickle). A bad file raises `DataLossError` naming it.

Writes are atomic against the process being killed: both files are written under
temporary names and renamed into place, the index last (a checkpoint is complete when
its index exists), and the directory's ``checkpoint`` pointer file the same way, after
the checkpoint it points to is complete. (The files are not fsync'ed: a checkpoint
survives the process, not the machine losing power mid-write.)
"""

from __future__ import annotations

import json
import math
import os
import queue
import threading
import zlib
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import DataLossError, NotFoundError

__all__ = ["FORMAT", "VERSION", "DATA_SUFFIX", "INDEX_SUFFIX", "write_bundle", "read_index",
           "read_signed_json", "canonical",
           "read_bundle", "write_text", "exists", "checksum", "temporary_name"]

FORMAT = "tapeflow-checkpoint"
VERSION = 1
DATA_SUFFIX = ".data-00000-of-00001"
INDEX_SUFFIX = ".index"
_ALIGN = 64


def exists(prefix: str) -> bool:
    """Whether a complete checkpoint is at `prefix` (its index is written last)."""
    return os.path.isfile(prefix + INDEX_SUFFIX)


def _bytes_of(a: np.ndarray) -> np.ndarray:
    """The array's bytes, C order, little-endian, as a flat uint8 array (no copy if it is
    contiguous and native little-endian already)."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.reshape(-1).view(np.uint8)


def temporary_name(path: str) -> str:
    """A name beside `path` for writing it before renaming (unique per thread)."""
    return f"{path}.tmp{os.getpid()}-{threading.get_ident()}"


def write_text(path: str, text: str) -> None:
    """Replace the file at `path` by `text` atomically (a temporary file renamed)."""
    tmp = temporary_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def canonical(index: dict) -> bytes:
    """The bytes a CRC-32 of a JSON object is over: sorted keys, compact."""
    return json.dumps(index, sort_keys=True, separators=(",", ":")).encode()


def write_bundle(prefix: str, arrays: dict[str, np.ndarray], dtypes: dict[str, str]) -> None:
    """Write `arrays` (key -> array; `dtypes`: key -> tapeflow dtype name) as a checkpoint
    at `prefix` (NOTE(bundle-format))."""
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    raw = {k: _bytes_of(a) for k, a in arrays.items()}
    entries, offset = {}, 0
    for k in sorted(raw):
        entries[k] = {"dtype": dtypes[k], "shape": [int(d) for d in np.shape(arrays[k])],
                      "offset": offset, "nbytes": int(raw[k].size)}
        offset += -(-raw[k].size // _ALIGN) * _ALIGN
    # The checksums run beside the writes: both release the GIL on large buffers.
    crcs: dict[str, int] = {}
    summing = threading.Thread(target=lambda: crcs.update(
        (k, checksum(raw[k])) for k in sorted(raw)))
    summing.start()
    data_path, index_path = prefix + DATA_SUFFIX, prefix + INDEX_SUFFIX
    data_tmp = temporary_name(data_path)
    try:
        with open(data_tmp, "wb") as f:
            for k in sorted(raw):
                f.seek(entries[k]["offset"])
                f.write(raw[k])
            f.truncate(offset)
    finally:
        summing.join()
    for k, entry in entries.items():
        entry["checksum"] = crcs[k]
    index = {"format": FORMAT, "version": VERSION, "data_file": os.path.basename(data_path),
             "data_bytes": offset, "entries": entries}
    index["index_crc32"] = zlib.crc32(canonical(index))
    os.replace(data_tmp, data_path)
    write_text(index_path, json.dumps(index, sort_keys=True, indent=1))


def read_signed_json(path: str, kind: str, fmt: str, version: int, crc_key: str) -> dict:
    """The JSON object of the file at `path` (a `kind` of file), checked: its format,
    version and CRC-32 (`crc_key`, over the object without it, `canonical`); a
    DataLossError naming the file otherwise."""
    try:
        with open(path, "rb") as f:
            found = json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise DataLossError(f"{path!r} is not a {kind} (not JSON: {e}).") from None
    if not isinstance(found, dict) or found.get("format") != fmt:
        raise DataLossError(f"{path!r} is not a tapeflow {kind} (expected format {fmt!r}).")
    if found.get("version") != version:
        raise DataLossError(f"{path!r} has format version {found.get('version')!r}; this "
                            f"tapeflow reads version {version}.")
    body = {k: v for k, v in found.items() if k != crc_key}
    if found.get(crc_key) != zlib.crc32(canonical(body)):
        raise DataLossError(f"{path!r} is corrupted (its checksum does not match).")
    return found


def read_index(prefix: str) -> dict:
    """The checked index of the checkpoint at `prefix` (NOTE(bundle-format))."""
    index_path = prefix + INDEX_SUFFIX
    if not os.path.isfile(index_path):
        raise NotFoundError(f"no checkpoint at {prefix!r}: {index_path!r} does not exist.")
    index = read_signed_json(index_path, "checkpoint index", FORMAT, VERSION, "index_crc32")
    entries, size = index.get("entries"), index.get("data_bytes")
    if not isinstance(entries, dict) or not _is_count(size) or \
            not isinstance(index.get("data_file"), str):
        raise DataLossError(f"{index_path!r} is malformed (entries, data_bytes, data_file).")
    for key, e in entries.items():
        _check_entry(index_path, key, e, size)
    return index


def _is_count(x: Any) -> bool:
    return type(x) is int and x >= 0


def _check_entry(path: str, key: str, e: Any, size: int) -> None:
    if not (isinstance(e, dict) and isinstance(e.get("shape"), list)
            and all(_is_count(d) for d in e["shape"]) and _is_count(e.get("offset"))
            and _is_count(e.get("nbytes")) and _is_count(e.get("checksum"))
            and isinstance(e.get("dtype"), str)):
        raise DataLossError(f"{path!r}: the entry {key!r} is malformed.")
    try:
        dtype = _dt.as_dtype(e["dtype"])._np
    except (TypeError, ValueError, KeyError):
        raise DataLossError(f"{path!r}: the entry {key!r} has dtype {e['dtype']!r}, which is "
                            "not a tapeflow dtype.") from None
    if math.prod(e["shape"]) * dtype.itemsize != e["nbytes"] or \
            e["offset"] + e["nbytes"] > size:
        raise DataLossError(f"{path!r}: the entry {key!r} ({e['dtype']} {e['shape']}, "
                            f"{e['nbytes']} bytes at {e['offset']}) does not fit its data.")


def read_bundle(prefix: str, keys: Any = None) -> dict[str, np.ndarray]:
    """The arrays of the checkpoint at `prefix` (those of `keys` if given), every one
    checked (NOTE(bundle-format)): all or, with an error naming the file, none."""
    index = read_index(prefix)
    data_path = os.path.join(os.path.dirname(prefix), index["data_file"])
    if os.path.basename(index["data_file"]) != index["data_file"]:
        raise DataLossError(f"{prefix + INDEX_SUFFIX!r} names a data file outside its "
                            f"directory: {index['data_file']!r}.")
    try:
        actual = os.path.getsize(data_path)
    except OSError:
        raise DataLossError(f"the data file of the checkpoint {prefix!r} is missing: "
                            f"{data_path!r}.") from None
    if actual != index["data_bytes"]:
        raise DataLossError(f"{data_path!r} has {actual} bytes; its index says "
                            f"{index['data_bytes']} (truncated or from another checkpoint).")
    entries = index["entries"]
    wanted = sorted(entries) if keys is None else [k for k in keys if k in entries]
    buf = np.empty(index["data_bytes"], np.uint8)  # not zero-filled: every byte is read
    crcs = _read_summing(data_path, buf, [(k, entries[k]["offset"], entries[k]["nbytes"])
                                          for k in wanted])
    bad = [k for k in wanted if crcs[k] != entries[k]["checksum"]]
    if bad:
        raise DataLossError(f"{data_path!r} is corrupted: the checksum of {sorted(bad)[0]!r} "
                            "does not match its index.")
    return {k: buf[entries[k]["offset"]:entries[k]["offset"] + entries[k]["nbytes"]]
            .view(_dt.as_dtype(entries[k]["dtype"])._np).reshape(entries[k]["shape"])
            for k in wanted}


_CHUNK = 8 << 20


def _read_summing(path: str, buf: np.ndarray, spans: list) -> dict[str, int]:
    """Read the file at `path` into `buf`, and the checksum of each span (key, offset,
    size) of it: summed by another thread as soon as a span has been read (NumPy's sums
    and the reads release the GIL), so checking costs little more than reading."""
    spans = sorted(spans, key=lambda s: s[1] + s[2])
    sums: dict[str, int] = {}
    ready: "queue.SimpleQueue[int | None]" = queue.SimpleQueue()

    def summing() -> None:
        j = 0
        while (upto := ready.get()) is not None:
            while j < len(spans) and spans[j][1] + spans[j][2] <= upto:
                k, start, size = spans[j]
                sums[k] = checksum(buf[start:start + size])
                j += 1

    worker = threading.Thread(target=summing)
    worker.start()
    try:
        view, pos = memoryview(buf), 0
        with open(path, "rb", buffering=0) as f:
            while pos < buf.size:
                n = f.readinto(view[pos:pos + _CHUNK])
                if not n:
                    raise DataLossError(f"{path!r} changed while it was read.")
                pos += n
                ready.put(pos)
    finally:
        ready.put(None)
        worker.join()
    return sums


_BLOCK = 512  # uint64 words: 4 KiB


def checksum(raw: np.ndarray) -> int:
    """The checksum of bytes `raw` (a flat uint8 array), NOTE(bundle-format)."""
    full = raw.size // (8 * _BLOCK) * (8 * _BLOCK)
    sums = [np.add.reduce(raw[:full].view("<u8").reshape(-1, _BLOCK), axis=1, dtype=np.uint64)]
    if full < raw.size:
        tail = np.zeros(8 * _BLOCK, np.uint8)
        tail[:raw.size - full] = raw[full:]
        sums.append(np.add.reduce(tail.view("<u8"), keepdims=True, dtype=np.uint64))
    return zlib.crc32(np.concatenate(sums).astype("<u8").tobytes())
