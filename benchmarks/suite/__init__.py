"""The workloads of the benchmark suite (run them with benchmarks/run.py).

One module per workload; each exposes ``NAME``, ``TITLE``, ``ORDER`` and
``cases(size) -> list[Case]`` (and optionally ``sweep(size) -> Sweep`` for the
figures); see `suite.common` for the interface. Importing a module imports no
peer framework: each case imports its framework in its own setup.
"""
