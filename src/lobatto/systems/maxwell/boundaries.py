"""Maxwell boundary conditions as ghost states, folded into the face-exchange sums.

A boundary face point has an id of its own, so the gather–scatter sum returns just the
element's own trace (-n x E, -n x H). A ghost state (E+, H+) turns that into the value an
interior neighbour would have produced: -n x E- + n x E+ = (1 + beta_E)(-n x E-) when
E+ = -beta_E E- on the tangential part. The table holds the factors (1 + beta_E, 1 + beta_H).
"""

from __future__ import annotations

BOUNDARY_FACTORS = {
    # Perfect electric conductor: E+ = -E-, H+ = H-  (tangential E vanishes on the wall).
    "pec": (2.0, 0.0),
    # Perfect magnetic conductor: E+ = E-, H+ = -H-.
    "pmc": (0.0, 2.0),
    # First-order Silver–Müller absorbing: E+ = H+ = 0; with the upwind flux nothing enters.
    "absorbing": (1.0, 1.0),
}
