"""Analysis of a run's outputs after the fact: resonances of a probe's time series
(docs/electromagnetics.md). NumPy only; knows no system."""

from lobatto.analysis.resonance import Modes, resonances

__all__ = ["Modes", "resonances"]
