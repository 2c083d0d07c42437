"""A short, seeded round of the case-file fuzzer (tests/fuzz/fuzz_cases.py).

Every mutated case must end the way docs/case-file.md promises: exit status 0 (with
summary.json), or 1/2 with exactly one ``lobatto: error: ...`` line on standard error; no
traceback, no leaked warning, no temporary file left behind, no timeout on a small case.
A failure prints the summary table and, for each category, the smallest case that shows it;
reproduce one with ``python tests/fuzz/fuzz_cases.py --seed SEED --case I``.

The seed and count are fixed so the round is the same on every run; set LOBATTO_FUZZ_SEED /
LOBATTO_FUZZ_COUNT to try others. tests/fuzz/README.md explains longer rounds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_cases  # noqa: E402

SEED = int(os.environ.get("LOBATTO_FUZZ_SEED", "2024"))
COUNT = int(os.environ.get("LOBATTO_FUZZ_COUNT", "32"))
TIMEOUT = float(os.environ.get("LOBATTO_FUZZ_TIMEOUT", "10"))
JOBS = 2


def test_cases_are_deterministic():
    a = fuzz_cases.make_cases(SEED, 8)
    b = fuzz_cases.make_cases(SEED, 8)
    assert [c.text for c in a] == [c.text for c in b]
    # case i does not depend on how many cases come before it
    assert fuzz_cases.make_cases(SEED, 1, start=5)[0].text == a[5].text


def test_fuzz_round():
    start = time.perf_counter()
    results = fuzz_cases.run_round(SEED, COUNT, timeout=TIMEOUT, jobs=JOBS)
    elapsed = time.perf_counter() - start
    print(f"{len(results)} cases in {elapsed:.1f} s: {fuzz_cases.outcome_counts(results)}")
    findings = [f for f in fuzz_cases.findings_of(results) if not f.known]
    if findings:
        pytest.fail(f"{len(findings)} finding(s) in the fuzz round:\n"
                    + fuzz_cases.format_report(results, SEED), pytrace=False)
