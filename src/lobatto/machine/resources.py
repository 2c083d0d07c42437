"""Memory a run needs, estimated before anything is allocated, and the memory there is.

    estimate = estimate_run_memory(elements_per_rank, order, fields=6, trace_components=6,
                                   precision="float64", ranks=size, backend="cuda")
    check_fits(estimate, host_available, device_available, "[mesh] elements = [400, 400, 400]")

A box of 1000^3 elements at order 7 would otherwise spend minutes in ``box_mesh`` before
NumPy reports "Unable to allocate 59.6 GiB"; the estimate is arithmetic and refuses it at once.

The estimate follows the arrays the code allocates, phase by phase, and takes the largest
sum of what is alive at one time (P = E (N+1)^3 points and F = 6 E (N+1)^2 face points of a
rank's E elements, f fields, c trace components, p bytes per value of the backend's precision;
host-side NumPy arrays are float64 whatever the precision):

* mesh (mesh/box.py, mesh.py; ``halo_last`` copies it): about 1 KiB per element while it is
  built, 400 bytes per element kept, plus a curved mesh's nodes (3 (q+1)^3 float64 per element
  at geometry order q). A mesh file is read whole on every rank (the reader's nodes and the whole
  mesh built from them: about twice the nodes plus 1 KiB per element of the file) before the
  rank keeps its part. The ``metis`` and ``rsb`` partitioners build the whole
  mesh's graph on every rank first (3 KiB per element of the whole mesh).
* geometry (mesh/geometry.py): kept 14 P + 5 F float64 (coords 3, metrics 9, Jacobian, mass;
  normals 3, surface Jacobian, lift on faces); while the metric terms are formed from
  d x / d r (9 P) the peak is 24 P, and the GLL-spacing pass adds 7 P to what is kept.
* face exchange (systems/dg.py, comm/local.py LocalPlan): face-point ids and the
  gather-scatter's index arrays, 4.5 F int64 kept, 3 F more while they are built; the
  trace buffer c F p; the device copy of the geometry (metrics, normals, lift, mass:
  (10 P + 4 F) p), which on the CPU in float64 is the host arrays themselves.
* states: u (f P p) and the integrator's ``integrator_states`` more (1: the 2N-storage
  residual; a Butcher scheme of s stages holds s + 2: see :func:`stepper_states`), one more
  while the stepper allocates (and, for a Butcher scheme, one while it steps); the initial
  fields are evaluated on the host (f P float64, plus 4 P for the expression's temporaries,
  plus the conversion to p).
* CUDA: the fused face exchange (systems/maxwell/fused.py) adds two trace buffers (2 c F p)
  and the partner map (F int32), and 6 F int64 on the host while it is set up; each
  host-to-device copy goes through a pinned staging buffer that CuPy's pinned-memory pool
  keeps, so the host holds about as much again as it sent.
* reference kernels (no compiled kernel for the system on this backend): a scratch state and
  3 f P + 3 c F values of temporaries per stage (on CUDA 9 P more: CuPy's einsum copies the
  metric terms).
* diagnostics: the energy (f/2 + 2) P p; errors against exact fields (the exact values, a
  float64 copy of u and the difference: 3 f P float64, the peak of most CPU runs).

The sum is given 20% and 32 MiB more (MARGIN, FIXED_BYTES) for what is not counted array
by array: allocator fragmentation, kernels' thread buffers, transport buffers. Measured
(tests/unit/test_resources.py has the table): CPU runs of 8^3 to 24^3 elements, orders 3
and 7, use 1/1.15 (the largest) to 1/1.83 (the smallest) of the estimate (high-water mark
of resident memory); on an H100 the device's CuPy pool peaks at 1/1.18 to 1/1.50 of the
device estimate. Without the
margin the estimate is 1.00 to 1.12 times the arrays' own peak (tracemalloc) over orders
1 to 12, acoustics, rk4, float32 and deformed meshes.
"""

from __future__ import annotations

import math
import os

from lobatto.errors import InputError

GIB = 1024**3
MIB = 1024**2

#: host bytes per element of a rank's mesh: while box_mesh builds it (np.unique of the
#: corner ids, connectivity, check, halo_last's reordered copy), and kept afterwards
MESH_BUILD_BYTES = 1024
MESH_KEPT_BYTES = 400
#: host bytes per element of the WHOLE mesh when a graph partitioner builds it on every rank
GRAPH_PARTITION_BYTES = 3072
#: relative and fixed allowance for what is not counted array by array (allocator rounding,
#: per-thread kernel buffers, transport buffers, the CuPy memory pool's blocks)
MARGIN = 0.20
FIXED_BYTES = 32 * MIB

PRECISION_BYTES = {"float64": 8, "float32": 4}


def stepper_states(scheme) -> int:
    """State-sized arrays an integrators.Stepper keeps for ``scheme`` (duck-typed: a
    2N-storage scheme, with coefficients ``A``, keeps its residual; a Butcher scheme its
    ``stages`` stage derivatives, the stage state and the start state)."""
    return 1 if hasattr(scheme, "A") else int(scheme.stages) + 2


def estimate_run_memory(num_elements, order, fields, trace_components, precision="float64", ranks=1, *,
                        backend="cpu", integrator_states=1, reference_kernels=False, fused_exchange=None,
                        partitioner="rcb", exact_fields=True, geometry_order=1, file_elements=None, dim=3) -> dict:
    """Peak bytes per rank on the host and on the device of a run (see the module docstring).

    num_elements:      elements on the rank that holds the most (the whole mesh on one rank;
                       about ceil(total / ranks) on several).
    order:             polynomial order N.
    fields:            state components (Maxwell 6, acoustics 4).
    trace_components:  values per face point the face exchange carries (Maxwell 6, acoustics 2).
    precision:         the backend's "float64" or "float32".
    ranks:             ranks of the run (the graph partitioners' whole-mesh term; the advice).
    backend:           "cpu" (the backend's arrays are host arrays: everything is counted
                       in ``host_bytes`` and ``device_bytes`` is 0) or "cuda".
    integrator_states: state-sized arrays the stepper keeps (:func:`stepper_states`).
    reference_kernels: True where the system has no compiled kernels on this backend (the
                       stage's temporaries are then counted).
    fused_exchange:    CUDA's fused face exchange (two more trace buffers); None: assumed
                       wherever it can run (CUDA with a 2N-storage scheme), to be safe.
    partitioner:       "rcb" (each rank builds its part only), "metis" or "rsb" (each rank
                       first builds the whole mesh's graph).
    exact_fields:      whether errors against exact fields are computed (at the end of a run).
    geometry_order:    q of a curved mesh's nodes (1: corners only, nothing more kept).
    file_elements:     elements of the mesh file every rank reads whole (None: a box, built
                       part by part).
    dim:               the mesh's dimension: 3, or 2 for quadrilaterals (a k axis of one
                       point: n^2 points and 4 edges of n points per element).

    Returns {"host_bytes", "device_bytes", "host_phase", "device_phase" (where each peak
    falls), "elements_per_rank", "points_per_rank", "order", "ranks", "backend",
    "precision"}. Numbers of arbitrary size are fine: nothing is allocated.
    """
    if precision not in PRECISION_BYTES:
        raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"backend must be 'cpu' or 'cuda', got {backend!r}")
    E, N, f, c = int(num_elements), int(order), int(fields), int(trace_components)
    ranks, S = max(int(ranks), 1), int(integrator_states)
    if E < 0 or N < 1 or f < 1 or c < 0 or S < 1:
        raise ValueError("estimate_run_memory: num_elements >= 0, order >= 1, fields >= 1, "
                         "trace_components >= 0 and integrator_states >= 1 expected")
    p = PRECISION_BYTES[precision]
    n = N + 1
    if dim not in (2, 3):
        raise ValueError(f"estimate_run_memory: dim must be 2 or 3, got {dim!r}")
    P = E * n**dim  # volume points
    F = 2 * dim * E * n ** (dim - 1)  # face points
    D = 8  # host arrays are float64 / int64
    on_device = backend == "cuda"
    if fused_exchange is None:
        fused_exchange = on_device and S == 1
    fused_exchange = bool(fused_exchange) and on_device

    host: dict[str, int] = {}
    device: dict[str, int] = {}

    # --- mesh --------------------------------------------------------------------------
    if ranks > 1 and partitioner in ("metis", "rsb"):
        host["partition"] = GRAPH_PARTITION_BYTES * E * ranks
    nodes = 3 * (int(geometry_order) + 1) ** dim * 8 if geometry_order > 1 else 0  # curved nodes per element
    if file_elements is not None:
        host["mesh file"] = int(file_elements) * (MESH_BUILD_BYTES + 2 * nodes)
    host["mesh"] = (MESH_BUILD_BYTES + 2 * nodes) * E
    mesh = (MESH_KEPT_BYTES + nodes) * E

    # --- geometry ------------------------------------------------------------------------
    geometry = (14 * P + 5 * F) * D + E
    host["geometry"] = mesh + max(24 * P * D, geometry + 7 * P * D)
    base = mesh + geometry

    # --- the system's face exchange and device geometry ------------------------------------
    device_geometry = (10 * P + 4 * F) * p + E * (1 + 12 * p)
    gs_kept = (4.5 * F + (2 * F if ranks > 1 else 0)) * D
    gs_build = 3 * F * D
    trace = c * F * p
    if on_device:
        # host: the plan, kept; each host-to-device copy goes through a pinned staging
        # buffer that CuPy's pinned-memory pool keeps afterwards (so the host holds about
        # as much as it sent), and a conversion to float32 makes a host copy first
        staged = device_geometry + 1.5 * F * D
        convert = 9 * P * p if p != D else 0
        host["system"] = base + gs_kept + gs_build + staged + convert
        base += gs_kept + staged
        dev = device_geometry + trace + (1.5 * F * D if ranks == 1 else 4 * F * D)
        device["system"] = dev
    else:
        copy = device_geometry if p != D else E * (1 + 12 * p)
        host["system"] = base + copy + trace + gs_kept + gs_build
        base += copy + trace + gs_kept
        dev = 0

    # --- stepper ---------------------------------------------------------------------------
    state = f * P * p
    stepper = S * state
    fused = 0
    if fused_exchange:
        fused = 2 * c * F * p + 4 * F
        host["fused exchange"] = base + 6 * F * D
        base += 4 * F  # the partner map's staging buffer
    if on_device:
        device["stepper"] = dev + stepper + fused + state
        dev += stepper + fused
    else:
        host["stepper"] = base + stepper + state
        base += stepper

    # --- initial state: evaluated on the host, converted, copied ---------------------------
    values = f * P * D
    expression_temps = 4 * P * D
    conversion = f * P * p if (on_device or p != D) else 0
    host["initial state"] = base + values + max(expression_temps, conversion)
    if on_device:
        device["initial state"] = dev + state
        dev += state
        base += state  # its staging buffer
    else:
        base += state

    # --- stepping and diagnostics ------------------------------------------------------------
    energy = (f // 2 + 2) * P * p
    scratch = state if reference_kernels else 0
    stage_temps = (3 * f * P + 3 * c * F) * p if reference_kernels else 0
    if reference_kernels and on_device:
        stage_temps += 9 * P * p  # CuPy's einsum copies the metric terms to its own layout
    butcher_temps = state if S > 1 else 0  # (a dt) k_j before it is added
    transient = max(stage_temps, energy, butcher_temps)
    if on_device:
        device["steps"] = dev + scratch + transient
        dev += scratch
    else:
        host["steps"] = base + scratch + transient
        base += scratch
    # output: u as float64 on the host (one copy where it is not already), per-field buffers
    host["output"] = base + (f * P * D if (on_device or p != D) else 0) + 2 * P * D
    if exact_fields:
        # exact values, a float64 copy of u (and on a device its transfer), the difference
        host["errors"] = base + 3 * f * P * D + (f * P * p if on_device else 0) + 2 * P * D

    host_phase = max(host, key=host.get)
    host_bytes = _with_margin(host[host_phase])
    if device:
        device_phase = max(device, key=device.get)
        device_bytes = _with_margin(device[device_phase])
    else:
        device_phase, device_bytes = None, 0
    return {
        "host_bytes": host_bytes,
        "device_bytes": device_bytes,
        "host_phase": host_phase,
        "device_phase": device_phase,
        "elements_per_rank": E,
        "points_per_rank": P,
        "order": N,
        "ranks": ranks,
        "backend": backend,
        "precision": precision,
    }


def _with_margin(nbytes) -> int:
    return int(math.ceil(nbytes * (1 + MARGIN))) + FIXED_BYTES


def available_host_memory() -> int | None:
    """Bytes of host memory available to a new allocation (MemAvailable of /proc/meminfo:
    free memory plus what the kernel can reclaim), else free pages by os.sysconf, else None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    parts = line.split()
                    scale = {"kb": 1024, "mb": MIB, "gb": GIB}.get(parts[2].lower(), 1) if len(parts) > 2 else 1
                    return int(parts[1]) * scale
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    if pages is None or size is None or pages < 0 or size <= 0:
        return None
    return int(pages) * int(size)


def format_gib(nbytes) -> str:
    """Bytes as GiB for messages: 3 significant digits, thousands separated when large."""
    gib = float(nbytes) / GIB
    if gib >= 1000:
        return f"{gib:,.0f}"
    if gib >= 0.01:
        return f"{gib:.3g}"
    return f"{gib:.2g}"


def _advice(estimate: dict, need, available, where: str) -> str:
    ranks = int(estimate.get("ranks", 1))
    # the per-rank need falls roughly in proportion to the elements per rank
    wanted = max(ranks + 1, math.ceil(ranks * need / max(available, 1)))
    more = (f"about {wanted:,} ranks" + (" on more nodes" if where == "host" else " (one GPU each)")
            if wanted <= 10**6 else "far more ranks")
    return f"use fewer [mesh] elements or a lower [discretization] order, or {more}"


def biggest_item_message(what: str, need: float, where: str, top, available: float, extra: str = "") -> str:
    """The one line of a run that does not fit, naming its biggest item ``top`` (a memory_items
    Item); ``where``: "host" or "device"; ``extra``: " more" for a second, later check."""
    per = "rank" if where == "host" else "GPU"
    return (f"{what} needs about {format_gib(need)} GiB{extra} of {where} memory per {per} (the biggest item: "
            f"{top.what}, {format_gib(getattr(top, where))} GiB), {format_gib(available)} GiB available: "
            f"{top.advice or 'make it smaller'}")


def check_fits(estimate: dict, host_available, device_available, what: str) -> None:
    """Raise InputError (one line) when the estimate exceeds the memory available.

    ``estimate``: from :func:`estimate_run_memory`. ``host_available`` / ``device_available``:
    bytes this rank may use (None: unknown, not checked); with several ranks on one node pass
    the node's available memory divided by the ranks that share it. ``what`` starts the
    message: what is being run (say "[mesh] elements = [1000, 1000, 1000] at order 7").
    """
    checks = (("host", estimate.get("host_bytes", 0), host_available),
              ("device", estimate.get("device_bytes", 0), device_available))
    for where, need, available in checks:
        if not need or available is None:
            continue
        if need > available:
            per_rank = " per rank" if where == "host" else " per GPU"
            top = estimate.get(f"biggest_{where}_item")  # memory_items.with_items: a part outweighs the mesh
            if top is not None:
                raise InputError(biggest_item_message(what, need, where, top, available))
            raise InputError(
                f"{what} needs about {format_gib(need)} GiB of {where} memory{per_rank} "
                f"({int(estimate.get('elements_per_rank', 0)):,} elements on the rank), "
                f"{format_gib(available)} GiB available: {_advice(estimate, need, available, where)}"
            )
