"""What ``lobatto doctor`` learns on one rank without communicating, and the checks that
compare the ranks' answers (run on rank 0 over the gathered rows).

Every probe returns plain data (JSON-ready) and never raises for a missing package or
device: it says "not installed" or gives the reason instead.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import socket
import tempfile
from pathlib import Path

#: packages reported by version: (name shown, distribution name, module to import instead)
PACKAGES = (
    ("numpy", "numpy", "numpy"),
    ("h5py", "h5py", "h5py"),
    ("mpi4py", "mpi4py", "mpi4py"),
    ("cupy", None, "cupy"),  # its distribution is cupy-cuda12x, cupy-cuda11x, ...: ask the module
    ("matplotlib", "matplotlib", None),  # metadata only: importing it costs half a second
    ("gmsh", "gmsh", None),
    ("pymetis", "pymetis", None),
    ("nvidia-ml-py", "nvidia-ml-py", None),
)
#: packages whose versions must agree over the ranks of one job
MUST_AGREE = ("lobatto", "python", "numpy", "mpi4py", "cupy", "mpi_library")
NOT_INSTALLED = "not installed"


def short_error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


# -- devices ---------------------------------------------------------------------------
def cupy_reason() -> str | None:
    """None when CuPy imports and sees a GPU, else a short reason ("no CuPy", "no GPU ...")."""
    try:
        import cupy
    except Exception:  # noqa: BLE001
        return "no CuPy"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        return f"no GPU ({short_error(exc)})"
    return None if count > 0 else "no GPU"


def visible_devices() -> dict:
    """CUDA_VISIBLE_DEVICES and the GPUs CuPy sees (count, names, PCI bus ids)."""
    info = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "count": 0, "devices": []}
    why = cupy_reason()
    if why is not None:
        info["reason"] = why
        return info
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    info["count"] = int(count)
    for i in range(count):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props.get("name", b"?")
        info["devices"].append({
            "id": i,
            "name": name.decode(errors="replace") if isinstance(name, bytes) else str(name),
            "pci_bus_id": _bus_id(i),
            "memory_bytes": int(props.get("totalGlobalMem", 0)),
        })
    info["physical_gpus"] = nvml_gpu_count()
    return info


def _bus_id(device: int) -> str:
    import cupy

    try:
        return str(cupy.cuda.Device(device).pci_bus_id)
    except Exception:  # noqa: BLE001
        return f"device {device}"


def nvml_gpu_count() -> int | None:
    """GPUs of this host whatever CUDA_VISIBLE_DEVICES says (NVML), None without nvidia-ml-py."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001
        return None


def chosen_device(backend_name: str, local_rank: int, rank: int) -> dict:
    """The GPU a run would take on this rank: the backend's own choice (``get_backend`` with
    the node-local rank, as the driver calls it, LOBATTO_SHARE_GPUS included)."""
    if backend_name != "cuda":
        return {"backend": backend_name}
    from lobatto.backends import get_backend
    from lobatto.errors import LobattoError

    try:
        backend = get_backend("cuda", device_id=local_rank, rank=rank)
    except LobattoError as exc:
        return {"backend": "cuda", "error": str(exc)}
    return {"backend": "cuda", "device_id": backend.device_id, "name": backend.device_name,
            "pci_bus_id": _bus_id(backend.device_id)}


# -- MPI -------------------------------------------------------------------------------
def mpi_info() -> dict:
    """The MPI library mpi4py loaded, its vendor, and whether it reports CUDA support
    (lobatto's own detection, comm.transport.cuda_aware)."""
    try:
        from mpi4py import MPI
    except Exception as exc:  # noqa: BLE001
        return {"library": NOT_INSTALLED, "reason": f"mpi4py: {short_error(exc)}"}
    lines = MPI.Get_library_version().strip().splitlines()
    vendor, version = MPI.get_vendor()
    info = {"library": " ".join(lines[0].split()) if lines else "?",
            "vendor": f"{vendor} {'.'.join(map(str, version))}",
            "standard": "{}.{}".format(*MPI.Get_version())}
    from lobatto.comm.transport.cuda_aware import mpi_cuda_support

    try:
        info["cuda_aware"], info["cuda_aware_how"] = mpi_cuda_support()
    except Exception as exc:  # noqa: BLE001
        info["cuda_aware"], info["cuda_aware_how"] = False, f"detection failed ({short_error(exc)})"
    return info


def nccl_version() -> str:
    """NCCL's version through CuPy, else why there is none."""
    from lobatto.comm.transport.nccl import nccl_status

    why = cupy_reason()
    if why == "no CuPy":
        return "not available: no CuPy"
    why = nccl_status()
    if why is not None:
        return f"not available: {why}"
    from cupy.cuda import nccl

    return nccl_version_text(int(nccl.get_version()))


def nccl_version_text(code: int) -> str:
    """NCCL's version code as text: major*10000 + minor*100 + patch since 2.9, major*1000 +
    minor*100 + patch before."""
    major, rest = (code // 10000, code % 10000) if code >= 10000 else (code // 1000, code % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


# -- kernel caches -----------------------------------------------------------------------
def writable(folder: Path) -> str | None:
    """None when a file can be created in ``folder`` (made if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _contents(folder: Path, pattern: str) -> tuple[int, int]:
    count = size = 0
    if folder.is_dir():
        for path in folder.rglob(pattern):
            if path.is_file() and ".tmp" not in path.name and not path.name.startswith(".doctor-"):
                count += 1
                size += path.stat().st_size
    return count, size


def cupy_cache_dir() -> Path:
    try:
        from cupy.cuda import compiler

        return Path(compiler.get_cache_dir())
    except Exception:  # noqa: BLE001  (no CuPy: where it would put its cache)
        return Path(os.environ.get("CUPY_CACHE_DIR") or Path.home() / ".cupy" / "kernel_cache")


def kernel_caches(backend_name: str) -> list[dict]:
    """The C kernel cache (jit.c) and CuPy's kernel cache (used by jit.nvrtc): where, whether
    writable, entries and bytes. A cache the run will use and cannot write is a failure."""
    from lobatto.jit import c as jit_c

    caches = []
    c_dir = jit_c.cache_dir()
    tc = None if jit_c.disabled() else jit_c.toolchain()
    c_entry = {"name": "C kernels (jit.c)", "path": str(c_dir), "used": tc is not None,
               "set_by": "LOBATTO_CACHE_DIR" if os.environ.get("LOBATTO_CACHE_DIR") else "default"}
    if jit_c.disabled():
        c_entry["note"] = "LOBATTO_NO_CKERNELS is set: NumPy reference kernels"
    elif tc is None:
        c_entry["note"] = "no C compiler: NumPy reference kernels"
    else:
        c_entry["compiler"] = tc["version"].splitlines()[0] if tc["version"] else " ".join(tc["cc"])
        c_entry["openmp"] = bool(tc["openmp"])
    caches.append(c_entry)
    cu_dir = cupy_cache_dir()
    caches.append({"name": "CUDA kernels (CuPy/NVRTC)", "path": str(cu_dir), "used": backend_name == "cuda",
                   "set_by": "CUPY_CACHE_DIR" if os.environ.get("CUPY_CACHE_DIR") else "default"})
    for entry, pattern in zip(caches, ("*.so", "*")):
        folder = Path(entry["path"])
        if entry["used"]:
            entry["unwritable"] = writable(folder)
        else:  # not used by this run: report it, but do not create it
            entry["unwritable"] = writable(folder) if folder.is_dir() else None
        entry["writable"] = entry["unwritable"] is None
        entry["entries"], entry["bytes"] = _contents(folder, pattern)
    return caches


# -- packages ----------------------------------------------------------------------------
def _version(dist: str | None, module: str | None) -> str:
    if dist is not None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            if module is None:
                return NOT_INSTALLED
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return NOT_INSTALLED
    except Exception as exc:  # noqa: BLE001  (installed but broken)
        return f"fails to import ({short_error(exc)})"
    return str(getattr(mod, "__version__", "?"))


def cuda_version_text(code: int) -> str:
    """CUDA's version code (major*1000 + minor*10) as text."""
    return f"{code // 1000}.{(code % 1000) // 10}"


def package_versions() -> dict:
    from lobatto import __version__

    versions = {"lobatto": __version__, "python": platform.python_version()}
    for name, dist, module in PACKAGES:
        versions[name] = _version(dist, module)
    if versions["cupy"] == NOT_INSTALLED or versions["cupy"].startswith("fails"):
        versions["cuda_runtime"] = versions["cuda_driver"] = "not available: no CuPy"
    else:
        import cupy

        for key, call in (("cuda_runtime", "runtimeGetVersion"), ("cuda_driver", "driverGetVersion")):
            try:
                versions[key] = cuda_version_text(int(getattr(cupy.cuda.runtime, call)()))
            except Exception as exc:  # noqa: BLE001
                versions[key] = f"not available: {short_error(exc)}"
    return versions


# -- one rank's row ------------------------------------------------------------------------
def rank_row(rank: int, size: int, local_rank: int, backend_name: str) -> dict:
    row = {"rank": rank, "size": size, "hostname": socket.gethostname(), "local_rank": local_rank,
           "pid": os.getpid(),
           "share_gpus": os.environ.get("LOBATTO_SHARE_GPUS") == "1"}
    row["visible"] = visible_devices()
    row["device"] = chosen_device(backend_name, local_rank, rank)
    row["mpi"] = mpi_info()
    row["nccl"] = nccl_version()
    row["caches"] = kernel_caches(backend_name)
    row["packages"] = package_versions()
    row["packages"]["mpi_library"] = row["mpi"]["library"]
    return row


# -- checks over all rows (rank 0) -----------------------------------------------------------
def rank_failures(row: dict) -> list[str]:
    """This rank's own problems: no GPU for it, a kernel cache it needs and cannot write."""
    out = []
    if "error" in row["device"]:
        out.append(f"device: {row['device']['error']}")
    for cache in row["caches"]:
        if cache["used"] and not cache["writable"]:
            out.append(f"{cache['name']} cache {cache['path']} is not writable ({cache['unwritable']})")
    return out


def mapping_problems(rows: list[dict]) -> tuple[list[str], list[str]]:
    """(failures, notes) about which GPU each rank takes.

    Two ranks of one host on one GPU are a failure when the host has a GPU for each of them
    (the GPUs its ranks see, or NVML's count), since each then runs at part speed; with fewer
    GPUs and LOBATTO_SHARE_GPUS=1 the sharing is on purpose and only noted."""
    failures, notes = [], []
    hosts: dict[str, list[dict]] = {}
    for row in rows:
        hosts.setdefault(row["hostname"], []).append(row)
    for host, group in hosts.items():
        buses = {d["pci_bus_id"] for row in group for d in row["visible"]["devices"]}
        physical = max([len(buses)] + [row["visible"].get("physical_gpus") or 0 for row in group])
        users: dict[str, list[int]] = {}
        for row in group:
            bus = row["device"].get("pci_bus_id")
            if bus is not None:
                users.setdefault(bus, []).append(row["rank"])
        for bus, ranks in users.items():
            if len(ranks) < 2:
                continue
            who = f"ranks {', '.join(map(str, ranks))} on {host} use the same GPU {bus}"
            if physical >= len(group):
                failures.append(f"{who} while the host has {physical} GPUs for its {len(group)} ranks "
                                "(set CUDA_VISIBLE_DEVICES or the launcher's GPU binding)")
            elif all(row["share_gpus"] for row in group if row["rank"] in ranks):
                notes.append(f"{who} on purpose (LOBATTO_SHARE_GPUS=1, {physical} GPU{'s' if physical != 1 else ''} "
                             f"for {len(group)} ranks)")
            else:
                failures.append(f"{who} without LOBATTO_SHARE_GPUS=1")
    return failures, notes


def version_mismatches(rows: list[dict]) -> list[str]:
    """Packages whose version differs between ranks (nodes with different environments)."""
    out = []
    for key in MUST_AGREE:
        seen: dict[str, list[int]] = {}
        for row in rows:
            seen.setdefault(str(row["packages"].get(key)), []).append(row["rank"])
        if len(seen) > 1:
            out.append(f"{key} differs between ranks: " + "; ".join(
                f"{version} on rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r))}" for version, r in seen.items()))
    return out
