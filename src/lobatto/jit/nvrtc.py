"""Run-time compilation of CUDA sources (NVRTC through ``cupy.RawModule``).

A source is given by path (each layer keeps its kernels beside its Python code). Its
``#include "..."`` lines are looked up in the source's own folder, then in ``include/`` here
(``common.cuh``), and inlined: the text handed to NVRTC is self-contained, so that CuPy's
on-disk kernel cache (keyed on the code) notices a change in a header too. Each module is
compiled once per (source, name expressions, options) and kept for the process; CuPy also
caches the binary on disk (``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

#: C++ spelling of the NumPy dtypes the templates are instantiated for.
CTYPES = {
    np.dtype(np.float64): "double",
    np.dtype(np.float32): "float",
    np.dtype(np.int64): "long long",
    np.dtype(np.int32): "int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.uint32): "unsigned int",
}

#: Options every module is compiled with.
BASE_OPTIONS = ("-std=c++17",)

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
_MODULES: dict = {}


def ctype(dtype) -> str:
    try:
        return CTYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"no CUDA kernel instantiation for dtype {np.dtype(dtype)}") from None


def _find_header(name: str, folder: Path) -> Path | None:
    for candidate in (folder / name, INCLUDE_DIR / name):
        if candidate.is_file():
            return candidate
    return None


def source_text(path, _seen: set | None = None) -> str:
    """The source at ``path`` with local includes inlined (each header once)."""
    seen = set() if _seen is None else _seen
    path = Path(path)
    out = []
    for line in path.read_text().splitlines():
        m = _INCLUDE.match(line)
        header = _find_header(m.group(1), path.parent) if m else None
        if header is not None:
            if header not in seen:
                seen.add(header)
                out.append(f"// ---- begin {header.name}")
                out.append(source_text(header, seen))
                out.append(f"// ---- end {header.name}")
            continue
        if line.strip() == "#pragma once":
            continue
        out.append(line)
    return "\n".join(out)


def get_module(source, name_expressions, options=()):
    """A compiled ``cupy.RawModule`` of the CUDA file at path ``source`` (cached per device)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    key = (str(source), tuple(name_expressions), tuple(options), device)
    module = _MODULES.get(key)
    if module is None:
        module = cupy.RawModule(
            code=source_text(source),
            options=BASE_OPTIONS + tuple(options),
            name_expressions=list(name_expressions),
        )
        module.compile()
        _MODULES[key] = module
    return module


def run_into(xp, out, launch):
    """launch(target) into ``out``, through a contiguous temporary when ``out`` is strided (the
    kernels index their output densely)."""
    if out.flags.c_contiguous:
        launch(out)
    else:
        target = xp.empty(out.shape, dtype=out.dtype)
        launch(target)
        out[...] = target
    return out
