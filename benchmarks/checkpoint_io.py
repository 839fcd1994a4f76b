"""Checkpoint save and restore of a model's variables against the disk floor.

The model: float32 variables of a 100 MB MLP-like set of shapes (a few large matrices
and many small vectors, as a trained network's). tapeflow's `Checkpoint.write` and
`restore` (with their checksums and checks, docs/saving.md) are timed against writing
the same arrays with `np.save` into one file and reading them back with `np.load` (no
checksums, no checks: the floor). Repetitions interleave the two, in one directory on
one disk, each writing new files (as `CheckpointManager.save` does; the previous
repetition's are deleted untimed); the medians and their ratios are reported (the
target: within 1.5x).

Run: python benchmarks/checkpoint_io.py [--mb 100] [--repeat 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

import numpy as np

import tapeflow as tf


def _model_arrays(mb: float) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    width = int((mb * 2 ** 20 / 4 / 4) ** 0.5)  # four width x width matrices hold the bulk
    shapes = [(width, width)] * 4 + [(width,)] * 4 + [(64,)] * 200 + [(3, 3, 16, 16)] * 20
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(mb: float = 100.0, repeat: int = 7) -> dict[str, Any]:
    arrays = _model_arrays(mb)
    variables = [tf.Variable(a) for a in arrays]
    ckpt = tf.train.Checkpoint(weights=variables)
    total = sum(a.nbytes for a in arrays)
    directory = tempfile.mkdtemp(prefix="tapeflow-ckpt-bench-")
    def floor_save(path: str) -> None:
        with open(path, "wb") as f:
            for a in arrays:
                np.save(f, a)

    def floor_load(path: str) -> None:
        with open(path, "rb") as f:
            for _ in arrays:
                np.load(f, allow_pickle=False)

    times: dict[str, list[float]] = {"save": [], "floor_save": [], "restore": [],
                                     "floor_load": []}
    try:
        for i in range(repeat):
            prefix = os.path.join(directory, f"ckpt-{i}")
            floor_path = os.path.join(directory, f"floor-{i}.npy")
            times["save"].append(_timed(lambda: ckpt.write(prefix)))
            times["floor_save"].append(_timed(lambda: floor_save(floor_path)))
            times["restore"].append(_timed(lambda: ckpt.restore(prefix)))
            times["floor_load"].append(_timed(lambda: floor_load(floor_path)))
            for name in os.listdir(directory):
                if not name.startswith((f"ckpt-{i}.", f"floor-{i}.")):
                    os.remove(os.path.join(directory, name))
        ckpt.restore(prefix).assert_consumed()
        for v, a in zip(variables, arrays):
            np.testing.assert_array_equal(v.numpy(), a)
    finally:
        shutil.rmtree(directory)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"megabytes": total / 2 ** 20, "variables": len(arrays), **{f"{k}_s": v for k, v in med.items()},
            "save_over_floor": med["save"] / med["floor_save"],
            "restore_over_floor": med["restore"] / med["floor_load"]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    result = measure(args.mb, args.repeat)
    print(f"{result['megabytes']:.0f} MB in {result['variables']} variables")
    print(f"save     {result['save_s'] * 1e3:8.1f} ms   np.save floor {result['floor_save_s'] * 1e3:8.1f}"
          f" ms   ratio {result['save_over_floor']:.2f}")
    print(f"restore  {result['restore_s'] * 1e3:8.1f} ms   np.load floor {result['floor_load_s'] * 1e3:8.1f}"
          f" ms   ratio {result['restore_over_floor']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
