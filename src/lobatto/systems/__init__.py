"""Physical systems: each a short declarative class over the backend contract, its kernels
beside it (``<system>/kernels``, ``<system>/cpu.py``, ``<system>/cuda.py``); ``registry``
maps ``[physics] equations`` names to them."""
