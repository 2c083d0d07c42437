"""Maxwell cases run under mpiexec from pytest (run_case and read_final: mpirun.py)."""

from __future__ import annotations

from mpirun import max_relative_difference, read_final, run_case  # noqa: F401  (the Maxwell tests' helpers)

CASE = """
[mesh]
elements = [3, 2, 2]
periodic = [true, false, false]
boundary = "pec"
[mesh.boundaries]
zmax = "absorbing"
[mesh.deform]
x = "0.04*sin(pi*x)*sin(pi*y)*sin(pi*z)"
y = "0.03*sin(pi*x)*sin(pi*y)*sin(pi*z)"
[discretization]
order = 4
[initial]
Ez = "sin(pi*y)*cos(2*pi*x)"
Hx = "sin(pi*y)*sin(pi*z)*exp(x)"
Ey = "cos(3*x)*sin(pi*z)"
[time]
t_end = 0.15
[output]
every = 4
formats = ["hdf5", "nek"]
"""

# 8 x 2 x 2 elements: every rank of 2 or 3 holds elements with no face on another rank, so the
# stage really splits into an interior block (during the exchange) and a halo block (after).
# The split form named: the overlapped stage is the collocated forms' ("auto" runs the Galerkin
# form on this curved box, which exchanges before its whole rhs).
WIDE = CASE.replace("elements = [3, 2, 2]", "elements = [8, 2, 2]").replace("order = 4\n", 'order = 4\nvolume_form = "split"\n')
