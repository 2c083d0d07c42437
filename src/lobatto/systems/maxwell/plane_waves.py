"""The plane-wave sources' term builder (system.TERM_BUILDERS): for each ``[source.<name>]
type = "plane_wave"`` the total-field/scattered-field correction with the analytic incident
wave (tfsf.py) or the discrete one stepped alongside (tfsf_discrete.py), after checking that
the waveform stays finite over the run's delays and that no periodic wrap crosses the
total-field region at an angle to the wave (periodic_faces.py).

With Bloch-periodic boundaries ([physics] bloch_k, bloch.py) a continuous wave with the
analytic incident field is taken: its complex field U = sin(phi) + i cos(phi), phi = omega t -
k_w . x, k_w = (omega / c) k_hat, is i e^{-i omega t} e^{i k_w . x}, Bloch-periodic with k =
k_w's components along the periodic axes (checked against bloch_k). The real part's term is the
wave itself, the imaginary part's the same wave a quarter period ahead (cos(phi) = sin(phi +
pi/2): its origin moved by c / (4 f) along k_hat), with either volume form (the Galerkin form's
sums correction per part: bloch.py). The ramp's transient is not Bloch-periodic (on(tau)
differs across a wrap): it leaves as scattered field into the [pml].
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.systems.maxwell.periodic_faces import check_plane_wave_periodicity, periodic_translations
from lobatto.systems.maxwell.tfsf import PlaneWave, TotalFieldScatteredField, total_field_elements
from lobatto.systems.maxwell.tfsf_discrete import DiscreteIncidentTFSF
from lobatto.systems.maxwell.tfsf_galerkin import GalerkinTotalFieldScatteredField
from lobatto.systems.maxwell.waveforms import WAVEFORMS, check_waveform


def build_plane_waves(case, system, comm=None) -> list:
    """TERM_BUILDERS entry: one TF/SF term per ``[source.<name>] type = "plane_wave"``."""
    terms, translations = [], None
    for spec in case.tables.get("source", ()):
        if spec.type == "plane_wave":
            wave = PlaneWave.from_spec(spec, system.epsilon, system.mu)
            check_run_delays(case, system, wave, spec, comm)
            inside = total_field_elements(system, spec, comm, case.source)
            if system.bloch is not None:  # the pair's two terms (the module's docstring)
                check_bloch_wave(system, spec, wave, case.source)
                tfsf = TotalFieldScatteredField if system.galerkin is None else GalerkinTotalFieldScatteredField
                terms.append(tfsf(system, wave, inside, comm, case.source))
                ahead = tfsf(system, quarter_period_ahead(wave), inside, comm, case.source)
                terms.append(system.bloch.imaginary_term(ahead))
                continue
            if translations is None:  # where the mesh wraps (collective, once)
                translations = periodic_translations(system, comm, case.source)
            check_plane_wave_periodicity(system, spec, wave.direction, inside, translations, comm, case.source,
                                         bloch_wave_vector(wave))
            discrete = spec.values.get("incident_field", "analytic") == "discrete"
            if system.galerkin is not None:  # the sums corrected before its kernels (tfsf_galerkin.py)
                if discrete:
                    raise InputError(f'{case.source}: [source.{spec.name}] incident_field = "discrete" is not taken '
                                     'by [discretization] volume_form = "galerkin"; use "analytic"')
                terms.append(GalerkinTotalFieldScatteredField(system, wave, inside, comm, case.source))
            elif discrete:
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


def bloch_wave_vector(wave: PlaneWave):
    """(3,) (2 pi f / c) k_hat of a wave with a frequency (a continuous wave's k_w), else None."""
    if "frequency" not in WAVEFORMS[wave.waveform]:
        return None
    return (2 * math.pi * float(wave.params["frequency"]) / wave.speed) * wave.direction


def check_bloch_wave(system, spec, wave: PlaneWave, where: str = "case") -> None:
    """InputError unless the plane wave is exact with the Bloch pair: a continuous wave, the
    analytic incident field, and bloch_k = k_w along every periodic axis (relative 1e-9)."""
    what = f"{where}: [source.{spec.name}] type = \"plane_wave\" with [physics] bloch_k"
    if spec.values.get("incident_field", "analytic") != "analytic":
        raise InputError(f"{what}: incident_field = \"discrete\" is not taken (its wave is stepped without the "
                         "Bloch wraps); use incident_field = \"analytic\"")
    if wave.waveform != "continuous":
        raise InputError(f"{what}: only waveform = \"continuous\" is taken (a pulse has no single wave vector "
                         "along the periodic axes); for a pulse at oblique incidence use a phased current sheet "
                         "(docs/electromagnetics.md, \"Bloch-periodic boundaries\")")
    k_w, axes = bloch_wave_vector(wave), system.bloch.axes
    expected = [float(k_w[a]) if a in axes else 0.0 for a in range(3)]
    scale = float(np.linalg.norm(k_w))
    if any(abs(system.bloch.k[a] - expected[a]) > 1e-9 * scale for a in axes):
        raise InputError(f"{what} = {system.bloch.k.tolist()}: the wave (frequency {wave.params['frequency']:g}, "
                         f"direction {list(spec.values['direction'])}) is Bloch-periodic with k = (2 pi f / c) "
                         f"k_hat along the periodic axes: give bloch_k = {expected}")


def quarter_period_ahead(wave: PlaneWave) -> PlaneWave:
    """The imaginary part's wave: cos(omega tau) = sin(omega (tau + 1 / (4 f))), i.e. the delay
    k_hat . (x - origin) / c less 1 / (4 f): the origin moved by c / (4 f) along k_hat (the sign
    that makes U Bloch-periodic with +k_w: tests/unit/test_maxwell_bloch_tfsf.py)."""
    shift = wave.speed / (4 * float(wave.params["frequency"]))
    return dataclasses.replace(wave, origin=wave.origin + shift * wave.direction)
