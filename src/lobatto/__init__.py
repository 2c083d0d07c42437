"""lobatto: GPU-native high-order spectral-element framework."""

__version__ = "0.1.0"
