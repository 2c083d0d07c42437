#!/usr/bin/env python3
"""A case-file fuzzing round aimed at the Maxwell-physics tables ([material.<name>],
[source.<name>], [pml], plane waves, [output.dft], [output.far_field], [physics] sigma).

The cases start from the electromagnetics examples (dielectric_slab, drude_slab, dipole_pml,
cavity_resonance, and sphere_scattering moved onto a box mesh: its sphere is a ``where``
material, its layer, plane wave and Huygens box on element faces), made small and short,
then get ``fuzz_cases.op_maxwell_table`` (and now and then another mutation of
fuzz_cases.DATA_OPS). They run and are judged exactly as in fuzz_cases.py:

    python tests/fuzz/fuzz_maxwell.py --seed 1 --count 300 --keep /tmp/fuzz-maxwell
    python tests/fuzz/fuzz_maxwell.py --seed 1 --case 17 --print
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_cases as fz  # noqa: E402

__test__ = False

SEEDS = ("dielectric_slab.toml", "drude_slab.toml", "dipole_pml.toml", "cavity_resonance.toml",
         "sphere_scattering.toml")


def seed_cases() -> dict:
    """{name: document}: the electromagnetics examples, small, on box meshes."""
    examples = fz.load_examples()
    out = {name: copy.deepcopy(examples[name]) for name in SEEDS}
    dipole = out["dipole_pml.toml"]
    dipole["mesh"]["elements"] = [5, 5, 5]
    dipole["pml"]["elements"] = 1
    sphere = out["sphere_scattering.toml"]
    sphere["mesh"] = {"elements": [6, 6, 6], "lower": [-1.5] * 3, "upper": [1.5] * 3, "boundary": "absorbing"}
    sphere["material"] = {"sphere": {"where": "0.3**2 - x**2 - y**2 - z**2", "epsilon": 4.0}}
    sphere["pml"]["elements"] = 1
    sphere["source"]["incident"].update(lower=[-0.5] * 3, upper=[0.5] * 3, t0=1.0)
    far = sphere["output"]["far_field"]
    far.update(lower=[-1.0] * 3, upper=[1.0] * 3)
    far.pop("absorption_region", None)
    far["absorption_lower"], far["absorption_upper"] = [-0.5] * 3, [0.5] * 3
    return out


def make_case(seed: int, index: int, seeds: dict) -> fz.FuzzCase:
    """Case ``index`` of round ``seed`` (deterministic, as fuzz_cases.make_case)."""
    rng = random.Random(f"lobatto-fuzz-maxwell:{seed}:{index}")
    base = rng.choice(sorted(seeds))
    data = copy.deepcopy(seeds[base])
    data.setdefault("discretization", {})["order"] = rng.randint(1, 3)
    data.setdefault("time", {})["t_end"] = rng.choice((0.01, 0.02, 0.05))
    fz.shorten_decay(data["time"])
    if "dt" in data["time"]:
        data["time"]["dt"] = rng.choice((0.01, 0.005))
    output = data.setdefault("output", {})
    output["every"] = 0
    output["formats"] = rng.choice(([], [], ["hdf5"]))
    ops = []
    others = [(n, f, w) for n, f, w in fz.DATA_OPS if n != "maxwell_table"]
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        try:
            if rng.random() < 0.8:
                ops.append(fz.op_maxwell_table(rng, data))
            else:
                name, op, _ = rng.choices(others, [w for _, _, w in others])[0]
                ops.append(op(rng, data))
        except (fz._Skip, TypeError, KeyError, IndexError, AttributeError):
            continue
    return fz.FuzzCase(index=index, base=base, ops=ops, data=data, text=fz.to_toml(data).encode("utf-8"))


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz lobatto's Maxwell-physics tables (tests/fuzz/README.md).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--keep", metavar="DIR", type=Path)
    parser.add_argument("--case", type=int, metavar="I")
    parser.add_argument("--print", action="store_true")
    parser.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args(argv)
    if args.case is not None:
        args.start, args.count = args.case, 1
    seeds = seed_cases()
    cases = [make_case(args.seed, i, seeds) for i in range(args.start, args.start + args.count)]
    if args.print:
        for c in cases:
            print(f"# case {c.index} from {c.base}: " + "; ".join(c.ops))
            print(fz.case_text_for_display(c.text, max_lines=10_000))
        return 0
    done = [0]

    def progress(r) -> None:
        done[0] += 1
        if not args.quiet:
            rc = "T/O" if r.outcome.returncode is None else r.outcome.returncode
            mark = "FINDING " + " | ".join(f.category for f in r.findings) if r.findings else ""
            print(f"[{done[0]:>4}/{len(cases)}] case {r.case.index:>5} rc={rc!s:<3} {r.outcome.seconds:5.1f}s "
                  f"{'; '.join(r.case.ops)[:110]} {mark}", flush=True)

    start = time.perf_counter()
    results = fz.run_cases(cases, args.timeout, args.jobs, progress)
    print()
    print(fz.format_report(results, args.seed))
    print(f"\n{len(results)} cases in {time.perf_counter() - start:.1f} s")
    if args.keep:
        fz.keep_findings(results, args.keep)
    return 1 if [f for f in fz.findings_of(results) if not f.known] else 0


if __name__ == "__main__":
    sys.exit(main())
