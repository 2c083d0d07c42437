"""Incompressible Navier–Stokes by PN-PN spectral elements (docs/navier-stokes.md)."""
