"""What the parts of a run allocate beyond the mesh, geometry and states, each counted by the
part itself, and the checks that use those counts (docs/case-file.md, "Memory").

A monitor, physics term, solver or the checkpoints answer ``memory_estimate(case, layout)``
with a list of :class:`MemoryItem` for a :class:`RunLayout` (what is known before the mesh
is built). ``runner.build.check_memory`` adds them to ``resources.estimate_run_memory`` with
:func:`with_items`, and ``resources.check_fits`` names the biggest when it refuses the run.
Items whose extent is known only once the mesh is built are checked again where they are
set up, before they allocate: :func:`check_allocation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lobatto.errors import InputError
from lobatto.machine.resources import FIXED_BYTES, MARGIN, PRECISION_BYTES, biggest_item_message


@dataclass(frozen=True)
class RunLayout:
    """What a part of a run needs to know to estimate its arrays, before anything is built.

    elements: elements of the rank that holds the most; total_elements: of the whole mesh;
    fields: the case's state fields (with Navier-Stokes' scalars); box: ``[mesh] elements``
    of a box mesh (None: a file mesh); steps: the run's steps when known from the case
    (``[time] t_end / dt``), else None; dim: 2 or 3, the mesh's dimension."""

    elements: int
    total_elements: int
    order: int
    fields: int
    ranks: int = 1
    precision: str = "float64"
    backend: str = "cpu"
    box: tuple | None = None
    steps: int | None = None
    dim: int = 3  # the mesh's dimension: 2 for quadrilaterals (a k axis of one point)

    @property
    def points(self) -> int:
        """Volume points of the rank: E (N+1)^dim."""
        return self.elements * (self.order + 1) ** self.dim

    @property
    def value_bytes(self) -> int:
        """Bytes of one value of the backend's arrays."""
        return PRECISION_BYTES[self.precision]

    @property
    def on_device(self) -> bool:
        return self.backend == "cuda"

    def backend_item(self, what: str, nbytes, host=0.0, advice: str = "", known: bool = True) -> "MemoryItem":
        """A MemoryItem of ``nbytes`` in the backend's arrays (the device's on CUDA, the host's
        on the CPU) and ``host`` bytes of host arrays."""
        if self.on_device:
            return MemoryItem(what, host=float(host), device=float(nbytes), advice=advice, known=known)
        return MemoryItem(what, host=float(host) + float(nbytes), advice=advice, known=known)


@dataclass(frozen=True)
class MemoryItem:
    """Bytes per rank that one part of a run allocates (a monitor, a physics term, a solver).

    what:   names it as the case file does, with the counts that make it large
            ("[output.dft] 200,000 frequencies x 6 fields on 64,000 points")
    host, device: bytes per rank (peak while the part is alive); device is 0 on the CPU
    advice: what to change in the case to shrink it ("use fewer [output.dft] frequencies")
    known:  False where its extent on the rank is known only once the mesh is built (a
            material given by ``where``, a region of a file mesh): the bytes are then an upper
            bound, checked again by ``check_allocation`` where the part is set up."""

    what: str
    host: float = 0.0
    device: float = 0.0
    advice: str = ""
    known: bool = True


def with_items(estimate: dict, items) -> dict:
    """The estimate of estimate_run_memory with the parts' items added to its peaks (they are
    alive while the run steps; the margin applies to them too). Items not ``known`` count only
    where they are certain (not at all here: check_allocation sees them when set up). The
    result keeps ``base_host_bytes`` / ``base_device_bytes`` and the ``items``."""
    items = [item for item in items if item.known]
    host = sum(item.host for item in items)
    device = sum(item.device for item in items)
    out = dict(estimate, items=items, base_host_bytes=estimate["host_bytes"],
               base_device_bytes=estimate["device_bytes"])
    out["host_bytes"] = estimate["host_bytes"] + _margin_only(host)
    out["device_bytes"] = estimate["device_bytes"] + _margin_only(device)
    for where in ("host", "device"):  # resources.check_fits names it
        out[f"biggest_{where}_item"] = biggest_item(out, where)
    return out


def _margin_only(nbytes) -> int:
    return int(math.ceil(nbytes * (1 + MARGIN)))


def biggest_item(estimate: dict, where: str):
    """The item that uses the most ``where`` ("host" or "device") memory if it outweighs the
    mesh and states themselves, else None."""
    items = [item for item in estimate.get("items", ()) if getattr(item, where) > 0]
    if not items:
        return None
    top = max(items, key=lambda item: getattr(item, where))
    base = estimate.get(f"base_{where}_bytes", 0) - FIXED_BYTES
    return top if getattr(top, where) * (1 + MARGIN) > base else None


def check_allocation(items, host_available, device_available, what: str) -> None:
    """InputError (one line) when the parts about to be allocated (items whose extent is now
    known) need more than the memory available now: the second check of items that were not
    ``known`` before the mesh was built. Called on every rank inside collective_errors."""
    host = _margin_only(sum(item.host for item in items))
    device = _margin_only(sum(item.device for item in items))
    for where, need, available in (("host", host, host_available), ("device", device, device_available)):
        if available is None or not need or need <= available:
            continue
        top = max(items, key=lambda item: getattr(item, where))
        raise InputError(biggest_item_message(what, need, where, top, available, " more"))
