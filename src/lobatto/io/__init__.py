"""Output: atomic writers for HDF5 snapshots, Nek5000 field files and the run summary, and
the output directory's preparation before a run (output_dir.prepare_output_dir).

A failed write raises :class:`lobatto.errors.OutputError` naming the file (io.atomic).

The writers import their format libraries (h5py) when called, so importing
:mod:`lobatto.io` is cheap.
"""

from lobatto.io.atomic import atomic_open, atomic_path, atomic_write_bytes, atomic_write_text
from lobatto.io.hdf5 import read_snapshot, write_snapshot
from lobatto.io.nek5000 import field_file_name, read_field_file, write_field_file, write_index
from lobatto.io.output_dir import prepare_output_dir
from lobatto.io.summary import format_summary_table, read_summary, to_jsonable, write_summary

__all__ = [
    "atomic_open",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "field_file_name",
    "format_summary_table",
    "prepare_output_dir",
    "read_field_file",
    "read_snapshot",
    "read_summary",
    "to_jsonable",
    "write_field_file",
    "write_index",
    "write_snapshot",
    "write_summary",
]
