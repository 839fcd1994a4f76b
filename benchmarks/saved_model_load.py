"""Loading a saved Jacobian function and its first call: tapeflow against TensorFlow.

The seed problem's CNN (benchmarks/cnn.py) as a module whose traced method returns the
batch Jacobian of its outputs with respect to its inputs (input_signature [None, 784]),
written once against TensorFlow's API and saved with each framework's
`tf.saved_model.save`. Each repetition is a new Python process with the framework
imported already (import time is not the framework's load time): it loads the directory
and calls the loaded function once at a batch of 64, which is the time reported ("load +
first call"), then calls it again (the steady call). Repetitions alternate the two
frameworks; medians and the ratio tapeflow / TensorFlow are reported, with the largest
difference of the two frameworks' Jacobians (the same weights and inputs).

Run: python benchmarks/saved_model_load.py [--repeat 7] [--json PATH]
(TensorFlow's side needs tensorflow installed; without it only tapeflow's is timed.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cnn  # noqa: E402

BATCH = 64

# One child process: load, first call, steady call; prints JSON.
_CHILD = """
import json, sys, time
import numpy as np
framework, directory, inputs = sys.argv[1], sys.argv[2], sys.argv[3]
if framework == "tensorflow":
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
else:
    import tapeflow as tf
x = tf.constant(np.load(inputs))
start = time.perf_counter()
loaded = tf.saved_model.load(directory)
j = loaded.batch_jacobian(x).numpy()
first = time.perf_counter() - start
start = time.perf_counter()
loaded.batch_jacobian(x).numpy()
steady = time.perf_counter() - start
np.save(inputs + "." + framework + ".npy", j)
print(json.dumps({"first": first, "steady": steady}))
"""


def _save(framework: str, directory: str) -> None:
    tf: Any = importlib.import_module("tensorflow" if framework == "tensorflow" else "tapeflow")
    model = cnn.tf_api_model(tf, cnn.weights())

    class Jacobians(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = [tf.Variable(v) for v in cnn.weights().values()]

        @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32)])
        def batch_jacobian(self, x: Any) -> Any:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = model(x)
            return tape.batch_jacobian(y, x)

    tf.saved_model.save(Jacobians(), directory)


def _child(framework: str, directory: str, inputs: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _CHILD, framework, directory, inputs],
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        raise RuntimeError(f"{framework} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(repeat: int = 7) -> dict[str, Any]:
    frameworks = ["tapeflow"] + (["tensorflow"] if importlib.util.find_spec("tensorflow")
                                 else [])
    root = tempfile.mkdtemp(prefix="tapeflow-savedmodel-bench-")
    inputs = os.path.join(root, "x.npy")
    np.save(inputs, cnn.inputs(BATCH))
    for fw in frameworks:
        _save(fw, os.path.join(root, fw))
    times: dict[str, dict[str, list[float]]] = {fw: {"first": [], "steady": []}
                                                 for fw in frameworks}
    for _ in range(repeat):
        for fw in frameworks:
            row = _child(fw, os.path.join(root, fw), inputs)
            for k in row:
                times[fw][k].append(row[k])
    out: dict[str, Any] = {"batch": BATCH, "repeat": repeat}
    for fw in frameworks:
        for k, values in times[fw].items():
            out[f"{fw}_{k}_ms"] = 1e3 * statistics.median(values)
    if "tensorflow" in frameworks:
        got = np.load(inputs + ".tapeflow.npy")
        want = np.load(inputs + ".tensorflow.npy")
        out["max_abs_difference"] = float(np.abs(got - want).max())
        for k in ("first", "steady"):
            out[f"ratio_{k}"] = out[f"tapeflow_{k}_ms"] / out[f"tensorflow_{k}_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    result = measure(args.repeat)
    print(f"seed CNN batch Jacobian, batch {BATCH}: load + first call, then a steady call "
          f"(medians of {args.repeat} processes each)")
    for fw in ("tapeflow", "tensorflow"):
        if f"{fw}_first_ms" in result:
            print(f"  {fw:10s} load + first call {result[f'{fw}_first_ms']:8.1f} ms   "
                  f"steady call {result[f'{fw}_steady_ms']:7.2f} ms")
    if "ratio_first" in result:
        print(f"  ratio tapeflow / TensorFlow: load + first call {result['ratio_first']:.2f}x, "
              f"steady {result['ratio_steady']:.2f}x; Jacobians differ by at most "
              f"{result['max_abs_difference']:.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
