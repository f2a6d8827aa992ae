"""Helpers of the Python client tests: the limits of the "small" server and reference
math. Servers come from myops_testing (quick_server)."""

from __future__ import annotations

import numpy as np

# Limits of the "small" server: 100 elements, 4 KiB messages.
SMALL_MAX_ELEMENTS = 100
SMALL_MAX_MESSAGE_BYTES = 4096


def reference(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """What the server computes, for alpha a power of two (bit-exact then).

    The kernel computes fma(alpha, x, beta) in x's dtype (float32, float64) or in
    float32 for float16/bfloat16, rounded once to x's dtype. When alpha is a power
    of two, alpha * x is exact, so numpy's separate multiply and add round once,
    at the add, exactly like the fma.
    """
    if x.dtype in (np.float32, np.float64):
        return x.dtype.type(alpha) * x + x.dtype.type(beta)
    wide = np.float32(alpha) * x.astype(np.float32) + np.float32(beta)
    return wide.astype(x.dtype)
