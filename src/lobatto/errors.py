"""Exception types that the command line turns into one-line messages.

InputError: the user's input (case file, command line, mesh) is wrong -> exit 2.
SolverError: the run itself failed (NaN, divergence) -> exit 1.
OutputError: an output file could not be written (disk full, permission) -> exit 1.
"""


class LobattoError(Exception):
    """Base class of errors that are reported without a traceback."""

    exit_code = 1


class InputError(LobattoError):
    """Bad input: the message names the file, key or element and what was expected."""

    exit_code = 2


class SolverError(LobattoError):
    """The computation failed (for example a NaN appeared); the message says where and why."""

    exit_code = 1


class OutputError(LobattoError):
    """Writing an output file failed (disk full, permission denied); the message names the file."""

    exit_code = 1
