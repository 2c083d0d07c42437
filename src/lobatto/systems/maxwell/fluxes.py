"""Numerical fluxes for Maxwell's equations, as the penalty weight alpha of the tangential jump.

With sums S_E = -n x [E], S_H = -n x [H] ([q] = q- - q+) from the face exchange, the surface
terms added to eps dE/dt and mu dH/dt are (Hesthaven & Warburton, uniform material):
    F_E = 1/2 ( S_H - (alpha/Z) n x S_E )
    F_H = 1/2 (-S_E - alpha Z  n x S_H )
alpha = 1 is the upwind flux (dissipates the tangential jumps), alpha = 0 the central flux
(conserves the discrete energy on affine meshes).
"""

FLUX_ALPHA = {"upwind": 1.0, "central": 0.0}
