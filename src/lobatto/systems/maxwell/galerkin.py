"""Maxwell's curved-element operator: a weight-adjusted Galerkin form with a skew-symmetric volume term.

``[discretization] volume_form = "galerkin"``. The collocated split form (tensor.split_curl)
is energy-stable but its conservative half, the GLL-mass adjoint of the chain rule, carries the
aliasing of J a^b x f interpolated at N+1 points: on curved elements it is 2-13x less accurate
than the chain rule (benchmarks/notes-curved-maxwell.md). Here instead, per element,

    M_W dE/dt = B_s(., H) + S_E,   M_W dH/dt = -B_s(., E) + S_H,
    B(phi, f)   = sum_q w_q phi . sum_b (J a^b)_q x (d_b f)_q,                  (strong)
    B_w(phi, f) = sum_faces w sJ phi . (n x f) - sum_q w_q sum_b (d_b phi)_q . ((J a^b)_q x f_q),  (by parts)
    B_s = (B + B_w) / 2,

every product at the points of a Q-point Gauss rule, Q = N + 1 (quadrature_points), the face
terms likewise with Q x Q Gauss points per face and sJ n = +-J a^b, and M_W the weight-adjusted
mass (Chan, Hewett, Warburton 2017) M_W^-1 = M^-1 M_{1/J} M^-1 (M the exact reference mass, a
Kronecker product of 1D ones; M_{1/J} the Gauss-integrated 1/J mass, J exact): symmetric
positive definite. Per quadrature point E . (J a^b x d_b H) = -d_b H . (J a^b x E), so
B(E, H) = B_w(H, E) - sum_faces w sJ H . (n x E) term by term at the rule's own points, and
B_s(E, H) - B_s(H, E) = sum_faces w sJ n . (H x E) for any rule and any cofactors:
the central flux cancels it with the neighbour's (both see the same points and sJ n), so the
energy 1/2 (eps E.M_W E + mu H.M_W H) is conserved with the central flux and decays with the
upwind one, on any curved element. At Q = N + 1 the operator equals a split form collocated at
the Gauss points (generalised SBP), mapped from and to the GLL nodes by V and V^-1; the same
split collocated at the GLL points with their lumped mass is the (less accurate) split form
(notes sections 1 and 11). The cofactors J a^b are Kopriva's invariant curl form at the GLL points
(curl_form_cofactors), polynomials of degree N that meet the metric identities
sum_b d_b (J a^b) = 0 exactly and whose face values depend on the face's nodes only: with them
the rule integrates B_w's volume part exactly for a uniform field, which therefore stays
uniform. The earlier strong-only operator (``volume="strong"``, which needs
Q >= strong_points(N) = max(ceil(3N / 2), N + 1)) and the map's exact cofactors stay reachable
through WeightAdjustedOperator(..., points, cofactors, volume) for comparisons.

The array code here is the reference (NumPy/CuPy); on the compiled CPU backend the rhs and the
energy's products are galerkin_cpu's C kernels (kernels/galerkin.c), on the CUDA backend the rhs
and the stage are galerkin_cuda's kernel (kernels/galerkin.cu); both take any Q (skew form only).
A per-point medium (eps, mu, sigma; materials.py) enters through the masses and the face
coefficients at the Gauss points (galerkin_media.py, ``operator.medium``).
"""

from __future__ import annotations

import numpy as np

from lobatto.discretization import derivative_matrix, interpolation_matrix
from lobatto.discretization.tensor import along, derivative_r, derivative_s, derivative_t
from lobatto.mesh.topology import FACE_REFERENCE_AXIS, FACE_SIGN, NUM_FACES, face_slice

_DERIVATIVES = (derivative_r, derivative_s, derivative_t)
#: the time step's factor against the collocated forms': the operator's spectral radius (power
#: iteration, 300 iterations, upwind) against the split form's, skew form at Q = N + 1
#: (benchmarks/galerkin_step_factor.py, notes section 11): on a flat 2^3 box exactly (N + 2) / N
#: from N = 3 (1.67, 1.50, 1.40, 1.33, 1.29, 1.25, 1.22, 1.20, 1.18 at N = 3..11; 2.80 and 1.99 at
#: N = 1, 2), on the O-grid cylinder 1.45, 1.42, 1.38, 1.36, 1.33, 1.31, 1.29, 1.27, 1.25 (2.68,
#: 1.30), on the deformed box 1.47 down to 1.08, on the gmsh sphere mesh 1.10 down to 1.06 (N = 3..9).
#: Each factor is 1 / (1.08 x the largest ratio) or less: an 8 % margin. Above N = 11 (not
#: measured) N = 11's, the ratios falling with N. Curved meshes are checked once more at set-up
#: (runner/step_check.py), boxes are not: the flat box's ratio is the one to hold.
STEP_FACTORS = {1: 0.33, 2: 0.46, 3: 0.55, 4: 0.61, 5: 0.66, 6: 0.68, 7: 0.69, 8: 0.70, 9: 0.71, 10: 0.72}
STEP_FACTOR = 0.74  # N >= 11


def step_factor(order: int) -> float:
    """The factor on the collocated forms' stable dt for this order (STEP_FACTORS)."""
    return STEP_FACTORS.get(int(order), STEP_FACTOR)


def cross(xp, a, b):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def along3(xp, a, u):
    """a (m, n) applied along the last three axes of u (..., n, n, n) -> (..., m, m, m)
    (tensor.along: matrix products on the CPU, the fixed-order contraction kernel on CuPy)."""
    if tuple(u.shape[-3:]) != (a.shape[1],) * 3:  # a thin 2-D array would reshape silently
        raise ValueError(f"along3: the array's last axes {tuple(u.shape[-3:])} are not ({a.shape[1]},) * 3")
    m = a.shape[0]
    x = along(xp, u, a, 1)
    x = along(xp, x, a, m)
    return along(xp, x, a, m * m).reshape(u.shape[:-3] + (m, m, m))


def along2(xp, a, u):
    """a (m, n) applied along the last two axes of u (..., n, n) -> (..., m, m)."""
    m = a.shape[0]
    return along(xp, along(xp, u, a, 1), a, m).reshape(u.shape[:-2] + (m, m))


#: the cofactors J a^b: "invariant" (the default) Kopriva's invariant curl form, "curl" his
#: plain curl form (both of degree N), "exact" those of the degree-N map (degree 2N along their
#: own axis: the energy identity then needs Q = 2N). The other two are kept for comparisons in
#: benchmarks/ (notes-curved-maxwell.md section 9); no case key chooses them.
COFACTORS = ("invariant", "curl", "exact")


def quadrature_points(order: int) -> int:
    """Q = N + 1 Gauss points per direction: the fewest that keep M_W positive definite (the
    exact 1D mass of N + 1 basis functions needs N + 1 points). The skew-symmetric volume term
    (WeightAdjustedOperator.skew_load) makes B(E, H) - B(H, E) a face integral at the rule's own
    points for *any* Q, so no degree count constrains the energy identity; the curl-form
    cofactors (degree N) make the rule integrate d_b phi . (J a^b x f) (degree 2N - 1 along b)
    exactly, which keeps a uniform field uniform. Measured (notes section 11): as accurate as the
    strong form at Q = max(ceil(3N / 2), N + 1) (the earlier rule, which that form's energy
    identity needed) to 1 %, at (N + 1)^3 / Q^3 = 0.38 of its points at N = 7."""
    return int(order) + 1


#: the volume term: "skew" (the default) the mean of the strong and the weak (integrated by
#: parts) forms, energy-stable with any rule; "strong" B alone, whose energy identity needs
#: Q >= max(ceil(3N / 2), N + 1) with the curl-form cofactors (STRONG_POINTS), kept for
#: comparisons in benchmarks/ (notes sections 9, 11); no case key chooses it.
VOLUME_TERMS = ("skew", "strong")


def strong_points(order: int) -> int:
    """The strong form's smallest energy-conserving rule with curl-form cofactors: per Gauss
    point E . (J a^b x d_b H) - H . (J a^b x d_b E) = sum_b d_b F_b, F_b = J a^b . (H x E) (the
    metric identities hold exactly), of degree 3N along r_b, so the rule along b integrates
    d_b F_b (degree 3N - 1 <= 2Q - 1) exactly when Q >= ceil(3N / 2) (notes section 9). The exact
    cofactors have degree 2N along b: they need Q = 2N."""
    n = int(order)
    return max((3 * n + 1) // 2, n + 1)


def curl_form_cofactors(geometry, invariant: bool = True) -> np.ndarray:
    """(3, 3, E, n, n, n) J a^b [b, a] at the GLL points: on curved elements Kopriva's curl form
    (J a^b)_a = -(curl_r I^N(v))_b with v = x_l grad_r x_m, (a, m, l) cyclic (the plain form of
    mesh/geometry.py curl_form_factors), or with ``invariant`` his invariant form
    v = (x_l grad_r x_m - x_m grad_r x_l) / 2 (as accurate as the exact cofactors in the Galerkin
    form; the plain one lost up to 2x at even N); of x less the element's mean so that round-off
    scales with the element's size, not its distance from the origin (the curl of c grad x_m is
    zero); on affine elements the (constant) cofactors. Each is the curl of a degree-N
    polynomial: degree <= N per direction, so interpolation to any points is exact;
    sum_b d_b (J a^b) = 0 exactly; on a face r_b = +-1, J a^b involves only tangential
    derivatives of the face's nodes, which both elements sharing it see alike."""
    order = geometry.order
    cof = geometry.metrics * geometry.jacobian  # cofactors: metrics[b, a] = (J a^b)_a / J
    curved = np.flatnonzero(~np.asarray(geometry.affine, dtype=bool))
    if not curved.size:
        return cof
    d = derivative_matrix(order)
    x = geometry.coords[:, curved]
    x = x - x.mean(axis=(2, 3, 4), keepdims=True)
    dx = [[f(np, x[a], d) for f in _DERIVATIVES] for a in range(3)]  # dx[a][c] = d x_a / d r_c
    for a in range(3):
        m, l = (a + 1) % 3, (a + 2) % 3
        v = [x[l] * dx[m][c] for c in range(3)]  # x_l grad_r x_m at the nodes: I^N of the product
        if invariant:
            v = [0.5 * (v[c] - x[m] * dx[l][c]) for c in range(3)]
        for b in range(3):
            b1, b2 = (b + 1) % 3, (b + 2) % 3
            cof[b, a][curved] = _DERIVATIVES[b2](np, v[b1], d) - _DERIVATIVES[b1](np, v[b2], d)
    return cof


def variant_options(spec: str, order: int) -> dict:
    """attach's keywords from a benchmark's "COFACTORS[:Q[:VOLUME]]" (after "galerkin:"): Q a
    number, "2N", "S" (strong_points) or empty (quadrature_points); e.g. "exact:2N:strong" is the
    first operator, "invariant:S:strong" the strong form of notes section 9."""
    cofactors, points, volume = (spec.split(":") + ["", ""])[:3]
    q = {"": None, "2N": 2 * order, "S": strong_points(order)}.get(points)
    return {"cofactors": cofactors or "invariant", "points": int(points) if q is None and points else q,
            "volume": volume or "skew"}


class WeightAdjustedOperator:
    """Host-built factors of one mesh's Galerkin curl (arrays moved to the backend by ``to``)."""

    def __init__(self, geometry, points: int | None = None, cofactors: str = "invariant", volume: str = "skew"):
        if cofactors not in COFACTORS:
            raise ValueError(f"cofactors must be one of {COFACTORS}, not {cofactors!r}")
        if volume not in VOLUME_TERMS:
            raise ValueError(f"volume must be one of {VOLUME_TERMS}, not {volume!r}")
        order = geometry.order
        q = quadrature_points(order) if points is None else int(points)
        xg, wg = np.polynomial.legendre.leggauss(q)
        d = derivative_matrix(order)
        v = interpolation_matrix(order, xg)  # (Q, n): GLL nodal values -> Gauss points
        x = geometry.coords
        # d x / d r_c at the Gauss points: exact (the map is a degree-N polynomial)
        columns = [along3(np, v, _DERIVATIVES[c](np, x, d)) for c in range(3)]
        jac = cross(np, columns[1], columns[2])
        jac = np.einsum("a...,a...->...", columns[0], jac)  # J exact: M_W's norm
        if cofactors == "exact":  # J a^b of the map (degree 2N along b, 2N - 1 along the others)
            cof = np.stack([cross(np, columns[(b + 1) % 3], columns[(b + 2) % 3]) for b in range(3)])
        else:  # a curl form (degree N): its GLL values interpolate exactly
            nodal = curl_form_cofactors(geometry, invariant=cofactors == "invariant")
            cof = np.stack([along3(np, v, nodal[b]) for b in range(3)])
        del columns
        w3 = wg[:, None, None] * wg[None, :, None] * wg[None, None, :]
        self.order, self.points, self.cofactors, self.volume = order, q, cofactors, volume
        self.v, self.weighted_cofactors = v, cof * w3  # (3, 3, E, Q, Q, Q): w_q (J a^b)_a
        self.inverse_jacobian_weights = w3 / jac  # M_{1/J} at the Gauss points
        self.square_energy_weights = w3 * jac  # w J: M_W's diagonal in the Gauss basis where Q = N + 1
        mass_1d = v.T @ (wg[:, None] * v)  # exact 1D mass of the GLL Lagrange basis
        self.mass_1d, self.inverse_mass_1d = mass_1d, np.linalg.inv(mass_1d)
        self.root_jacobian = np.sqrt(geometry.jacobian)
        self.derivative = d
        self.medium = None  # per-point eps, mu, sigma at the Gauss points (galerkin_media.py), set by attach
        # faces: unit normals, w sJ at the Q x Q Gauss points from sJ n = +-J a^b of the face's
        # axis, the same J a^b as the volume's (its trace), so the divergence theorem holds
        e = x.shape[1]
        self.normals = np.empty((3, e, NUM_FACES, q, q))
        self.face_weights = np.empty((e, NUM_FACES, q, q))
        w2 = wg[:, None] * wg[None, :]
        for face in range(NUM_FACES):
            sl = face_slice(face, order)
            b = FACE_REFERENCE_AXIS[face]
            if cofactors == "exact":
                tangent = [along2(np, v, _DERIVATIVES[c](np, x, d)[sl]) for c in range(3)]
                area = FACE_SIGN[face] * cross(np, tangent[(b + 1) % 3], tangent[(b + 2) % 3])
            else:
                area = FACE_SIGN[face] * along2(np, v, nodal[b][sl])
            norm = np.sqrt(np.sum(area**2, axis=0))
            self.normals[:, :, face] = area / norm
            self.face_weights[:, face] = w2 * norm

    def to(self, backend):
        """The factors as backend arrays (in place)."""
        for name in ("v", "weighted_cofactors", "inverse_jacobian_weights", "square_energy_weights", "mass_1d",
                     "inverse_mass_1d",
                     "root_jacobian", "derivative",
                     "normals", "face_weights"):
            setattr(self, name, backend.asarray(getattr(self, name)))
        return self

    # ------------------------------------------------------------------------------------
    def load(self, xp, f):
        """B(., f): sum_q w_q phi_i . sum_b (J a^b)_q x (d_b f)_q at the GLL nodes, f (3, E, n, n, n)."""
        out = 0
        for b in range(3):
            df = along3(xp, self.v, _DERIVATIVES[b](xp, f, self.derivative))
            out = out + cross(xp, self.weighted_cofactors[b], df)
        return along3(xp, self.v.T, out)

    def weak_load(self, xp, f, trace):
        """B by parts: sum over the faces' rule of w sJ phi . (n x f) - sum_q w_q sum_b
        (d_b phi)_q . ((J a^b)_q x f_q), f (3, E, n, n, n), trace its face values (3, E, 6, n, n).
        Equal to load(f) where the rules are exact; per point, phi . (J a^b x d_b f) +
        d_b phi . (J a^b x f) = d_b (phi . (J a^b x f)) holds for the rule's values themselves, so
        B(E, H) - B_w(H, E) is a face sum at the rule's points whatever Q."""
        vf = along3(xp, self.v, f)
        out = 0
        for b in range(3):
            x = along3(xp, self.v.T, cross(xp, self.weighted_cofactors[b], vf))
            out = out - _DERIVATIVES[b](xp, x, self.derivative.T)
        faces = along2(xp, self.v.T, self.face_weights * cross(xp, self.normals, along2(xp, self.v, trace)))
        for face in range(NUM_FACES):
            out[(slice(None),) + face_slice(face, self.order)] += faces[:, :, face]
        return out

    def volume_load(self, xp, f, trace):
        """The volume term of f's rate: (B + B_w) / 2 (skew: B(E, H) - B(H, E) reduces to the
        faces' sum of w sJ n . (H x E) at any rule, which the central flux cancels with the
        neighbour's), or B alone (strong)."""
        if self.volume == "strong":
            return self.load(xp, f)
        return 0.5 * (self.load(xp, f) + self.weak_load(xp, f, trace))

    def inverse_mass(self, xp, load, element: int | None = None, weights=None):
        """M_W^-1 load = M^-1 M_{1/J} M^-1 load, load (..., E, n, n, n); with ``element`` one
        element's load (..., n, n, n): e.g. a point source's consistent delta M_W^-1 phi(x0), whose
        M_W-product with any nodal g is g(x0) (sources.py). ``weights`` replace w / J (broadcast
        against the Gauss values): a medium's w / (J eps_c) gives M_{eps W}^-1 (galerkin_media.py)."""
        if weights is None:
            weights = self.inverse_jacobian_weights
        if element is not None:
            weights = weights[..., element, :, :, :]
        y = along3(xp, self.inverse_mass_1d, load)
        y = along3(xp, self.v.T, weights * along3(xp, self.v, y))
        return along3(xp, self.inverse_mass_1d, y)

    def energy_products(self, xp, u, iterations: int = 100, tolerance: float | None = None):
        """Per component c, the sum over elements of u_c . M_W u_c: (6,) float64. With Q = N + 1
        (V square) M_W = V^T diag(w J) V, so it is sum_q w_q J_q (V u_c)_q^2 (w J = w^2 / (w / J)):
        three contractions. Otherwise it is y . M_{1/J}^-1 y (y = M u_c), M_{1/J} z = y solved by
        conjugate gradients on all elements at once, preconditioned by sqrt(J) M^-1 sqrt(J) at the
        nodes (its inverse where J is constant): a few iterations to round-off."""
        medium = self.medium  # with one, per component c the products in M_{eps_c W} (M_{mu_c W})
        if self.points == self.order + 1:
            return self.element_products(xp, u, slice(None))
        if tolerance is None:  # round-off of the working precision (float32 cannot reach 1e-14)
            tolerance = max(1e-14, 20 * float(np.finfo(u.dtype).eps))
        y = along3(xp, self.mass_1d, u)
        root = self.root_jacobian

        inverse_weights = self.inverse_jacobian_weights if medium is None else medium.inverse_weights

        def apply(z):
            return along3(xp, self.v.T, inverse_weights * along3(xp, self.v, z))

        def precondition(r):
            return root * along3(xp, self.inverse_mass_1d, root * r)

        axes = tuple(range(2, y.ndim))  # per component and element

        def ratio(a, b):  # a / b, 0 where b is 0 (a zero component of some element: done)
            return xp.where(b > 0, a / xp.where(b > 0, b, 1), 0)

        z, r = xp.zeros_like(y), y.copy()
        h = precondition(r)
        p, rh = h.copy(), xp.sum(r * h, axis=axes)
        scale = xp.sqrt(xp.abs(rh))
        for _ in range(iterations):
            ap = apply(p)
            step = ratio(rh, xp.sum(p * ap, axis=axes))
            z += step[..., None, None, None] * p
            r -= step[..., None, None, None] * ap
            h = precondition(r)
            rh_new = xp.sum(r * h, axis=axes)
            if float(xp.max(ratio(xp.sqrt(xp.abs(rh_new)), scale))) < tolerance:
                break
            p = h + ratio(rh_new, rh)[..., None, None, None] * p
            rh = rh_new
        return xp.sum(y * z, axis=axes, dtype=xp.float64).sum(axis=1)  # float64 also in a float32 run

    def element_products(self, xp, u, elements):
        """energy_products of the elements ``elements`` (u their fields, (6, K, n, n, n)) where Q = N + 1
        (its closed form; [output.integrals] over a region), else None (no per-element form)."""
        if self.points != self.order + 1:
            return None
        weights = self.square_energy_weights if self.medium is None else self.medium.energy_weights
        # float64 also in a float32 run; a Bloch pair's real part only (as the integrals' densities)
        gauss = along3(xp, self.v, u[:6]).astype(xp.float64)
        return xp.sum(gauss * gauss * weights[..., elements, :, :, :], axis=(2, 3, 4)).sum(axis=1)

    def face_load(self, xp, face_values, factor, epsilon, mu, alpha):
        """S_E, S_H at the GLL face nodes (6, E, 6, n, n) from the jumps of the traces.

        face_values: (2, 6, E, 6, n, n) own values and the summed values from the exchange;
        factor (2, E, 6): the boundary factors (1 on interior faces)."""
        own, summed = face_values
        interior = (factor[0] == 1.0) & (factor[1] == 1.0)
        # the jump own - neighbour: 2 own - sum inside; f * own on a boundary (its ghost state)
        jump_e = xp.where(interior[:, :, None, None], 2 * own[0:3] - summed[0:3], factor[0][:, :, None, None] * own[0:3])
        jump_h = xp.where(interior[:, :, None, None], 2 * own[3:6] - summed[3:6], factor[1][:, :, None, None] * own[3:6])
        n = self.normals
        je, jh = along2(xp, self.v, jump_e), along2(xp, self.v, jump_h)
        # the reference kernels' flux (reference.add_surface_terms) with sums = -n x jump
        sum_e, sum_h = -cross(xp, n, je), -cross(xp, n, jh)
        if self.medium is None:
            impedance = (mu / epsilon) ** 0.5
            flux_e = 0.5 * (sum_h - (alpha / impedance) * cross(xp, n, sum_e)) / epsilon
            flux_h = 0.5 * (-sum_e - (alpha * impedance) * cross(xp, n, sum_h)) / mu
        else:  # materials.py's Riemann fluxes per component, eps and mu in the masses (galerkin_media.py)
            a, b, c, d = self.medium.flux  # (E, 6, Q, Q) each
            flux_e = a * sum_h - alpha * b * cross(xp, n, sum_e)
            flux_h = -(c * sum_e + alpha * d * cross(xp, n, sum_h))
        w = self.face_weights
        return (along2(xp, self.v.T, flux_e * w), along2(xp, self.v.T, flux_h * w))

    def loads(self, xp, u, face_values, factor, epsilon, mu, alpha):
        """(M_W dE/dt, M_W dH/dt): the volume and face integrals at the GLL nodes, (6, E, n, n, n)."""
        own = face_values[0]
        load = xp.concatenate([self.volume_load(xp, u[3:6], own[3:6]), -self.volume_load(xp, u[0:3], own[0:3])])
        if self.medium is None:
            load[0:3] /= epsilon
            load[3:6] /= mu
        elif self.medium.loss_weights is not None:  # eps and mu in the masses, sigma a load (galerkin_media.py)
            load[0:3] -= along3(xp, self.v.T, self.medium.loss_weights * along3(xp, self.v, u[0:3]))
        face_e, face_h = self.face_load(xp, face_values, factor, epsilon, mu, alpha)
        for f in range(NUM_FACES):
            sl = face_slice(f, self.order)
            load[0:3][sl] += face_e[:, :, f]
            load[3:6][sl] += face_h[:, :, f]
        return load

    def rhs(self, xp, u, face_values, factor, out, epsilon, mu, alpha):
        weights = None if self.medium is None else self.medium.inverse_weights
        out[...] = self.inverse_mass(xp, self.loads(xp, u, face_values, factor, epsilon, mu, alpha), weights=weights)
        return out


def attach(system, points: int | None = None, cofactors: str = "invariant", volume: str = "skew") -> None:
    """Make ``system`` (a MaxwellSystem) step with this operator: the exchange carries the raw
    face values of u (whose sums give the neighbours'), the rhs and the energy are this
    module's, and no fused stage runs (on the CUDA backend the rhs and the stage are
    galerkin_cuda's kernel). ``points``, ``cofactors`` and ``volume`` (WeightAdjustedOperator's) are for
    benchmarks and tests only, called again on a built system; no case key chooses them."""
    from lobatto.systems.dg import face_values
    from lobatto.systems.maxwell import galerkin_cpu
    from lobatto.systems.maxwell.galerkin_cuda import kernel_for
    from lobatto.systems.maxwell.galerkin_media import GalerkinMedium

    xp, order = system.backend.xp, system.order
    operator = WeightAdjustedOperator(system.geometry, points, cofactors, volume).to(system.backend)
    if system.medium is not None:  # per-point eps, mu, sigma at the Gauss points
        operator.medium = GalerkinMedium(operator, system).to(system.backend)
    system.galerkin = operator
    operator.cuda = kernel_for(system.backend, operator)  # the CUDA kernel (None: this array code)
    system.overlap = False  # one exchange, then the whole rhs (the operator is not split by elements)

    def traces(u, normals, out):
        if operator.cuda is not None:
            return operator.cuda.face_values(u, out)  # one kernel instead of slices, a stack and a copy
        out[...] = face_values(xp, u, order)
        return out

    def rhs(u, sums, geometry, out, epsilon, mu, alpha, elements=None):
        if operator.cuda is not None:
            return operator.cuda(u, sums, geometry["face_factors"], out, epsilon, mu, alpha)
        own = face_values(xp, u, order)
        return operator.rhs(xp, u, (own, sums), geometry["face_factors"], out, epsilon, mu, alpha)

    def stage(u, residual, sums, geometry, epsilon, mu, alpha, a, b, dt, elements=None):
        return operator.cuda.stage(u, residual, sums, geometry["face_factors"], epsilon, mu, alpha, a, b, dt)

    compiled = galerkin_cpu.rhs_kernel(system.backend, operator)  # None: the array code (no compiler, not cpu)
    # the C energy's conjugate gradients only where the square rule's closed form does not hold
    energy_products = None if operator.points == order + 1 else galerkin_cpu.energy_kernel(system.backend, operator)
    if energy_products is not None:
        operator.energy_products = energy_products  # the same products in C
    system.traces_kernel, system.rhs_kernel = traces, compiled or rhs
    system.stage_kernel = stage if operator.cuda is not None else None  # otherwise: the rhs, then the update
    if any(getattr(term, "corrects_sums", False) for term in getattr(system, "terms", ())):
        system.sums_corrected = False  # attached again to a built system with a plane wave: the new kernels too
        correct_sums(system)


def correct_sums(system) -> None:
    """Let terms with ``corrects_sums`` (tfsf_galerkin.py) change the exchanged sums before the
    rhs and the stage kernel read them: the flux, linear in the jump 2 own - sums, then carries
    their correction through this form's own lift and M_W^-1, whichever kernel runs (array
    code, C or CUDA). Installed once, by the first such term (the plain kernels stay
    themselves otherwise: tests read their attributes)."""
    if getattr(system, "sums_corrected", False):
        return
    system.sums_corrected = True

    def correct(sums):
        for term in system.terms:
            if getattr(term, "corrects_sums", False):
                term.correct(sums)

    def corrected_rhs(kernel):  # rhs(u, sums, geometry, out, ...)
        def call(u, sums, *args, **keywords):
            correct(sums)
            return kernel(u, sums, *args, **keywords)
        return call

    def corrected_stage(kernel):  # stage(u, residual, sums, geometry, ...): the sums come third
        def call(u, residual, sums, *args, **keywords):
            correct(sums)
            return kernel(u, residual, sums, *args, **keywords)
        return call

    system.rhs_kernel = corrected_rhs(system.rhs_kernel)
    if system.stage_kernel is not None:
        system.stage_kernel = corrected_stage(system.stage_kernel)


def check_supported(system, where: str = "case") -> None:
    """InputError for a stage term the Galerkin form does not take: a guard for kinds added later
    (every kind is taken now, TAKEN_TERMS: poles through dispersive_galerkin.py, plane waves and
    ports' launches through tfsf_galerkin.py's sums correction, dipoles with delta M_{eps W}^-1
    phi(x0) (sources.py), the PML's pointwise rates, which are the layer's Galerkin form)."""
    from lobatto.errors import InputError

    # (a Bloch pair's imaginary part's terms are the real part's kinds: "sources_im", "pml_im", bloch.py)
    parts = [table_of(t.name) for t in system.terms
             if t.name.partition(".")[0].removesuffix("_im") not in TAKEN_TERMS]
    if parts:
        raise InputError(f'{where}: [discretization] volume_form = "galerkin" does not take {", ".join(parts)} '
                         'yet; use volume_form = "split"')


#: the stage terms (terms.py names) the Galerkin form takes (check_supported)
TAKEN_TERMS = ("sources", "pml", "plane_wave", "port", "dispersion")


def table_of(term: str) -> str:
    """The case-file table a stage term comes from (its name: "pml", "plane_wave.<name>",
    "dispersion.<name>", "port.<name>")."""
    kind, _, name = term.partition(".")
    return {"pml": "[pml]", "plane_wave": f"[source.{name}] (plane_wave)",
            "dispersion": f"[material.{name}] (dispersive)", "port": f"[port.{name}]"}.get(kind, term)


def energy_integral(system, u, elements, groups=(0, 1)):
    """[output.integrals]' energy of ``elements`` (u their fields) in the Galerkin form's own norm
    (electric: group 0, magnetic: 1), or None where the system does not run it or the rule has
    no per-element form (the nodal mass then integrates the density)."""
    operator = getattr(system, "galerkin", None)
    parts = None if operator is None else operator.element_products(system.backend.xp, u, elements)
    if parts is None:
        return None
    scale = (1.0, 1.0) if operator.medium is not None else (system.epsilon, system.mu)
    return 0.5 * sum(scale[g] * float(parts[3 * g:3 * g + 3].sum()) for g in groups)


def energy(system, u) -> float:
    """1/2 (eps E.M_W E + mu H.M_W H): the norm in which the Galerkin operator is stable."""
    parts = system.galerkin.energy_products(system.backend.xp, u)
    if system.galerkin.medium is not None:  # eps_c, mu_c already in the products
        return 0.5 * float(parts.sum())
    return 0.5 * float(system.epsilon * parts[0:3].sum() + system.mu * parts[3:6].sum())
