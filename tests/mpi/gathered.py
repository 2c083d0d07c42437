"""For rank scripts: a run's fields gathered on rank 0 in global element order."""

from __future__ import annotations

import numpy as np


def save_fields_by_id(sim, path) -> None:
    """Collective: rank 0 writes (fields, E, ...) of every field of ``sim`` to ``path`` (.npy),
    elements sorted by global id, so that runs on any rank count compare entry by entry."""
    ids = sim.system.mesh.element_ids
    values = np.stack([sim.fields()[name] for name in sim.system.field_names])
    parts = sim.comm.gather((ids, values), root=0) if sim.comm is not None else [(ids, values)]
    if sim.rank == 0:
        ids = np.concatenate([p[0] for p in parts])
        values = np.concatenate([p[1] for p in parts], axis=1)
        np.save(path, values[:, np.argsort(ids)])
