"""`lobatto run` with one fault injected on one rank, for the failure tests (test_failures.py).

    python faulty_run.py FAULT RANK -- lobatto-run-arguments...

FAULT: the write that fails with "No space left on device" on rank RANK (hdf5_part,
hdf5_virtual, nek_index; nek_file: that rank's part of the collective MPI-IO write of the
Nek5000 file, which returns the error after taking part; nek_rename: rank 0's renaming of
the Nek5000 file's temporary), or "solver" (a SolverError raised by that rank alone in
its 3rd step, no other rank knowing), or "bug" (a RuntimeError there: an unexpected error).
"""

import errno
import sys

FAULT, RANK = sys.argv[1], int(sys.argv[2])
ARGS = sys.argv[sys.argv.index("--") + 1:]


def main():
    from lobatto import cli
    from lobatto.errors import SolverError
    from lobatto.io import hdf5_parts, nek5000, nek5000_mpi
    from lobatto.machine.parallel import launched_rank

    rank = launched_rank()
    targets = {"hdf5_part": (hdf5_parts, "write_snapshot_part"), "hdf5_virtual": (hdf5_parts, "write_virtual_snapshot"),
               "nek_index": (nek5000, "write_index")}
    if FAULT in targets and rank == RANK:
        module, name = targets[FAULT]

        def disk_full(path, *args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        setattr(module, name, disk_full)
    if FAULT == "nek_file" and rank == RANK:
        collective_write = nek5000_mpi._write_at_all

        def write_then_fail(fh, offset, data):  # the collective call completes, then reports the error
            collective_write(fh, offset, data)
            raise OSError(errno.ENOSPC, "No space left on device")

        nek5000_mpi._write_at_all = write_then_fail
    if FAULT == "nek_rename" and rank == RANK:
        import os
        import types

        def replace_full(*args):
            raise OSError(errno.ENOSPC, "No space left on device")

        nek5000_mpi.os = types.SimpleNamespace(**{**vars(os), "replace": replace_full})
    if FAULT in ("solver", "bug") and rank == RANK:
        from lobatto.integrators import Stepper

        original, calls = Stepper.step, [0]

        def failing_step(self, u, t, dt):
            calls[0] += 1
            if calls[0] == 3:
                raise SolverError("injected failure on one rank") if FAULT == "solver" else RuntimeError("injected bug")
            return original(self, u, t, dt)

        Stepper.step = failing_step
    return cli.main(ARGS)


if __name__ == "__main__":
    sys.exit(main())
