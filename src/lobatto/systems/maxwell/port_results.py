"""S-parameters from the port runs (docs/electromagnetics.md, "Ports and S-parameters"): what
runner/ports.py asks of the system (``MaxwellSystem.port_runs``): the checks, the ports
driven, each run's case, the modal decomposition at the port planes and the files.

From the transforms F_E, F_H on a port's plane, with its mode's unit-norm e_t, h_t = d x e_t
(d into the device) and the wave impedance Z(f) (port_modes.py):

    V = integral F_E . e_t dA,  I = integral F_H . h_t dA,  a = (V + Z I) / 2,  b = (V - Z I) / 2

(a travelling into the device, b out of it: a wave along d has H_t = d x E_t / Z; fields
~ exp(+i 2 pi f t), the DFT's kernel being exp(-i 2 pi f t)). With j the driven port,
S_ij = b_i / a_j sqrt(Re(1/Z_i) / Re(1/Z_j)) (power waves: |a|^2 Re(1/Z) / 2 is the mode's
power). A mode below cutoff at a frequency gives NaN there (Z is not real); a port not driven
leaves its column NaN. Rank 0 writes ``NAME.s<P>p`` (Touchstone, io/touchstone.py) and
``NAME_sparams.h5``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lobatto.errors import LobattoError
from lobatto.systems.maxwell.port_modes import impedance, mode_kind, transverse_h
from lobatto.systems.maxwell.port_surface import resolve as resolve_surfaces
from lobatto.systems.maxwell.ports import check_ports, driven, ports_of

SUFFIX = "_sparams.h5"


def waves(results: dict, plane, port, frequencies, epsilon: float, mu: float):
    """(a, b, Z) (F,) each: the port's mode's amplitudes into and out of the device and its
    wave impedance, from the DFT monitor's results on its plane (rank 0)."""
    entry = results[("surface", port.plane_name)]
    scale = 1e-9 * float(np.abs(plane.coords).max())
    if entry["coordinates"].shape != plane.coords.shape or not np.allclose(entry["coordinates"], plane.coords,
                                                                            rtol=0, atol=scale):
        raise LobattoError(f"[port.{port.name}] the plane's transforms and its mode are on different points")
    transform = entry["transform"]  # (F, fields, K, n, n)
    e = plane.e_t
    h = transverse_h(e, port.axis, port.sign)
    w = plane.weights
    voltage = np.einsum("fckij,ckij,kij->f", transform[:, 0:3], e, w)
    current = np.einsum("fckij,ckij,kij->f", transform[:, 3:6], h, w)
    z = impedance(mode_kind(port.mode), plane.k_c, frequencies, epsilon, mu)
    return 0.5 * (voltage + z * current), 0.5 * (voltage - z * current), z


def scattering(columns: dict, names: list, count: int) -> np.ndarray:
    """S (F, P, P) from {driven j: {port i: (a, b, Z)}}; NaN where undefined."""
    s = np.full((count, len(names), len(names)), complex(np.nan, np.nan))
    for j, column in columns.items():
        a_j, _, z_j = column[j]
        for i, name in enumerate(names):
            _, b_i, z_i = column[name]
            with np.errstate(invalid="ignore", divide="ignore"):
                s[:, i, names.index(j)] = b_i / a_j * np.sqrt((1 / z_i).real / (1 / z_j).real)
    return s


class PortRuns:
    """The system's side of runner/ports.py."""

    check = staticmethod(check_ports)
    resolve = staticmethod(resolve_surfaces)
    driven = staticmethod(driven)

    @staticmethod
    def case_data(case, name: str) -> dict:
        """The case's data for the run driving port ``name``: [ports] drive = [name] and an
        [output.dft] of the [ports] frequencies on every port's plane (every field, no fluxes)."""
        ports, spec = ports_of(case)
        data = case.to_dict()
        data["ports"]["drive"] = [name]
        data.setdefault("output", {})["dft"] = {"frequencies": list(spec.frequencies),
                                                "planes": [p.to_dict()["plane"] for p in ports], "flux": []}
        return data

    @staticmethod
    def measure(case, system, results) -> dict:
        """{port: (a, b, Z)} of one run from its DFT monitor's results (rank 0)."""
        ports, spec = ports_of(case)
        frequencies = np.asarray(spec.frequencies)
        return {p.name: waves(results, system.port_planes[p.name], p, frequencies, system.epsilon, system.mu)
                for p in ports}

    @staticmethod
    def files(case) -> dict:
        return {"touchstone": f"{case.output.name}.s{len(ports_of(case)[0])}p", "hdf5": f"{case.output.name}{SUFFIX}"}

    @staticmethod
    def describe(case) -> dict:
        ports, spec = ports_of(case)
        return {"ports": {p.name: {"plane": p.plane_name, "direction": p.direction, "shape": p.shape, "mode": p.mode}
                          for p in ports}, "frequencies": len(spec.frequencies)}

    @staticmethod
    def write(directory: Path, case, columns: dict) -> None:
        """Rank 0: the Touchstone file and NAME_sparams.h5 (atomically, io/atomic.py)."""
        import h5py

        from lobatto.io.atomic import h5_output
        from lobatto.io.touchstone import write_touchstone

        ports, spec = ports_of(case)
        frequencies = np.asarray(spec.frequencies)
        s = scattering(columns, [p.name for p in ports], len(frequencies))
        files = PortRuns.files(case)
        comments = (["lobatto S-parameters of " + case.name + ": ports " + ", ".join(
                     f"{i + 1} = {p.name} ({p.mode} at {p.plane_name}, into the device: {p.direction})"
                     for i, p in enumerate(ports)),
                     "power waves, each port normalised to its own mode's wave impedance (R below is nominal);",
                     "frequencies in cycles per unit time of the case (HZ: the numbers unchanged); nan: undefined",
                     "effective configuration:"] + case.to_toml().splitlines())
        directory.mkdir(parents=True, exist_ok=True)
        write_touchstone(directory / files["touchstone"], frequencies, s, comments)
        attrs = {"config": case.to_toml(), "equations": case.physics.equations, "name": case.output.name}
        with h5_output(directory / files["hdf5"], attrs) as f:
            f["S"] = s
            f["frequencies"] = frequencies.astype(np.float64)
            text = h5py.string_dtype()
            for key, values in (("ports", [p.name for p in ports]), ("modes", [p.mode for p in ports]),
                                ("planes", [p.plane_name for p in ports]),
                                ("directions", [p.direction for p in ports])):
                f.create_dataset(key, data=values, dtype=text)
            f["driven"] = np.array([p.name in columns for p in ports])
            f.attrs["convention"] = ("S[f, i, j] = b_i / a_j sqrt(Re(1/Z_i) / Re(1/Z_j)), j the driven port; fields "
                                     "~ exp(+i 2 pi f t); NaN: a mode below cutoff or a port not driven")
