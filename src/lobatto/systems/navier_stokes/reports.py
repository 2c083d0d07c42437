"""What a Navier–Stokes run reports: the part timers, the CFL number, the step line's record
(solver iterations and residuals, the diagnostics every [physics] diagnostics_every steps:
kinetic energy, enstrophy, dissipation, ||div u||) and the summary's entries. A mix-in of
``NavierStokesSystem`` (system.py)."""

from __future__ import annotations

import math
import time

from lobatto.errors import SolverError
from lobatto.machine.parallel import collective_counts
from lobatto.operators import curl, divergence

#: a flow that cannot gain kinetic energy (no force, driving, inflow or outflow) and whose energy
#: rises this fraction above the lowest value its diagnostics saw has gone unstable (measured:
#: a 4^3 x N = 6 TGV at CFL 2.5 without sub-steps rose 0.6 % in a step and 5 % in ten; a stable one falls)
ENERGY_RISE = 0.01
#: kinetic energies (per unit volume) below this are rounding (a fluid at rest): not watched
ENERGY_FLOOR = 1e-20
#: any flow whose ||div u|| is over this fraction of ||grad u|| (sqrt(||div u||^2 + ||curl u||^2))
#: after WATCH_AFTER steps is no longer incompressible (an under-resolved but stable TGV was at
#: 0.1: docs/navier-stokes.md, "Sub-stepping")
DIVERGENCE_SHARE = 0.5
WATCH_AFTER = 10


class FlowReports:
    """The reports of NavierStokesSystem (which holds the attributes used here)."""

    def part(self, name):
        return Timed(self, name)

    def courant(self, u, dt) -> float:
        """This rank's largest CFL number of the velocity for step dt."""
        return float(self.advection.courant(u[:self.dim], dt))

    def force_courant(self, u, t=0.0) -> float:
        """This rank's CFL number per unit dt squared of the body force's acceleration at t
        (the scalars' rows of ``u`` at t): advection.courant of a velocity equal to f, so the
        first variable step bounds how far f speeds the flow up in it (integrators.step_size
        first_dt); 0.0 without a force. Collective when the force uses the scalars (its range
        check)."""
        if self.force is None:
            return 0.0
        return float(self.advection.courant(self.force.weak(t, u) / self.force.mass, 1.0))

    def _report(self, u, dt) -> dict:
        # (the CFL number is the driver's: it measures it after every step of a multistep scheme)
        p, v = self.pressure_result, self.velocity_result
        report = {"pressure_iterations": p.iterations, "pressure_residual": float(p.residuals[-1]) if p.residuals else 0.0,
                  "velocity_iterations": v.iterations, "velocity_residual": float(v.residuals[-1]) if v.residuals else 0.0}
        if self.scalars is not None:
            report.update(self.scalars.report())
        if self.diagnostics_every and self.steps_taken % self.diagnostics_every == 0:
            report.update(self.diagnostics(u))
            self.watch(report)
        return report

    def divergence_floor(self, report) -> float:
        """A divergence below rounding: 1e-8 of |u| over the box's size (a uniform flow has
        ||grad u|| = 0 and a divergence of rounding errors)."""
        return 1e-8 * math.sqrt(2.0 * report["kinetic_energy"]) * self.volume ** (1.0 / 6.0)

    def watch(self, report) -> None:
        """Stop a run gone unstable (collective: every rank has the same reduced diagnostics)."""
        energy, div = report["kinetic_energy"], report["divergence"]
        gradient = math.sqrt(2.0 * report["enstrophy"] * self.volume + div * div)
        reason = None
        if (self.energy_bounded and self.lowest_energy is not None and energy > (1 + ENERGY_RISE) * self.lowest_energy
                and energy > ENERGY_FLOOR):
            reason = (f"the kinetic energy rose to {energy:.6g} from {self.lowest_energy:.6g}, though nothing "
                      "brings energy into this flow")
        elif self.steps_taken > WATCH_AFTER and div > DIVERGENCE_SHARE * gradient and div > self.divergence_floor(report):
            reason = (f"||div u|| = {div:.3g} is over {DIVERGENCE_SHARE} of ||grad u|| = {gradient:.3g}: the flow "
                      "is no longer incompressible")
        if self.energy_bounded:
            self.lowest_energy = energy if self.lowest_energy is None else min(self.lowest_energy, energy)
        if reason is None:
            return
        error = SolverError(f"the flow went unstable by step {self.steps_taken} (t = {self.time:.6g}): {reason}; "
                            f"{self.stability_advice}")
        error.collective = True
        raise error

    def step_report(self) -> dict:
        return dict(self.last_report)

    def diagnostics(self, u) -> dict:
        """Volume averages (collective): kinetic energy |u|^2/2, enstrophy |curl u|^2/2, the
        dissipation 2 nu enstrophy (equal to -dE/dt in a periodic box), and the L2 norm of
        div u."""
        g = self.device_geometry
        velocity = u[:self.dim]
        vorticity = curl(g, self.backend, velocity)
        div = divergence(g, self.backend, velocity)
        sums = self.assembly.integral(g.mass * (velocity * velocity).sum(axis=0),
                                      g.mass * (vorticity * vorticity).sum(axis=0), g.mass * div * div)
        energy, enstrophy = 0.5 * sums[0] / self.volume, 0.5 * sums[1] / self.volume
        return {"kinetic_energy": float(energy), "enstrophy": float(enstrophy),
                "dissipation": float(2.0 * self.viscosity * enstrophy), "divergence": float(math.sqrt(sums[2]))}

    def summary(self, stepper=None, comm=None) -> dict:
        total = sum(self.seconds.values())
        # the totals count this run's steps only (a restarted run continues steps_taken)
        steps = max(self.steps_this_run, 1)
        return {
            "navier_stokes": {
                "viscosity": self.viscosity,
                "pressure_null_space": self.null_space,
                "pressure_levels": self.pressure_solver.level_orders,
                # the smoother and coarse solve that ran (null where none: one level, no multigrid)
                "pressure_smoother": self.pressure_solver.smoother,
                "pressure_coarse": self.pressure_solver.coarse_solve,
                "pressure_iterations_per_step": self.totals["pressure_iterations"] / steps,
                "velocity_iterations_per_step": self.totals["velocity_iterations"] / steps,
                "parts": {name: {"seconds": s, "share": s / total if total > 0 else 0.0}
                          for name, s in self.seconds.items()},
                # global reductions and gather-scatter exchanges per step (machine.parallel)
                "collectives_per_step": {name: {kind: n / steps for kind, n in counts.items()}
                                         for name, counts in self.collectives.items()},
                "last_step": self.step_report(),
                "substeps": self.substeps,
                # (the passive scalars' evaluations counted too, as the sub-stepper counts them)
                "convective_evaluations_per_step": (self.substepper.evaluations / steps if self.substepper is not None
                                                    else 1.0 + (self.scalars is not None)),
                **({"scalars": self.scalars.summary(steps)} if self.scalars is not None else {}),
            },
            # generic entries the run summary prints (the driver adds "output" to the parts)
            "time_per_part": dict(self.seconds),
            "solvers": {"pressure": self.pressure_solver.describe()},
            "iterations_per_step": {"pressure": self.totals["pressure_iterations"] / steps,
                                    "velocity": self.totals["velocity_iterations"] / steps},
        }


class Timed:
    """Adds the wall time of a block to system.seconds[name] (the device synchronised at the
    end, so the time is the part's own)."""

    def __init__(self, system, name):
        self.system, self.name = system, name

    def __enter__(self):
        self.start = time.perf_counter()
        self.counts = collective_counts()

    def __exit__(self, *exc):
        self.system.backend.synchronize()
        self.system.seconds[self.name] += time.perf_counter() - self.start
        for kind, n in collective_counts().items():
            self.system.collectives[self.name][kind] += n - self.counts[kind]
