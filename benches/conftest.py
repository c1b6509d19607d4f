"""Benchmark settings shared by every suite in benches/."""

import os

# numpy's bundled OpenBLAS starts spinning worker threads that steal the CPU from the code
# being timed on small machines; none of the benchmarks needs BLAS threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
