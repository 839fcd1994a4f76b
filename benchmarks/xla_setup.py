"""Imported first by the standalone XLA scripts (xla_chain.py, xla_conv_grad.py): one
thread per library, as the suite (benchmarks/run.py), set before NumPy and JAX load; JAX
on the CPU; tapeflow found in src/ by a checkout without `pip install -e .`."""

import os
import sys

# PJRT_NPROC: the size of XLA's CPU compute pool (JAX's and the compiled calls'), else
# one thread per core.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "PJRT_NPROC"):
    os.environ[_name] = "1"
_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
if _XLA not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _XLA).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "src"))
