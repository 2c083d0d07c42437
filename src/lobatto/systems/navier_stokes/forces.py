"""Forces and moments on named surfaces: ``[output.forces.<name>]`` (docs/navier-stokes.md,
"Forces and moments"; the table: forces_table.py).

The force the fluid exerts on the body behind a group of boundary faces, with n the unit
normal out of the body into the fluid (minus the mesh's outward normal there),

    F = rho * integral ( -p n + nu (grad u + grad u^T) n ) dA

(p is the kinematic pressure and nu the kinematic viscosity of the solver, so rho scales
both parts), split into its pressure part (-p n) and its viscous part, and its moment
M = integral (x - center) x dF. The integrals are GLL quadratures on the faces: w_a w_b times
the surface Jacobian at each face point, the velocity gradient taken in the element behind
the face (its collocation derivative and the metric terms at the face points). Given
reference_area A and reference_velocity U, the coefficients are C = F / (rho U^2 A / 2).

2-D (a mesh of quads): per unit depth, the faces' edge quadrature w_b sJ; the columns stay the
same, with Fz, Mx and My exactly 0 and Mz the moment about the z axis through (cx, cy)
(reference_area: a length, the area per unit depth).

Each sample sums the face points' terms exactly (comm/exact_sum.py: one allreduce for every
group due, on every rank, also on a rank with no face of the surface), so the series are the
same bits on any partition. Rank 0 writes NAME_forces.csv and NAME_forces.h5 (io/timeseries.py;
columns ``Fx@<name>``...), which a continued run carries on as the probes' files.
"""

from __future__ import annotations

import numpy as np

from lobatto.comm.exact_sum import exact_sums
from lobatto.discretization import derivative_matrix, gll_weights
from lobatto.discretization.tensor import reference_gradient
from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce, collective_errors, rank_and_size
from lobatto.mesh.topology import face_slice
from lobatto.monitors import register_monitor
from lobatto.monitors.base import Monitor
from lobatto.monitors.regions import surface_index
from lobatto.systems.navier_stokes.forces_table import FORCES

SUFFIX = "_forces"
#: the columns of each group: total, pressure and viscous force, the moment about its center
FORCE_COLUMNS = ("Fx", "Fy", "Fz", "Fpx", "Fpy", "Fpz", "Fvx", "Fvy", "Fvz", "Mx", "My", "Mz")
#: and, with reference values, the force coefficients F / (rho U^2 A / 2)
COEFFICIENT_COLUMNS = ("Cx", "Cy", "Cz")
#: the terms summed per face point: pressure force, viscous force, their moments (3 each)
TERMS = 12
WHERE = "[output.forces]"


def file_names(name: str) -> tuple[str, str]:
    return f"{name}{SUFFIX}.csv", f"{name}{SUFFIX}.h5"


def _cross(a, b, xp):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


class SurfaceForce:
    """One group's faces on this rank: per face number, the elements behind them and, on the
    backend in float64, the face's metric terms, normals, weights and lever arms."""

    def __init__(self, group, system, where: str, comm=None):
        self.group, self.system = group, system
        mesh, geometry, xp = system.mesh, system.geometry, system.backend.xp
        group_of, names = surface_index(mesh)
        unknown = [name for name in group.surfaces if name not in names]
        if unknown:
            raise InputError(f"{where}: [output.forces.{group.name}] surfaces: no surface '{unknown[0]}' in the mesh "
                             f"(its named surfaces: {', '.join(names) or 'none'})")
        boundary = mesh.face_neighbour < 0
        wanted = [names.index(name) for name in group.surfaces]
        counts = allreduce(comm, np.array([int((boundary & (group_of == g)).sum()) for g in wanted], np.int64))
        empty = [name for name, count in zip(group.surfaces, counts) if count == 0]
        if empty:  # (the counts are the same on every rank: all raise)
            raise InputError(f"{where}: [output.forces.{group.name}] surfaces: '{empty[0]}' has no boundary faces "
                             f"in the mesh (a side of a periodic axis?); its named surfaces: {', '.join(names)}")
        self.faces = int(np.sum(counts))
        on = boundary & np.isin(group_of, wanted)
        order, w = system.order, gll_weights(system.order)
        self.dim = mesh.dim
        if len(group.center) == 2 and self.dim == 3:
            raise InputError(f"{where}: [output.forces.{group.name}] center = {list(group.center)}: the mesh is 3-D: "
                             "give [x, y, z]")
        center = np.asarray(tuple(group.center) + (0.0,) * (3 - len(group.center)), dtype=np.float64).reshape(3, 1, 1, 1)
        if self.dim == 2:  # per unit depth: the moment about the z axis through (cx, cy): arms in the plane
            center = np.concatenate([center[:2], np.zeros((1, 1, 1, 1))])
        face_weights = np.outer(w, w) if self.dim == 3 else w[None, :]
        self.derivative = xp.asarray(derivative_matrix(order), dtype=np.float64)
        self.parts = []  # (face, device elements, metrics (3, 3, Ef, n, n), normals, weights, arms)
        for face in range(mesh.num_faces):
            elements = np.nonzero(on[:, face])[0]
            if elements.size == 0:
                continue
            at = face_slice(face, order)
            metrics = geometry.metrics[:, :, elements][at]
            arms = geometry.coords[:, elements][at] - center
            self.parts.append((face, xp.asarray(elements), xp.asarray(metrics, dtype=np.float64),
                               xp.asarray(geometry.normals[:, elements, face], dtype=np.float64),
                               xp.asarray(geometry.surface_jacobian[elements, face] * face_weights,
                                          dtype=np.float64), xp.asarray(arms, dtype=np.float64)))

    def terms(self, u) -> np.ndarray:
        """(TERMS, P) on the host: each face point's share of the pressure force, the viscous
        force and their moments (P = 0 on a rank without faces of the group)."""
        system = self.system
        xp, order, nu, rho = system.backend.xp, system.order, float(system.viscosity), self.group.density
        out = []
        for face, elements, metrics, normals, weights, arms in self.parts:
            at = face_slice(face, order)
            d = self.dim
            velocity = u[:d, elements].astype(xp.float64)
            if d == 2:  # (ux, uy, 0): the 3-D formulas below, with Fz = Mx = My = 0 exactly
                velocity = xp.concatenate([velocity, xp.zeros_like(velocity[:1])])
            pressure = u[d, elements][at].astype(xp.float64)
            reference = reference_gradient(xp, velocity, self.derivative)[at]  # [b, c]: d u_c / d r_b
            # g[c, a] = d u_c / d x_a = sum_b d r_b / d x_a  d u_c / d r_b (a fixed order on every partition)
            g = reference[0][:, None] * metrics[0][None] + reference[1][:, None] * metrics[1][None]
            if d == 3:
                g = g + reference[2][:, None] * metrics[2][None]
            strain = g + g.transpose(1, 0, 2, 3, 4)
            # the mesh's normal points out of the fluid: the body's is -normals
            shear = strain[:, 0] * normals[0] + strain[:, 1] * normals[1] + strain[:, 2] * normals[2]
            pressure_force = (rho * pressure * weights) * normals
            viscous_force = (-rho * nu * weights) * shear
            rows = xp.concatenate([pressure_force, viscous_force, _cross(arms, pressure_force, xp),
                                   _cross(arms, viscous_force, xp)])
            out.append(rows.reshape(TERMS, -1))
        if not out:
            return np.zeros((TERMS, 0))
        return np.asarray(system.backend.to_host(xp.concatenate(out, axis=1)), dtype=np.float64)

    def values(self, sums) -> np.ndarray:
        """The group's columns from its TERMS totals."""
        pressure, viscous = np.asarray(sums[0:3]), np.asarray(sums[3:6])
        force, moment = pressure + viscous, np.asarray(sums[6:9]) + np.asarray(sums[9:12])
        out = [force, pressure, viscous, moment]
        group = self.group
        if group.coefficients:
            out.append(force / (0.5 * group.density * group.reference_velocity ** 2 * group.reference_area))
        return np.concatenate(out)


class ForcesMonitor(Monitor):
    """The force groups on this rank's part of the mesh, and rank 0's writer."""

    section = "forces"
    dimensions = (2, 3)  # 2-D: per unit depth, Fz = Mx = My = 0
    table = FORCES  # its keys and reader (forces_table.py): the case reader takes them from the registry

    @classmethod
    def from_case(cls, case, section, system, comm=None) -> ForcesMonitor:
        """Its errors name the case's file (``case.source``)."""
        monitor = cls(section, system, comm, case.source)
        monitor.output_name = case.output.name
        return monitor

    def __init__(self, section, system, comm=None, where: str = "case"):
        flow = ("ux", "uy", "uz", "p") if getattr(system, "dim", 3) == 3 else ("ux", "uy", "p")
        if not hasattr(system, "viscosity") or tuple(system.field_names[:len(flow)]) != flow:
            raise InputError(f"{where}: {WHERE} needs an incompressible flow (equations = \"navier_stokes\"), not "
                             f"equations = \"{system.name}\"")
        self.settings, self.system, self.comm = section, system, comm
        self.rank, _ = rank_and_size(comm)
        self.groups = [SurfaceForce(group, system, where, comm) for group in section.groups]
        self.columns = []  # (quantity, group, kind, doc) as io.timeseries writes them
        for force in self.groups:
            group = force.group
            names = FORCE_COLUMNS + (COEFFICIENT_COLUMNS if group.coefficients else ())
            for column in names:
                self.columns.append((column, group.name, _kind(column), _doc(column, group)))
        self.writer = None
        self.samples = 0
        self.earlier = 0
        self.last: dict = {}

    def check_start(self, step: int) -> None:
        """A continued run carries on: the files keep the earlier run's samples before ``step``."""

    def start(self, u, step: int, t: float, output_dir, attrs: dict) -> None:
        if self.rank == 0 and self.writer is None:
            from lobatto.io.timeseries import TimeSeriesWriter

            self.writer = TimeSeriesWriter(output_dir, attrs["name"], None, self.columns, attrs,
                                           continue_from=step if step > 0 else None, suffix=SUFFIX, group="forces")
            self.earlier = self.writer.earlier_rows

    def after_step(self, u, step: int, t: float, last: int) -> None:
        """Collective: the groups due at ``step`` sampled, summed in one reduction, appended."""
        due = [force for force in self.groups if step % force.group.every == 0 or step == last]
        if not due:
            return
        self.system.backend.synchronize()
        rows = [row for force in due for row in force.terms(u)]
        sums = np.asarray(exact_sums(self.comm, rows)).reshape(len(due), TERMS)
        values = []
        for force in self.groups:
            width = len(FORCE_COLUMNS) + (len(COEFFICIENT_COLUMNS) if force.group.coefficients else 0)
            if force in due:
                found = force.values(sums[due.index(force)])
                self.last[force.group.name] = {"step": int(step), "t": float(t),
                                               **{c: float(v) for c, v in zip(self._names(force), found)}}
                values.append(found)
            else:
                values.append(np.full(width, np.nan))
        with collective_errors(self.comm):
            if self.rank == 0:
                self.writer.append(step, t, None, np.concatenate(values))
        self.samples += 1

    @staticmethod
    def _names(force) -> tuple:
        return FORCE_COLUMNS + (COEFFICIENT_COLUMNS if force.group.coefficients else ())

    def close(self, output_dir, attrs: dict) -> None:
        if self.writer is not None:
            self.writer.close()

    def describe(self) -> dict:
        groups = {force.group.name: {"surfaces": list(force.group.surfaces), "faces": force.faces,
                                     "every": force.group.every, "last": self.last.get(force.group.name)}
                  for force in self.groups}
        return {"forces": {"files": list(file_names(self.output_name)), "samples": self.earlier + self.samples,
                           "groups": groups}}


def _kind(column: str) -> str:
    return "coefficient" if column.startswith("C") else "moment" if column.startswith("M") else "force"


def _doc(column: str, group) -> str:
    axis = column[-1]
    on = f"on {', '.join(group.surfaces)}"
    if column.startswith("C"):
        return (f"F{axis} / (rho U^2 A / 2) {on} (rho = {group.density:g}, U = {group.reference_velocity:g}, "
                f"A = {group.reference_area:g})")
    if column.startswith("M"):
        return f"{axis} component of the moment {on} about {list(group.center)}"
    part = {"Fp": "pressure part of the ", "Fv": "viscous part of the "}.get(column[:2], "")
    return f"{axis} component of the {part}force the fluid exerts {on} (density {group.density:g})"


register_monitor("forces", ForcesMonitor)  # [output.forces.<name>], built by the run's MonitorSet
