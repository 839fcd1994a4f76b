"""Damaging a file's bytes the same way in each loader's fuzz test."""

from __future__ import annotations


def damaged(raw: bytes, edits: list, cut: int | None) -> bytes:
    """`raw` with byte ``at % len`` set to `byte` for each (at, byte) of `edits`, then cut
    to ``cut % (len + 1)`` bytes where `cut` is given."""
    out = bytearray(raw)
    for at, byte in edits:
        out[at % len(out)] = byte
    if cut is not None:
        out = out[:cut % (len(out) + 1)]
    return bytes(out)
