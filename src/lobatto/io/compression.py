"""Lossless compression of HDF5 datasets: the choices of ``[output] compression`` and
``[checkpoint] compression``, as h5py dataset-creation keywords.

``"gzip"`` is built into every HDF5 library. ``"lz4"`` and ``"zstd"`` are HDF5 filter
plug-ins that the ``hdf5plugin`` package (the optional extra ``lobatto[compress]``) registers
when it is imported; files written with them need it to be read too. Every choice but
``"none"`` runs the byte shuffle first, which groups the bytes of equal significance of the
float64 values and makes them compress much better (benchmarks/compression.py measures it).
"""

from __future__ import annotations

import math

from lobatto.errors import InputError

__all__ = ["COMPRESSIONS", "PLUGIN_COMPRESSIONS", "check_available", "dataset_options", "register_filters"]

COMPRESSIONS = ("none", "gzip", "lz4", "zstd")
#: the choices that need the hdf5plugin package
PLUGIN_COMPRESSIONS = ("lz4", "zstd")
#: gzip level: 4 compresses float64 fields nearly as well as 9 at a fraction of the time
GZIP_LEVEL = 4
#: zstd level: 3 is zstd's own default (fast); higher levels gain little on float64 fields
ZSTD_LEVEL = 3
#: target size of one chunk of a compressed dataset: large enough for the filters to work
#: well, small enough that a rank reading a few elements does not decompress much more
CHUNK_BYTES = 1 << 20


def register_filters() -> bool:
    """Import hdf5plugin (which registers the lz4 and zstd filters with HDF5); False if it is
    not installed."""
    try:
        import hdf5plugin  # noqa: F401
    except ImportError:
        return False
    return True


def check_available(compression: str, where: str) -> None:
    """InputError naming ``where`` (``"case.toml: [checkpoint] compression"``) when the
    chosen compression needs hdf5plugin and it is not installed."""
    if compression in PLUGIN_COMPRESSIONS and not register_filters():
        raise InputError(f'{where} = "{compression}" needs the hdf5plugin package, which is not installed '
                         f"(pip install 'lobatto[compress]' or pip install hdf5plugin), or choose \"gzip\" "
                         f'or "none"')


def _chunks(shape: tuple, itemsize: int) -> tuple:
    """Whole elements along the first axis, at most about CHUNK_BYTES a chunk, the elements
    spread evenly over the chunks (HDF5 stores a partial last chunk at full size)."""
    per_element = itemsize * math.prod(shape[1:])
    most = max(1, min(shape[0], CHUNK_BYTES // max(per_element, 1)))
    count = math.ceil(shape[0] / most)
    return (math.ceil(shape[0] / count),) + tuple(shape[1:])


def dataset_options(compression: str, shape: tuple, itemsize: int, checksum: bool = False) -> dict:
    """Keywords for ``h5py.Group.create_dataset`` of an array of ``shape`` (first axis the
    elements): chunking, the shuffle and the compression filter, and with ``checksum`` HDF5's
    fletcher32 filter (a checksum per chunk, verified whenever the chunk is read)."""
    if compression not in COMPRESSIONS:
        raise ValueError(f"unknown compression {compression!r} (expected one of {', '.join(COMPRESSIONS)})")
    if compression == "none" and not checksum:
        return {}
    if not shape or 0 in shape:
        return {}  # HDF5 refuses chunks on an empty dataset (any zero extent); nothing to compress or check
    options: dict = {"chunks": _chunks(tuple(shape), itemsize)}
    if checksum:
        options["fletcher32"] = True
    if compression == "none":
        return options
    options["shuffle"] = True
    if compression == "gzip":
        options.update(compression="gzip", compression_opts=GZIP_LEVEL)
    else:
        check_available(compression, "compression")
        import hdf5plugin

        plugin = hdf5plugin.LZ4() if compression == "lz4" else hdf5plugin.Zstd(clevel=ZSTD_LEVEL)
        options.update(dict(plugin))
    return options
