"""The plane-wave sources' term builder (system.TERM_BUILDERS): for each ``[source.<name>]
type = "plane_wave"`` the total-field/scattered-field correction with the analytic incident
wave (tfsf.py) or the discrete one stepped alongside (tfsf_discrete.py), after checking that
the waveform stays finite over the run's delays and that no periodic wrap crosses the
total-field region at an angle to the wave (periodic_faces.py).
"""

from __future__ import annotations

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.systems.maxwell.periodic_faces import check_plane_wave_periodicity, periodic_translations
from lobatto.systems.maxwell.tfsf import PlaneWave, TotalFieldScatteredField, total_field_elements
from lobatto.systems.maxwell.tfsf_discrete import DiscreteIncidentTFSF
from lobatto.systems.maxwell.waveforms import check_waveform


def build_plane_waves(case, system, comm=None) -> list:
    """TERM_BUILDERS entry: one TF/SF term per ``[source.<name>] type = "plane_wave"``."""
    terms, translations = [], None
    for spec in case.tables.get("source", ()):
        if spec.type == "plane_wave":
            wave = PlaneWave.from_spec(spec, system.epsilon, system.mu)
            check_run_delays(case, system, wave, spec, comm)
            inside = total_field_elements(system, spec, comm, case.source)
            if translations is None:  # where the mesh wraps (collective, once)
                translations = periodic_translations(system, comm, case.source)
            check_plane_wave_periodicity(system, spec, wave.direction, inside, translations, comm, case.source)
            if spec.values.get("incident_field", "analytic") == "discrete":
                terms.append(DiscreteIncidentTFSF(system, wave, inside, comm, case.source))
            else:
                terms.append(TotalFieldScatteredField(system, wave, inside, comm, case.source))
    return terms


def bounding_box_corners(coords, comm=None) -> np.ndarray:
    """Collective: (3, 8) the corners of the mesh's bounding box over all ranks (a rank may hold
    no points)."""
    flat = coords.reshape(3, -1)
    low = allreduce(comm, flat.min(axis=1) if flat.size else np.full(3, np.inf), "min")
    high = allreduce(comm, flat.max(axis=1) if flat.size else np.full(3, -np.inf), "max")
    return np.array([[(high if (i >> a) & 1 else low)[a] for a in range(3)] for i in range(8)]).T


def check_run_delays(case, system, wave: PlaneWave, spec, comm=None) -> None:
    """The wave's waveform must be finite at every tau = t - delay of the run: t from 0 to
    t_end, the delay k . (x - origin) / c over the mesh (extreme at its bounding box's
    corners, the delay being linear in x). Collective."""
    corners = bounding_box_corners(system.geometry.coords, comm)
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        delays = wave.delay(corners)
    if not np.all(np.isfinite(delays)):
        raise InputError(f"{case.source}: [source.{spec.name}] origin = {list(spec.values['origin'])} is too far from "
                         "the mesh: the wave's delay k . (x - origin) / c overflows")
    times = [t - d for t in (0.0, case.time.t_end) for d in (float(delays.min()), float(delays.max()))]
    check_waveform(spec, times, case.source)
