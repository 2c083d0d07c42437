#!/usr/bin/env python3
"""Mesh-file fuzzer for ``lobatto run`` with ``[mesh] generator = "gmsh"`` or ``"nek"``.

Takes small valid meshes (``tests/data/fuzz_meshes``: a box in MSH 2.2 and 4.1, ASCII and
binary, periodic and second-order variants; Nek5000 ``.re2`` in both word sizes and ``.rea``;
the same of 2-D quadrilateral meshes, fuzz_quads.py), damages each one with one or two random
mutations (truncation, bit flips, byte overwrites, edits of the integers that are counts, sizes
and node or element numbers, edits of the coordinates, line and section edits; on 2-D files also
swapped or clockwise corners, NaN corners, mixed cells and the wrong dimension) and runs

    python -m lobatto run case.toml -o out --quiet

on it in its own temporary directory (a Maxwell case at order 1 or 2, two time steps), with a
timeout and an address-space limit. Whatever the file holds, lobatto must answer as
docs/case-file.md says:

* the exit status is 0, 1 or 2: never a signal (SIGSEGV is -11, an abort -6; 139 and 134 from a
  shell), never a timeout;
* no Python traceback, no warning (a NumPy ``RuntimeWarning``) on standard error;
* status 1 or 2: standard error is one line, starting ``lobatto: error:``; status 2 names the
  mesh file;
* status 0: ``out/summary.json`` exists;
* no temporary file (``*.tmp*``) is left behind.

Case ``i`` of seed ``s`` comes from ``random.Random(f"{s}:{i}")`` alone. Command line (see
tests/fuzz/README.md, "Mesh files"):

    python tests/fuzz/fuzz_meshes.py --seed 1 --count 300 --keep /tmp/meshfuzz
    python tests/fuzz/fuzz_meshes.py --seed 1 --case 17 --keep /tmp/one   # one case, kept
    python tests/fuzz/fuzz_meshes.py --write-sources                      # remake the sources

The exit status is 1 when there is a finding, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import struct
import sys
import tempfile
import time
from pathlib import Path

__test__ = False  # a library, not a test module

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "data" / "fuzz_meshes"
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

import fuzz_cases  # noqa: E402  (the command under an address-space limit)
import fuzz_quads  # noqa: E402  (the 2-D sources and their structural mutations)

#: source file -> generator
SOURCE_FILES = {
    "box_msh22.msh": "gmsh", "box_msh22_bin.msh": "gmsh", "box_msh41.msh": "gmsh", "box_msh41_bin.msh": "gmsh",
    "periodic_msh41.msh": "gmsh", "periodic_msh41_bin.msh": "gmsh", "order2_msh22_bin.msh": "gmsh",
    "order2_msh41.msh": "gmsh", "box_v002.re2": "nek", "box_v001.re2": "nek", "box.rea": "nek",
    "curved.rea": "nek", "periodic_v002.re2": "nek",
    **fuzz_quads.QUAD_SOURCES,
}
MEMORY_LIMIT = 2 * 2**30
SMALL_INTS = (0, 1, -1, 2, 7, 12, 13, 27, 28, 255, 256, 2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**53 + 1,
              2**63 - 1, 2**63, 2**64 - 1, 10**12, 999999999)
FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-310, 5e-324, 2.2e-308, 1e-300, 1e100, 1e101, 1e300, 1.7976931348623157e308,
          float("nan"), float("inf"), float("-inf"), 3.0, 1e-12)
LINE_JUNK = (b"", b"$", b"$Nodes", b"$EndElements", b"$Elements", b"$PhysicalNames", b"-1", b"0", b"1 2 3",
             b"x" * 300, b"\x00\xff", b"nan nan nan", b"ELEMENT 1 [ 1A] GROUP 0", b"  ***** CURVED SIDE DATA *****")


# ============================================================================ sources
def write_sources(directory: Path = SOURCES) -> None:
    """The source meshes: written with the gmsh SDK (examples/meshes/gmsh_meshes.py) and
    tests/nek_mesh_writer.py. Committed, so that a seed gives the same cases everywhere."""
    import importlib.util

    import numpy as np
    from nek_mesh_writer import box_corners, write_re2, write_rea

    spec = importlib.util.spec_from_file_location("gmsh_meshes", ROOT / "examples" / "meshes" / "gmsh_meshes.py")
    gm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gm)
    directory.mkdir(parents=True, exist_ok=True)
    for version, tag in ((2.2, "msh22"), (4.1, "msh41")):
        gm.box(directory / f"box_{tag}.msh", (2, 1, 1), version=version)
        gm.box(directory / f"box_{tag}_bin.msh", (2, 1, 1), version=version, binary=True)
    gm.box(directory / "periodic_msh41.msh", (2, 1, 1), periodic=(True, False, False))
    gm.box(directory / "periodic_msh41_bin.msh", (2, 1, 1), periodic=(True, False, False), binary=True)
    gm.box(directory / "order2_msh22_bin.msh", (1, 1, 1), order=2, version=2.2, binary=True)
    gm.box(directory / "order2_msh41.msh", (1, 1, 1), order=2, version=4.1)
    corners, _ = box_corners(2, 1, 1)
    walls = [(e, f, "W", np.zeros(5)) for e in (1, 2) for f in range(1, 7) if (e, f) not in ((1, 2), (2, 4))]
    write_re2(directory / "box_v002.re2", corners, bcs=walls)
    write_re2(directory / "box_v001.re2", corners, bcs=walls, version="#v001")
    write_rea(directory / "box.rea", corners, bcs=walls)
    # element 1's bottom edge 1 bulged by a midpoint, element 2's edge 5 by a circle arc
    curves = [(1, 1, [0.25, -0.05, 0.0, 0, 0], "m"), (2, 5, [3.0, 0, 0, 0, 0], "C")]
    write_rea(directory / "curved.rea", corners, bcs=walls, curves=curves)
    # periodic along x: face 4 of element 1 (x = 0) with face 2 of element 2 (x = 1)
    periodic = [b for b in walls if (b[0], b[1]) not in ((1, 4), (2, 2))]
    periodic += [(1, 4, "P", np.array([2, 2, 0, 0, 0.0])), (2, 2, "P", np.array([1, 4, 0, 0, 0.0]))]
    write_re2(directory / "periodic_v002.re2", corners, bcs=periodic)
    fuzz_quads.write_sources(directory)


# ============================================================================ mutations
def _ints_in_text(data: bytes, start: int = 0, end: int | None = None) -> list:
    return [m.span() for m in re.finditer(rb"(?<![\w.+-])[-+]?\d+(?![\w.])", data[start:end])]


def _floats_in_text(data: bytes) -> list:
    return [m.span() for m in re.finditer(rb"[-+]?\d*\.\d+([eEdD][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+", data)]


def _is_text(data: bytes) -> bool:
    return b"\x00" not in data


def _interesting_int(rng: random.Random, old: int, data_max: int) -> int:
    return rng.choice((old + 1, old - 1, 0, -old, old * 2, data_max, data_max + 1) + SMALL_INTS)


def op_truncate(rng, data: bytes) -> tuple:
    cut = rng.choice((rng.randrange(len(data)), len(data) - rng.randrange(1, 64), rng.randrange(200)))
    cut = max(0, min(len(data) - 1, cut))
    return data[:cut], f"truncate at byte {cut} of {len(data)}"


def op_bit_flip(rng, data: bytes) -> tuple:
    out = bytearray(data)
    flips = []
    for _ in range(rng.choice((1, 1, 1, 2, 4))):
        k = rng.randrange(len(out))
        out[k] ^= 1 << rng.randrange(8)
        flips.append(k)
    return bytes(out), f"flip bits at bytes {flips}"


def op_byte_set(rng, data: bytes) -> tuple:
    out = bytearray(data)
    k = rng.randrange(len(out))
    value = rng.choice((0, 0xFF, ord("$"), ord("\n"), ord(" "), ord("9"), ord("-"), 0x80, ord("\r")))
    out[k] = value
    return bytes(out), f"set byte {k} to {value:#04x}"


def op_binary_word(rng, data: bytes) -> tuple:
    """A 4- or 8-byte word that holds a small integer (a count, a tag, a node number) or a
    float64 that holds a whole number (Nek's float ids), set to an edge value."""
    candidates = []
    for size, code in ((4, "<i"), (8, "<q"), (8, "<d")):
        for k in range(0, len(data) - size + 1):
            (v,) = struct.unpack_from(code, data, k)
            if code == "<d":
                if v == v and 1.0 <= v <= 1000.0 and v == int(v):
                    candidates.append((k, size, code, int(v)))
            elif 1 <= v <= 1000:
                candidates.append((k, size, code, v))
    if not candidates:
        return op_bit_flip(rng, data)
    k, size, code, old = rng.choice(candidates)
    new = _interesting_int(rng, old, 1000)
    if code == "<d":
        value = struct.pack("<d", float(rng.choice((new, new + 0.5, float("nan"), 1e300))))
    elif code == "<i":
        value = struct.pack("<I", new % 2**32)
    else:
        value = struct.pack("<Q", new % 2**64)
    return data[:k] + value + data[k + size:], f"word at byte {k} ({code}) {old} -> {struct.unpack(code, value)[0]}"


def op_binary_float(rng, data: bytes) -> tuple:
    """A float64 (or float32) word that looks like a coordinate set to an edge value."""
    code, size = rng.choice((("<d", 8), ("<f", 4)))
    candidates = []
    for k in range(0, len(data) - size + 1, 4):
        (v,) = struct.unpack_from(code, data, k)
        if v == v and (v == 0.0 or 1e-3 <= abs(v) <= 10.0):
            candidates.append(k)
    if not candidates:
        return op_bit_flip(rng, data)
    k = rng.choice(candidates)
    new = rng.choice(FLOATS)
    if code == "<f" and abs(new) > 3.4e38 and new == new:
        new = float("inf") if new > 0 else float("-inf")  # what float32 holds
    return data[:k] + struct.pack(code, new) + data[k + size:], f"{code} at byte {k} -> {new!r}"


def op_text_int(rng, data: bytes) -> tuple:
    spans = _ints_in_text(data)
    if not spans:
        return op_byte_set(rng, data)
    a, b = rng.choice(spans)
    old = int(data[a:b])
    largest = max(int(data[x:y]) for x, y in spans[:2000])
    new = rng.choice((str(_interesting_int(rng, old, largest)).encode(), b"1.5", b"x", b"", b"1e3", b"-0"))
    return data[:a] + new + data[b:], f"integer at byte {a}: {old} -> {new.decode()!r}"


def op_text_float(rng, data: bytes) -> tuple:
    spans = _floats_in_text(data)
    if not spans:
        return op_text_int(rng, data)
    a, b = rng.choice(spans)
    new = rng.choice((b"nan", b"inf", b"-inf", b"1e300", b"1e-310", b"5e-324", b"1e101", b"0", b"-1e200",
                      b"1.0e+", b"1..0"))
    return data[:a] + new + data[b:], f"number at byte {a}: {data[a:b].decode()!r} -> {new.decode()!r}"


def op_lines(rng, data: bytes) -> tuple:
    lines = data.split(b"\n")
    if len(lines) < 3:
        return op_truncate(rng, data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    kind = rng.choice(("delete", "duplicate", "swap", "insert"))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(i, rng.choice(LINE_JUNK))
    return b"\n".join(lines), f"{kind} line {i + 1}" + (f" and {j + 1}" if kind == "swap" else "")


def op_section(rng, data: bytes) -> tuple:
    """MSH: rename, drop or duplicate a section, or drop its $End line."""
    heads = [m for m in re.finditer(rb"^\$(\w+)\r?$", data, re.M) if not m.group(1).startswith(b"End")]
    if not heads:
        return op_lines(rng, data)
    m = rng.choice(heads)
    name = m.group(1)
    end = data.find(b"$End" + name, m.end())
    kind = rng.choice(("rename", "drop", "duplicate", "drop end"))
    if kind == "rename" or end < 0:
        new = rng.choice((name + b"X", name[:-1], name.lower(), b"NO" + name, b"ELM", b"NodeData", b"Periodic",
                          b"PartitionedEntities", b"Parametrizations"))
        return data[:m.start(1)] + new + data[m.end(1):], f"rename ${name.decode()} to ${new.decode()}"
    stop = end + len(name) + 5
    if kind == "drop":
        return data[:m.start()] + data[stop:], f"drop ${name.decode()}"
    if kind == "duplicate":
        return data[:stop] + data[m.start():stop] + data[stop:], f"duplicate ${name.decode()}"
    return data[:end] + data[end + len(name) + 5:], f"drop $End{name.decode()}"


TEXT_OPS = (op_truncate, op_bit_flip, op_byte_set, op_text_int, op_text_int, op_text_int, op_text_float,
            op_lines, op_lines)
BINARY_OPS = (op_truncate, op_bit_flip, op_bit_flip, op_byte_set, op_binary_word, op_binary_word,
              op_binary_word, op_binary_float, op_binary_float)


# ================================================================================ cases
@dataclasses.dataclass
class MeshCase:
    index: int
    source: str
    generator: str
    mesh_name: str
    mesh: bytes
    case: bytes
    ops: list


def make_case(seed: int, index: int, sources: dict) -> MeshCase:
    rng = random.Random(f"{seed}:{index}")
    name = rng.choice(sorted(sources))
    data = sources[name]
    generator = SOURCE_FILES[name]
    ops = []
    for _ in range(rng.choice((1, 1, 2))):
        if not data:
            break
        pool = TEXT_OPS if _is_text(data) else BINARY_OPS
        if name.endswith(".msh"):
            pool = pool + (op_section,)
        if name in fuzz_quads.QUAD_SOURCES and (_is_text(data) or name.endswith(".re2")):  # corners, cells
            pool = pool + (fuzz_quads.op_quad,) * 4
        op = rng.choice(pool)
        data, what = op(rng, data, name) if op is fuzz_quads.op_quad else op(rng, data)
        ops.append(f"{op.__name__[3:]}: {what}")
    suffix = Path(name).suffix
    mesh_name = f"mesh{suffix}"
    order = rng.choice((1, 2))
    case = (f'[mesh]\ngenerator = "{generator}"\nfile = "{mesh_name}"\n\n[discretization]\norder = {order}\n\n'
            '[initial]\nEz = "sin(pi*x)"\n\n[time]\ndt = 0.001\nt_end = 0.002\n\n[output]\nformats = []\n')
    return MeshCase(index, name, generator, mesh_name, data, case.encode(), ops)


def load_sources() -> dict:
    return {name: (SOURCES / name).read_bytes() for name in SOURCE_FILES}


def make_cases(seed: int, count: int, start: int = 0, only: str | None = None) -> list:
    """Cases start..start+count-1 of the seed; ``only``: from the sources whose name holds it
    (then case i differs from the full round's)."""
    sources = {k: v for k, v in load_sources().items() if only is None or only in k}
    if not sources:
        raise SystemExit(f"--only {only!r}: no source file name holds it ({', '.join(SOURCE_FILES)})")
    return [make_case(seed, i, sources) for i in range(start, start + count)]


# ================================================================================ running
@dataclasses.dataclass
class Outcome:
    returncode: int | None  # None: killed by the timeout
    stderr: str
    seconds: float
    summary: bool
    leftovers: list


#: the lobatto source tree the runs use (``--src``: run the same cases against another checkout)
SRC = ROOT / "src"


def _environment() -> dict:
    env = dict(os.environ)
    for var in ("LOBATTO_DEBUG", "PYTHONWARNINGS", "PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(var, None)
    env["PYTHONIOENCODING"] = "utf-8"
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_case(case: MeshCase, timeout: float, memory_limit: int = MEMORY_LIMIT, keep: Path | None = None) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="lobatto-meshfuzz-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "case.toml").write_bytes(case.case)
        (tmp_path / case.mesh_name).write_bytes(case.mesh)
        cmd = fuzz_cases.lobatto_command(["run", "case.toml", "-o", "out", "--quiet"], sys.executable, memory_limit)
        rc, _, stderr, seconds = fuzz_cases.run_in(tmp, cmd, _environment(), timeout)
        leftovers = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.tmp*")) if rc is not None else []
        summary = (tmp_path / "out" / "summary.json").is_file()
        return Outcome(rc, stderr.decode("utf-8", "replace"), seconds, summary, leftovers)


def check(case: MeshCase, outcome: Outcome) -> list:
    """The categories of every way the outcome breaks the contract."""
    found = []
    rc, stderr = outcome.returncode, outcome.stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc is None:
        return ["timeout"]
    if rc < 0 or rc not in (0, 1, 2):
        found.append(f"signal {-rc}" if rc < 0 else f"exit status {rc}")
    if "Traceback (most recent call last)" in stderr:
        error = next((ln.strip() for ln in reversed(lines) if re.match(r"^\w[\w.]*(Error|Exception)", ln.strip())),
                     lines[-1] if lines else "")
        frames = re.findall(r'File "([^"]*lobatto[^"]*)", line \d+, in (\S+)', stderr)
        where = f" at {Path(frames[-1][0]).name}:{frames[-1][1]}" if frames else ""
        found.append(f"traceback: {error.split(':')[0]}{where}")
    warning = next((m.group(1) for m in (re.search(r"(\w*Warning):", ln) for ln in lines) if m), None)
    if warning:
        found.append(f"leaked {warning}")
    if rc in (1, 2) and "Traceback" not in stderr and not warning:
        if len(lines) != 1:
            found.append(f"exit {rc}: {len(lines)} lines on standard error")
        elif not lines[0].startswith("lobatto: error:"):
            found.append(f"exit {rc}: message without 'lobatto: error:'")
        elif rc == 2 and case.mesh_name not in lines[0] and not re.match(r"lobatto: error: case\.toml: \[(?!mesh)", lines[0]):
            # an error about another key of the case ([time] dt against a tiny element) may not
            # name the mesh; every other one must
            found.append("exit 2: the message does not name the mesh file")
    if rc == 0 and not outcome.summary:
        found.append("exit 0 without summary.json")
    if outcome.leftovers:
        found.append("temporary file left behind")
    return found


@dataclasses.dataclass
class Result:
    case: MeshCase
    outcome: Outcome
    findings: list


def run_cases(cases: list, timeout: float, jobs: int = 2, progress=None, memory_limit: int = MEMORY_LIMIT) -> list:
    def one(case):
        outcome = run_case(case, timeout, memory_limit)
        return Result(case, outcome, check(case, outcome))

    return fuzz_cases.run_cases(cases, timeout, jobs, progress, run_one=one)


def run_round(seed: int, count: int, timeout: float = 30.0, jobs: int = 2, start: int = 0, progress=None,
              only: str | None = None) -> list:
    return run_cases(make_cases(seed, count, start, only), timeout, jobs, progress)


outcome_counts = fuzz_cases.outcome_counts


def format_report(results: list, seed: int) -> str:
    lines = [f"lobatto mesh fuzzer: seed {seed}, {len(results)} cases, outcomes "
             + ", ".join(f"{k}: {v}" for k, v in outcome_counts(results).items())]
    by_source: dict = {}
    for r in results:
        by_source[r.case.source] = by_source.get(r.case.source, 0) + 1
    lines.append("sources: " + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items())))
    groups: dict = {}
    for r in results:
        for f in r.findings:
            groups.setdefault(f, []).append(r)
    if not groups:
        lines.append("no findings")
        return "\n".join(lines)
    for category, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        r = rs[0]
        lines.append("")
        lines.append(f"=== {category}: {len(rs)} case(s): " + ", ".join(str(x.case.index) for x in rs[:10]))
        lines.append(f"case {r.case.index} ({r.case.source}; reproduce with --seed {seed} --case {r.case.index}): "
                     + "; ".join(r.case.ops))
        rc = "timeout" if r.outcome.returncode is None else r.outcome.returncode
        lines.append(f"exit status {rc}, {r.outcome.seconds:.1f} s; stderr (last lines):")
        lines.append("    " + "\n    ".join(r.outcome.stderr.rstrip().splitlines()[-6:]))
    return "\n".join(lines)


def keep_case(case: MeshCase, outcome: Outcome | None, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"case{case.index:05d}"
    (directory / f"{stem}.toml").write_bytes(case.case.replace(case.mesh_name.encode(), f"{stem}{Path(case.mesh_name).suffix}".encode()))
    (directory / f"{stem}{Path(case.mesh_name).suffix}").write_bytes(case.mesh)
    if outcome is not None:
        info = {"source": case.source, "ops": case.ops, "returncode": outcome.returncode,
                "stderr": outcome.stderr[-8000:]}
        (directory / f"{stem}.json").write_text(json.dumps(info, indent=2) + "\n")


def main(argv: list | None = None) -> int:
    global SRC
    parser = argparse.ArgumentParser(description="Fuzz lobatto's mesh readers (tests/fuzz/README.md).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--case", type=int, metavar="I", help="only case I of the seed")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case (default 30)")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT / 2**30, metavar="GIB")
    parser.add_argument("--keep", metavar="DIR", type=Path, help="write every finding's case (or --case's) here")
    parser.add_argument("--write-sources", action="store_true", help="remake tests/data/fuzz_meshes and stop")
    parser.add_argument("--src", type=Path, default=SRC, help="lobatto source tree to run (default: this checkout's)")
    parser.add_argument("--only", metavar="TEXT", help="only the sources whose name holds TEXT (quad: the 2-D ones)")
    parser.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args(argv)
    SRC = args.src.resolve()
    if args.write_sources:
        write_sources()
        return 0
    if args.case is not None:
        args.start, args.count = args.case, 1
    cases = make_cases(args.seed, args.count, args.start, args.only)
    done = [0]

    def progress(r: Result) -> None:
        done[0] += 1
        if not args.quiet:
            rc = "T/O" if r.outcome.returncode is None else r.outcome.returncode
            mark = ("FINDING " + " | ".join(r.findings)) if r.findings else ""
            print(f"[{done[0]:>4}/{len(cases)}] case {r.case.index:>5} rc={rc!s:<3} {r.outcome.seconds:5.1f}s "
                  f"{r.case.source:<22} {'; '.join(r.case.ops)[:70]} {mark}", flush=True)

    t0 = time.perf_counter()
    results = run_cases(cases, args.timeout, args.jobs, progress, int(args.memory_limit * 2**30))
    print()
    print(format_report(results, args.seed))
    print(f"\n{len(results)} cases in {time.perf_counter() - t0:.1f} s")
    if args.keep:
        for r in results:
            if r.findings or args.case is not None:
                keep_case(r.case, r.outcome, args.keep)
    return 1 if any(r.findings for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
