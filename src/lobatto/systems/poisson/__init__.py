"""Steady diffusion-reaction (Poisson, Helmholtz) by continuous Galerkin: system.py."""
