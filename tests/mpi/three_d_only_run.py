"""`lobatto ARGS...` with acoustics declared 3-D only (PhysicsSpec.dimensions = (3,)): how a
system that does not run in 2-D answers a 2-D case on every rank (test_acoustics_2d_ranks.py),
whichever systems run in 2-D by now.

    python three_d_only_run.py run case.toml -o out --quiet
"""

from __future__ import annotations

import dataclasses
import sys


def main() -> int:
    from lobatto import cli
    from lobatto.systems.acoustics.system import AcousticsSystem

    AcousticsSystem.spec = dataclasses.replace(AcousticsSystem.spec, dimensions=(3,), fields_2d=None)
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
