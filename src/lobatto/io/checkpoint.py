"""Checkpoint files: one directory per checkpoint, written by every rank, renamed when complete.

    checkpoints/cavity_000200/
        index.h5          rank 0: attributes (step, time, dt, case TOML, ...), every part's
                          element count, file size and global element ids
        rank00000.h5      rank r: /element_ids (E_r,) and one dataset per saved array, shaped
        rank00001.h5      (E_r, ...) with the elements first (the state: (E_r, F, n, n, n))

The directory is first written as ``cavity_000200.tmp-<pid>`` (rank 0's pid); every file is
fsynced, then rank 0 renames the directory into place. A job killed while writing leaves only
that temporary (removed by the next run), never a half-written checkpoint under a final
name, so the previous checkpoint stays usable.

What detects damage afterwards: every array is stored in chunks with HDF5's fletcher32
checksum, verified whenever a chunk is read; the index records each part's size in bytes, so a
truncated part is refused when the checkpoint is opened.

A reader asks for any set of global element ids (:meth:`Checkpoint.read`): each part is read
with h5py slices covering the rows it needs, so a restart on another number of ranks reads
each rank's own elements without gathering anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from lobatto.errors import InputError
from lobatto.io.atomic import TEMP_MARK, forget_temporary, h5_create, os_reason, output_errors, register_temporary
from lobatto.io.compression import dataset_options, register_filters
from lobatto.machine.parallel import collective_errors, rank_and_size

__all__ = ["FORMAT", "FORMAT_VERSION", "INDEX_FILE", "Checkpoint", "part_file_name", "write_checkpoint"]

FORMAT = "lobatto-checkpoint"
FORMAT_VERSION = 1
INDEX_FILE = "index.h5"
#: the index's own checksum: SHA-256 of its other attributes and its datasets (the parts'
#: datasets carry HDF5's fletcher32; an index attribute changed in place would go unseen)
INDEX_DIGEST = "index_sha256"
#: test-only: "STEP:SECONDS" makes every rank sleep inside the write of the checkpoint of that
#: step (its part file open and half written), so a test can kill the job there
PAUSE_VARIABLE = "LOBATTO_TEST_CHECKPOINT_PAUSE"
#: rows read at once from a part (bounded memory for large parts)
READ_BLOCK_BYTES = 1 << 28


def part_file_name(rank: int) -> str:
    return f"rank{rank:05d}.h5"


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories
    finally:
        os.close(fd)


def _pause_here(step: int) -> None:
    value = os.environ.get(PAUSE_VARIABLE, "")
    if ":" in value:
        when, seconds = value.split(":", 1)
        if when.strip() == str(step):
            time.sleep(float(seconds))


def _write_part(path: Path, arrays: dict, element_ids, step: int, rank: int, compression: str) -> int:
    with h5_create(path) as f:
        f.attrs["rank"] = rank
        f.attrs["step"] = step
        f.create_dataset("element_ids", data=np.asarray(element_ids, dtype=np.int64))
        for i, (name, array) in enumerate(arrays.items()):
            array = np.ascontiguousarray(array)
            # an empty array (the history before the first step) cannot be chunked
            options = (dataset_options(compression, array.shape, array.dtype.itemsize, checksum=True)
                       if array.size else {})
            f.create_dataset(name, data=array, **options)
            if i == 0:
                _pause_here(step)
    _fsync(path)
    return path.stat().st_size


def _attr(value):
    return json.dumps(value) if isinstance(value, (dict, list, tuple)) or value is None else value


def write_checkpoint(path, arrays: dict, element_ids, attrs: dict, compression: str = "none", comm=None) -> Path:
    """Collective: write the checkpoint directory ``path`` from every rank's ``arrays``
    ({name: host array with this rank's elements on axis 0}, the same names on every rank)
    and ``element_ids`` (their global ids); rank 0 adds ``attrs`` (numbers, strings, or
    lists and dicts, stored as JSON) to the index. An existing checkpoint at ``path`` is
    replaced only once the new one is complete. Errors (OutputError naming the file) are
    raised on every rank; the temporary directory is removed."""
    final = Path(path)
    rank, size = rank_and_size(comm)
    temporary = None
    try:
        with collective_errors(comm):
            if rank == 0:
                temporary = final.with_name(f"{final.name}{TEMP_MARK}{os.getpid()}")
                with output_errors(temporary):
                    if temporary.exists():
                        shutil.rmtree(temporary)
                    register_temporary(temporary)  # removed if a signal ends the run (until the swap)
                    temporary.mkdir(parents=True)
        if comm is not None:
            temporary = comm.bcast(temporary)
        step = int(attrs["step"])
        part = temporary / part_file_name(rank)
        with collective_errors(comm):
            with output_errors(final / part.name):
                nbytes = _write_part(part, arrays, element_ids, step, rank, compression)
        counts = [(len(element_ids), nbytes)] if comm is None else comm.gather((len(element_ids), nbytes))
        all_ids = [np.asarray(element_ids)] if comm is None else comm.gather(np.asarray(element_ids, np.int64))
        with collective_errors(comm):
            if rank == 0:
                _write_index(temporary, final, counts, all_ids, attrs, compression)
        return final
    except BaseException:
        if rank == 0 and temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    finally:
        if rank == 0 and temporary is not None:
            forget_temporary(temporary)


def _write_index(temporary: Path, final: Path, counts, all_ids, attrs: dict, compression: str) -> None:
    index = temporary / INDEX_FILE
    with output_errors(final / INDEX_FILE):
        with h5_create(index) as f:
            f.attrs["format"] = FORMAT
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["compression"] = compression
            for key, value in attrs.items():
                f.attrs[key] = _attr(value)
            f.create_dataset("parts/elements", data=np.array([c for c, _ in counts], dtype=np.int64))
            f.create_dataset("parts/bytes", data=np.array([b for _, b in counts], dtype=np.int64))
            f.create_dataset("element_ids", data=np.concatenate(all_ids).astype(np.int64))
            f.attrs[INDEX_DIGEST] = _index_digest(f)  # of the values as stored, read back
        _fsync(index)
        _fsync(temporary)
    forget_temporary(temporary)  # complete: from here on it may be the only copy (the swap)
    with output_errors(final):
        old = None
        if final.exists():  # the same step written again: swap, then remove the old one
            old = final.with_name(f"{final.name}.old{TEMP_MARK}{os.getpid()}")
            os.replace(final, old)
        os.replace(temporary, final)
        _fsync(final.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


#: index attributes that a restart reads, and the types they are written with (JSON ones decoded)
_ATTRIBUTE_TYPES = {"step": int, "time": (int, float), "dt": (int, float), "order": int, "num_global_elements": int,
                    "energy_initial": (int, float, type(None)), "field_names": list, "mesh": dict,
                    "writer": (dict, type(None)), "restarts": (list, type(None)),
                    "history_numbers": (dict, type(None)), "outputs_state": (dict, type(None))}


def _index_digest(f) -> str:
    """SHA-256 of an open index's attributes (all but the digest, by name) and datasets."""
    digest = hashlib.sha256()
    for key in sorted(f.attrs):
        if key == INDEX_DIGEST:
            continue
        value = np.asarray(f.attrs[key])
        digest.update(f"{key}\0{value.dtype.str}\0{value.shape}\0".encode())
        digest.update(repr(value.tolist()).encode() if value.dtype.kind == "O" else value.tobytes())
    for name in ("parts/elements", "parts/bytes", "element_ids"):
        digest.update(f"{name}\0".encode())
        digest.update(np.ascontiguousarray(f[name][...]).tobytes())
    return digest.hexdigest()


def _plain(value):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, str) and (value.startswith(("[", "{")) or value == "null"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class Checkpoint:
    """An opened, checked checkpoint directory: ``attrs`` (the index's attributes, JSON ones
    decoded), ``counts`` (elements per part) and ``read(ids)``. InputError (naming the file)
    for a path that is no checkpoint, an unfinished one, or a part of the wrong size."""

    def __init__(self, path):
        import h5py

        self.path = Path(path)
        if self.path.name == INDEX_FILE:
            self.path = self.path.parent
        where = str(self.path)
        if TEMP_MARK in self.path.name:
            raise InputError(f"{where}: an unfinished checkpoint (its writer was interrupted); restart from a "
                             "complete one")
        if not self.path.exists():
            raise InputError(f"{where}: no such checkpoint")
        if not self.path.is_dir():
            raise InputError(f"{where}: not a checkpoint (expected a directory holding {INDEX_FILE})")
        index = self.path / INDEX_FILE
        try:
            with h5py.File(index, "r") as f:
                self.attrs = {key: _plain(value) for key, value in f.attrs.items()}
                counts = f["parts/elements"][...]
                sizes = f["parts/bytes"][...]
                self.element_ids = f["element_ids"][...]
                stored = f.attrs.get(INDEX_DIGEST)  # absent in checkpoints written before it existed
                intact = stored is None or _plain(stored) == _index_digest(f)
        except FileNotFoundError:
            raise InputError(f"{index}: missing; {where} is not a complete checkpoint") from None
        except (OSError, KeyError, RuntimeError, ValueError) as err:  # h5py: RuntimeError for damaged attributes
            raise InputError(f"{index}: not a readable checkpoint index ({os_reason(err)})") from None
        if not intact:
            raise InputError(f"{index}: its attributes or element lists do not match the checksum written with "
                             "them (the file was changed or damaged after it was written); restart from another "
                             "checkpoint")
        if self.attrs.get("format") != FORMAT:
            raise InputError(f"{index}: not a lobatto checkpoint (format attribute {self.attrs.get('format')!r})")
        if self.attrs.get("format_version") != FORMAT_VERSION:
            raise InputError(f"{index}: checkpoint format version {self.attrs.get('format_version')}, this lobatto "
                             f"reads version {FORMAT_VERSION}")
        self.counts = counts.astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)])
        if self.starts[-1] != self.element_ids.size:
            raise InputError(f"{index}: the parts' element counts do not add up to its element ids")
        for rank, expected in enumerate(sizes):
            part = self.path / part_file_name(rank)
            try:
                actual = part.stat().st_size
            except FileNotFoundError:
                raise InputError(f"{part}: missing from the checkpoint") from None
            if actual != int(expected):
                raise InputError(f"{part}: {actual} bytes, the index recorded {int(expected)}: the file is "
                                 f"{'truncated' if actual < expected else 'changed'}")

    def check_restart_attributes(self) -> dict:
        """The index's attributes that a restart reads, checked for their written types (an
        index written before INDEX_DIGEST existed has no checksum); InputError naming the
        damaged ones."""
        damaged = [key for key, kinds in _ATTRIBUTE_TYPES.items() if key not in self.attrs
                   or not isinstance(self.attrs[key], kinds) or isinstance(self.attrs[key], bool)]
        if damaged:
            raise InputError(f"{self.path / INDEX_FILE}: a damaged checkpoint index (attributes {', '.join(damaged)} "
                             "missing or not of the type written); restart from another checkpoint")
        return self.attrs

    def array_shape(self, name: str) -> tuple:
        """The shape of one element's entry of array ``name`` (the first part's dataset without
        its element axis: (F, n, n, n) for the state, (F, 1, n, n) on a 2-D mesh); InputError
        when the checkpoint lacks it."""
        import h5py

        path = self.path / part_file_name(0)
        try:
            with h5py.File(path, "r") as f:
                return tuple(f[name].shape[1:])
        except (OSError, KeyError) as err:
            raise InputError(f"{path}: cannot read the shape of {name!r} ({os_reason(err)})") from None

    def read(self, ids, names=None) -> dict:
        """{array name: host array (len(ids), ...)} of the elements with global ids ``ids``,
        in that order (only the arrays ``names``, if given). InputError when the checkpoint
        lacks one of them, or a chunk fails its checksum."""
        import h5py

        register_filters()  # lz4 / zstd parts need hdf5plugin's filters
        ids = np.asarray(ids, dtype=np.int64)
        count = int(self.attrs.get("num_global_elements", self.element_ids.size))
        if self.element_ids.size and (self.element_ids.min() < 0 or self.element_ids.max() >= count):
            raise InputError(f"{self.path / INDEX_FILE}: element ids outside 0..{count - 1}")
        where = np.full(count, -1, dtype=np.int64)
        where[self.element_ids] = np.arange(self.element_ids.size)
        if ids.size and (ids.min() < 0 or ids.max() >= count):
            raise InputError(f"{self.path}: holds {count} elements, the mesh asks for element {int(ids.max())}")
        rows = where[ids]
        if (rows < 0).any():
            missing = int(ids[np.argmax(rows < 0)])
            raise InputError(f"{self.path}: holds no values for element {missing}")
        parts = np.searchsorted(self.starts, rows, side="right") - 1
        out: dict = {}
        for rank in np.unique(parts):
            mine = np.flatnonzero(parts == rank)
            offsets = rows[mine] - self.starts[rank]
            path = self.path / part_file_name(int(rank))
            try:
                with h5py.File(path, "r") as f:
                    stored = f["element_ids"][...]
                    if not np.array_equal(stored, self.element_ids[self.starts[rank]:self.starts[rank + 1]]):
                        raise InputError(f"{path}: its element ids differ from the index's (a part of another "
                                         "checkpoint?)")
                    for name in _dataset_names(f):
                        if name == "element_ids" or (names is not None and name not in names):
                            continue
                        dataset = f[name]
                        if name not in out:
                            out[name] = np.empty((ids.size,) + dataset.shape[1:], dtype=dataset.dtype)
                        _read_rows(dataset, offsets, out[name], mine)
            except InputError:
                raise
            except (OSError, KeyError) as err:
                raise InputError(f"{path}: cannot read the checkpoint part ({os_reason(err)})") from None
        return out


def _dataset_names(f) -> list[str]:
    """Every dataset's path in the file (the history arrays sit in groups)."""
    import h5py

    names = []
    f.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
    return names


def _read_rows(dataset, offsets, out, targets) -> None:
    """out[targets[i]] = dataset[offsets[i]]: the span of needed rows is read in slices of at
    most READ_BLOCK_BYTES (one slice per block: HDF5 reads contiguous rows fastest)."""
    order = np.argsort(offsets, kind="stable")
    offsets, targets = offsets[order], targets[order]
    row_bytes = max(1, dataset.dtype.itemsize * int(np.prod(dataset.shape[1:], dtype=np.int64)))
    block = max(1, READ_BLOCK_BYTES // row_bytes)
    i = 0
    while i < offsets.size:
        start = int(offsets[i])
        stop = min(start + block, int(offsets[-1]) + 1)
        j = int(np.searchsorted(offsets, stop, side="left"))
        values = dataset[start:stop]
        out[targets[i:j]] = values[offsets[i:j] - start]
        i = j
