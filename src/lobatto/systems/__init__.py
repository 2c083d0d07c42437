"""Physical systems: each a short declarative class over the backend contract."""
