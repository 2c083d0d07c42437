"""What a Navier–Stokes run reports: the part timers, the CFL number, the step line's record
(solver iterations and residuals, the diagnostics every [physics] diagnostics_every steps:
kinetic energy, enstrophy, dissipation, ||div u||) and the summary's entries. A mix-in of
``NavierStokesSystem`` (system.py)."""

from __future__ import annotations

import math
import time

from lobatto.operators import curl, divergence


class FlowReports:
    """The reports of NavierStokesSystem (which holds the attributes used here)."""

    def part(self, name):
        return Timed(self, name)

    def courant(self, u, dt) -> float:
        """This rank's largest CFL number of the velocity for step dt."""
        return float(self.advection.courant(u[:3], dt))

    def _report(self, u, dt) -> dict:
        # (the CFL number is the driver's: it measures it after every step of a multistep scheme)
        p, v = self.pressure_result, self.velocity_result
        report = {"pressure_iterations": p.iterations, "pressure_residual": float(p.residuals[-1]) if p.residuals else 0.0,
                  "velocity_iterations": v.iterations, "velocity_residual": float(v.residuals[-1]) if v.residuals else 0.0}
        if self.scalars is not None:
            report.update(self.scalars.report())
        if self.diagnostics_every and self.steps_taken % self.diagnostics_every == 0:
            report.update(self.diagnostics(u))
        return report

    def step_report(self) -> dict:
        return dict(self.last_report)

    def diagnostics(self, u) -> dict:
        """Volume averages (collective): kinetic energy |u|^2/2, enstrophy |curl u|^2/2, the
        dissipation 2 nu enstrophy (equal to -dE/dt in a periodic box), and the L2 norm of
        div u."""
        g = self.device_geometry
        velocity = u[:3]
        vorticity = curl(g, self.backend, velocity)
        div = divergence(g, self.backend, velocity)
        sums = self.assembly.integral(g.mass * (velocity * velocity).sum(axis=0),
                                      g.mass * (vorticity * vorticity).sum(axis=0), g.mass * div * div)
        energy, enstrophy = 0.5 * sums[0] / self.volume, 0.5 * sums[1] / self.volume
        return {"kinetic_energy": float(energy), "enstrophy": float(enstrophy),
                "dissipation": float(2.0 * self.viscosity * enstrophy), "divergence": float(math.sqrt(sums[2]))}

    def summary(self, stepper=None, comm=None) -> dict:
        total = sum(self.seconds.values())
        steps = max(self.steps_taken, 1)
        return {
            "navier_stokes": {
                "viscosity": self.viscosity,
                "pressure_null_space": self.null_space,
                "pressure_levels": self.pressure_solver.level_orders,
                "pressure_iterations_per_step": self.totals["pressure_iterations"] / steps,
                "velocity_iterations_per_step": self.totals["velocity_iterations"] / steps,
                "parts": {name: {"seconds": s, "share": s / total if total > 0 else 0.0}
                          for name, s in self.seconds.items()},
                "last_step": self.step_report(),
                **({"scalars": self.scalars.summary(steps)} if self.scalars is not None else {}),
            },
            # generic entries the run summary prints (the driver adds "output" to the parts)
            "time_per_part": dict(self.seconds),
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

    def __exit__(self, *exc):
        self.system.backend.synchronize()
        self.system.seconds[self.name] += time.perf_counter() - self.start
