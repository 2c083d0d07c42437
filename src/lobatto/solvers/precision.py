"""A preconditioner applied in float32 inside a float64 iteration (NekBox's single-precision
preconditioning): the preconditioner moves half the bytes, the outer iteration keeps float64
residuals and reaches float64 tolerances. The float32 rounding makes M vary slightly from
one application to the next, so pair it with ``flexible_cg`` or ``fgmres``.

The residual is scaled by a power of two before the cast (exact, so the result does not
depend on it) to keep it inside float32's range whatever the units of the problem: a
residual of 1e-40 would otherwise flush to zero, one of 1e40 overflow. The scale must be
the same on every rank (the preconditioner sums values across ranks), so with a
communicator of several ranks the largest entry is reduced over them.
"""

from __future__ import annotations

import math

import numpy as np

from lobatto.machine.parallel import allreduce


class LowPrecision:
    """``LowPrecision(M32, backend, comm=comm)``: r (float64) -> M32(r as float32), returned
    as float64.

    ``M32`` must work on ``dtype`` arrays (built from float32 operators: that is where the
    saving is)."""

    def __init__(self, M, backend, dtype="float32", comm=None):
        self.M, self.xp, self.dtype = M, backend.xp, np.dtype(dtype)
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None

    def _scale(self, r):
        xp = self.xp
        largest = xp.abs(r).max()
        if self.comm is not None:
            largest = allreduce(self.comm, float(largest), "max")
            _, exponent = math.frexp(max(largest, np.finfo(np.float64).tiny))
            return 2.0 ** -exponent
        largest = xp.maximum(largest, np.finfo(r.dtype).tiny)
        _, exponent = xp.frexp(largest)  # one rank: stays on the device, no synchronisation
        return xp.ldexp(xp.ones((), dtype=r.dtype), -exponent)

    def __call__(self, r):
        scale = self._scale(r)
        z = self.M((r * scale).astype(self.dtype))
        return z.astype(r.dtype) / scale
