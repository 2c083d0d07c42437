"""Linear acoustics (pressure and velocity), first-order form, DG: the second system."""
