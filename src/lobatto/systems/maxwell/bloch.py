"""Bloch-periodic boundaries (``[physics] bloch_k = [kx, ky, kz]``): fields with
u(x + d) = e^{i k . d} u(x) across every periodic wrap d of the mesh.

The complex field u = u_re + i u_im is carried as a pair of real states, the state's fields
Ex..Hz (the real part) followed by Ex_im..Hz_im (the imaginary part); Maxwell's operator is
real, so the two parts couple only where the mesh wraps. There the neighbour's trace seen
from a face point x is the partner's (at x' = x - d) times e^{i k . d}, d = x - x'
(periodic_faces.py). Both parts' traces go through one gather–scatter sum S = u- + u+; at
the wrap points u+ = S - u- is rotated by the phase phi = k . d:

    S_re = u-_re + cos(phi) u+_re - sin(phi) u+_im
    S_im = u-_im + sin(phi) u+_re + cos(phi) u+_im

pointwise, so every exchange method, transport and partition works unchanged, and the
system's kernels then run on each part with its corrected sums (``with_exchange`` hands them
over). The rotation is unitary and the partner's phase is the opposite one (d changes sign),
so the pair's energy (the sum of both parts') is conserved with the central flux and does not
grow with upwind, as without it. A stage computes both parts' sums first, then runs the
system's stage kernel (tuned C or CUDA where it has one) on each part. The CUDA fused whole
step reads partner traces inside its kernel and is not taken; the stage path runs on CPU and
CUDA alike (the rotation is backend.xp array code).

With ``[discretization] volume_form = "galerkin"`` (galerkin.py) the exchange carries the raw
face values and the kernels (array code, galerkin_cpu's C, galerkin_cuda's CUDA) read the jump
2 own - S: the same rotated S, so the pair is the Galerkin operator continued by the phases
(tests/unit/test_maxwell_bloch_galerkin.py: it equals the plain operator on a supercell), and
its energy (both parts' M_W norms) is conserved with the central flux. A plane wave's TF/SF
correction (tfsf_galerkin.py, one term per part) adds +-u_inc(x) to the sums the kernels read,
after the rotation, which is right also where the surface is a wrap: the wave is Bloch-periodic,
e^{i k . d} u_inc(x - d) = u_inc(x). galerkin.correct_sums corrects with every term of
system.terms whose time is set, so each part must see its own only: a stage prepares only the
part's terms, and rhs (whose caller set all of their times) hands the kernels the part's alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lobatto.errors import InputError
from lobatto.machine.parallel import allreduce
from lobatto.systems.maxwell.periodic_faces import AXES, periodic_translations, wrapped_axes
from lobatto.systems.maxwell.sources import dipole_position

#: what a Bloch run adds to the fields: the imaginary parts, named after the real ones
IMAGINARY_SUFFIX = "_im"
#: the stage terms Bloch-periodic boundaries take (one instance per part): sources, the PML and
#: continuous TF/SF plane waves (plane_waves.py checks the wave against k and builds both parts')
TAKEN = ("sources", "sources_im", "pml", "pml_im", "plane_wave")


def with_bloch(spec, physics: dict, error=None):
    """PhysicsSpec.extend: with ``bloch_k`` set the fields are the real parts followed by the
    imaginary parts (Ex_im .. Hz_im), which [initial], [exact], probes and snapshots name."""
    if physics.get("bloch_k") is None:
        return spec
    return dataclasses.replace(spec, fields=spec.fields + tuple(f + IMAGINARY_SUFFIX for f in spec.fields))


class BlochWrap:
    """The wrap points' phases and the pair's exchange (collective set-up)."""

    def __init__(self, system, k, comm=None, where: str = "case"):
        self.k = np.array(k, dtype=np.float64)
        translations = periodic_translations(system, comm, where)
        axes = wrapped_axes(translations, comm=comm)
        across = [a for a in range(3) if self.k[a] != 0 and a not in axes]
        if across:
            raise InputError(f"{where}: [physics] bloch_k = {self.k.tolist()} has a component along the "
                             f"{' and '.join(AXES[a] for a in across)} axis, across which the mesh does not wrap: "
                             "give k only along periodic axes ([mesh] periodic, or a mesh file's periodic faces)")
        self.axes = axes
        wrap = np.any(translations != 0, axis=0).reshape(-1)
        phase = np.tensordot(self.k, translations, axes=1).reshape(-1)[wrap]
        backend = system.backend
        self.index = backend.asarray(np.nonzero(wrap)[0].astype(np.int64), dtype=np.int64)
        self.cos, self.sin = backend.asarray(np.cos(phase)), backend.asarray(np.sin(phase))
        self.wrap_points = int(np.count_nonzero(wrap))
        parts = system.trace_components
        self.buffer = backend.zeros((2 * parts,) + system.trace_buffer.shape[1:])
        #: the corrected sums of the part being computed, for the system's with_exchange
        self.ready = None
        self.parts = parts
        #: the terms of the imaginary part (sources times sin(k . x), its [pml])
        self.imaginary = []

    def sums(self, system, u):
        """(12, E, 6, n, n): both parts' traces summed with their neighbours' (collective)."""
        parts, normals, buf = system.trace_components, system.device_geometry["normals"], self.buffer
        system.traces_kernel(u[:parts], normals, buf[:parts])
        system.traces_kernel(u[parts:], normals, buf[parts:])
        flat = buf.reshape(2 * parts, -1)
        own = flat[:, self.index]  # a copy (indexed read)
        system.exchange.apply(flat, "sum")
        plus = flat[:, self.index] - own
        re, im = plus[:parts], plus[parts:]
        flat[:parts, self.index] = own[:parts] + self.cos * re - self.sin * im
        flat[parts:, self.index] = own[parts:] + self.sin * re + self.cos * im
        return buf

    def rhs(self, system, u, out, part_rhs):
        """L(u) of the pair: ``part_rhs(u_part, out_part)`` on each part, whose exchange
        (system.with_exchange) takes that part's corrected sums."""
        sums, parts, terms = self.sums(system, u), system.trace_components, system.terms
        try:
            for part in (slice(0, parts), slice(parts, 2 * parts)):
                self.ready = sums[part]
                # MaxwellSystem.rhs set every TF/SF sums correction's time (tfsf_galerkin.py), and
                # galerkin.correct_sums corrects with each of system.terms: only the part's own here
                system.terms = [t for t in terms if not getattr(t, "corrects_sums", False) or self.part(t) == part]
                part_rhs(u[part], out[part])
        finally:
            self.ready, system.terms = None, terms
        return out

    def stage(self, system, u, residual, t, a, b, dt):
        """A 2N-storage stage of the pair: both parts' sums from the state before the stage,
        then on each part its terms' ``prepare``, the system's ``part_stage`` (its tuned
        stage kernel where it has one) and the terms' ``finish``."""
        sums, parts = self.sums(system, u), system.trace_components
        try:
            for part in (slice(0, parts), slice(parts, 2 * parts)):
                terms = [term for term in system.terms if self.part(term) == part]
                self.ready = sums[part]
                for term in terms:
                    term.prepare(u[part], t)
                system.part_stage(u[part], residual[part], a, b, dt)
                for term in terms:
                    term.finish(u[part], residual[part], a, b, dt)
        finally:
            self.ready = None

    # terms: sources and the [pml], one instance per part --------------------------------
    def part(self, term) -> slice:
        """The part of the state a term acts on: the imaginary part's own instances, else the real."""
        parts = self.parts
        return slice(parts, 2 * parts) if any(term is t for t in self.imaginary) else slice(0, parts)

    def imaginary_term(self, term):
        """Mark ``term`` as the imaginary part's (its name gets "_im": summaries, checkpoints)."""
        term.name = f"{term.name}{IMAGINARY_SUFFIX}"
        self.imaginary.append(term)
        return term

    def phase_sources(self, system, sources, part: int):
        """The sources of one part: a current J(x, t) and a dipole at x0 drive the complex field
        with J e^{i k . x}: the real part takes J cos(k . x), the imaginary part J sin(k . x)
        (Meep's amplitude function for a k_point); J itself is the periodic envelope."""
        backend, wave = system.backend, (np.cos, np.sin)[part]
        for i, (expressions, x, scale, slot) in enumerate(sources.currents):
            phase = backend.asarray(wave(np.tensordot(self.k, np.asarray(backend.to_host(x)), axes=1)))
            sources.currents[i] = (expressions, x, phase * scale, slot)
        sources.dipoles = [(values, field, slot, profile * float(wave(self.k @ dipole_position(values))))
                           for values, field, slot, profile in sources.dipoles]
        return sources

    def check_case(self, system, where: str = "case") -> None:
        """Only sources, continuous plane waves and the [pml] run with Bloch-periodic boundaries
        (for now)."""
        others = [t.name for t in system.terms if t.name.split(".")[0] not in TAKEN]
        if others:
            raise InputError(f"{where}: [physics] bloch_k: Bloch-periodic boundaries do not yet take "
                             f"{', '.join(others)} (only [source.*] currents, dipoles and continuous plane "
                             "waves, and [pml]); remove them or bloch_k")

    def describe(self, comm=None) -> dict:
        return {"k": self.k.tolist(), "axes": [AXES[a] for a in self.axes],
                "wrap_points": int(allreduce(comm, self.wrap_points))}
