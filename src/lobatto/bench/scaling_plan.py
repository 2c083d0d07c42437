"""What ``lobatto bench scaling`` runs: each point's rank count and element box (a size is a
count, made a near-cubic box, or a box; per rank for --weak, in total for --strong), each rank's
elements under the run's partitioner, and the generated Maxwell case of one run."""

from __future__ import annotations

import math

import numpy as np

from lobatto.discretization.gll import gll_points
from lobatto.errors import InputError
from lobatto.mesh.partition import PARTITIONERS, rcb_box_part

MODES = ("strong", "weak")
#: --overlap settings and what each writes as [parallel] overlap
OVERLAP = {"on": "true", "off": "false", "auto": '"auto"'}
CFL = 0.5  # of the smallest GLL spacing; the upwind lsrk45 bound is 0.63


# Sizes ------------------------------------------------------------------------------------------
def near_cube(count: int) -> tuple[int, int, int]:
    """(a, b, c), a >= b >= c, a * b * c = count, with the smallest largest side."""
    best = None
    for c in range(1, round(count ** (1 / 3)) + 2):
        if count % c:
            continue
        for b in range(c, math.isqrt(count // c) + 1):
            if (count // c) % b == 0:
                a = count // (c * b)
                if a >= b and (best is None or (a, -c) < (best[0], -best[2])):
                    best = (a, b, c)
    return best


def parse_size(text: str) -> tuple[int, int, int]:
    """``"64"`` -> the near-cubic box of 64 elements; ``"4x4x8"`` -> (4, 4, 8)."""
    parts = str(text).lower().split("x")
    if len(parts) not in (1, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InputError(f"--sizes: '{text}' is not a positive element count (64) or a box NXxNYxNZ (4x4x8)")
    if len(parts) == 1:
        return near_cube(int(parts[0]))
    return tuple(int(p) for p in parts)


def weak_box(per_rank: tuple[int, int, int], ranks: int) -> tuple[int, int, int]:
    """The total box for ``ranks`` copies of the per-rank box: the ranks as a near-cubic grid,
    its largest factor along the per-rank box's shortest side (the most cubic total)."""
    grid = near_cube(ranks)
    axes = np.argsort(per_rank, kind="stable")  # shortest side first
    total = list(per_rank)
    for factor, axis in zip(grid, axes):
        total[axis] *= factor
    return tuple(int(n) for n in total)


def bisection_counts(count: int, parts: int) -> list[int]:
    """Part sizes of ``count`` elements bisected as rsb does (mesh.partition.rsb_part): the
    first parts//2 parts get count * (parts//2) // parts, recursively."""
    if parts == 1:
        return [count]
    left = parts // 2
    n_left = count * left // parts
    return bisection_counts(n_left, left) + bisection_counts(count - n_left, parts - left)


def elements_per_rank(elements, ranks: int, partitioner: str = "rcb") -> list[int] | None:
    """Elements of each rank under the partition the run will use (lobatto.mesh.partition);
    None for metis, whose part sizes only METIS knows."""
    if partitioner == "rsb":
        return bisection_counts(math.prod(elements), ranks)
    if partitioner != "rcb":
        return None
    out = []
    for part in range(ranks):
        lo, hi = rcb_box_part(elements, ranks, part)
        out.append(int(np.prod(hi - lo)))
    return out


def plan(mode: str, ranks, sizes, overlaps=("auto",), partitioner: str = "rcb") -> list[dict]:
    """One entry per run: rank count, the size as asked, the overlap setting, the total box,
    each rank's elements; sizes in the order given, each over the overlap settings and ranks."""
    if mode not in MODES:
        raise InputError(f"scaling mode '{mode}': expected one of {', '.join(MODES)}")
    if partitioner not in PARTITIONERS:
        raise InputError(f"--partitioner '{partitioner}': expected one of {', '.join(PARTITIONERS)}")
    for overlap in overlaps:
        if overlap not in OVERLAP:
            raise InputError(f"--overlap '{overlap}': expected on, off or auto")
    runs = []
    for size in sizes:
        box = parse_size(size)
        for overlap in dict.fromkeys(overlaps):
            for p in ranks:
                total = weak_box(box, p) if mode == "weak" else box
                if math.prod(total) < p:
                    count = math.prod(total)
                    raise InputError(f"--sizes {size}: {count} element{'s' if count != 1 else ''} cannot be shared "
                                     f"by {p} ranks")
                runs.append({"ranks": p, "size": str(size), "overlap_setting": overlap, "partitioner": partitioner,
                             "elements": list(total), "elements_per_rank": elements_per_rank(total, p, partitioner)})
    return runs


# The case ---------------------------------------------------------------------------------------
def time_step(order: int) -> float:
    """CFL times the smallest GLL spacing of a unit element (wave speed 1)."""
    x = gll_points(order)
    return CFL * float(x[1] - x[0]) / 2


def case_text(elements, order: int, steps: int, backend: str, precision: str = "float64",
              overlap: str = "auto", partitioner: str = "rcb") -> str:
    """A Maxwell box of unit elements whose run takes exactly ``steps`` steps and writes nothing;
    ``overlap``: on, off or auto ([parallel] overlap true, false, "auto")."""
    nx, ny, nz = elements
    dt = time_step(order)
    return f"""# lobatto bench scaling: {nx}x{ny}x{nz} elements, N = {order}, {steps} steps
[mesh]
generator = "box"
elements = [{nx}, {ny}, {nz}]
lower = [0.0, 0.0, 0.0]
upper = [{nx}.0, {ny}.0, {nz}.0]
boundary = "pec"

[discretization]
order = {order}
flux = "upwind"

[physics]
equations = "maxwell"

[initial]
# the box's TM110 mode: a smooth field that stays bounded
Ez = "sin(pi*x/{nx})*sin(pi*y/{ny})"

[time]
integrator = "lsrk45"
dt = {dt!r}
t_end = {steps * dt!r}

[backend]
name = "{backend}"
precision = "{precision}"

[parallel]
overlap = {OVERLAP[overlap]}
partitioner = "{partitioner}"

[output]
formats = []
"""
