"""benchmarks/channel180.py (the Re_tau = 180 channel against Moser, Kim & Mansour): a
statistics file made of MKM's own profiles, sampled at the GLL points of the example's graded
mesh, gives back MKM's u_tau, U+ and Reynolds-stress peaks; two files of one continued chain
count once, two separate windows are joined by their weights."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("channel180", ROOT / "benchmarks" / "channel180.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["channel180"] = bench
spec.loader.exec_module(bench)
pytestmark = pytest.mark.skipif(not (bench.REFERENCE / "chan180.means").exists(),
                                reason=f"no MKM reference at {bench.REFERENCE} (set LOBATTO_CHANNEL180)")
NU, ORDER, ELEMENTS, RE_TAU = 1 / 2800, 7, 12, 178.12


def write_profile(path: Path, scale: float = 1.0, t_last: float = 100.0, weight: float = 40.0) -> None:
    from scipy.interpolate import CubicSpline

    mkm = bench.read_mkm(bench.REFERENCE)
    r = bench.gll(ORDER)
    edges = np.linspace(-1, 1, ELEMENTS + 1)
    y = np.unique(np.concatenate([a + (b - a) * (r + 1) / 2 for a, b in zip(edges[:-1], edges[1:])]))
    y = np.tanh(1.4 * y) / np.tanh(1.4)
    u_tau = RE_TAU * NU
    plus = (1 - np.abs(y)) * RE_TAU
    at = lambda key: CubicSpline(mkm["y+"], mkm[key])(plus)  # noqa: E731
    U = scale * u_tau * at("U+")
    uu, vv, ww = (u_tau**2 * at(k) for k in ("uu", "vv", "ww"))
    uv = u_tau**2 * at("uv") * -np.sign(y)  # MKM's lower half (y < 0): uv < 0
    config = f"[physics]\nviscosity = {NU!r}\n[discretization]\norder = {ORDER}\n"
    with h5py.File(path, "w") as f:
        f.attrs.update(config=config, weight=weight, t_last=t_last, samples=10)
        f["coordinates/y"] = y
        for key, value in {"ux": U, "uy": 0 * y, "uz": 0 * y, "ux_ux": uu + U * U, "uy_uy": vv, "uz_uz": ww,
                           "ux_uy": uv}.items():
            f[f"mean/{key}"] = value


def test_mkm_profiles_come_back(tmp_path, capsys):
    write_profile(tmp_path / "a.h5")
    assert bench.main([str(tmp_path / "a.h5"), "--json", str(tmp_path / "a.json"),
                       "--plot", str(tmp_path / "a.png")]) == 0
    import json

    record = json.loads((tmp_path / "a.json").read_text())
    assert record["re_tau"] == pytest.approx(RE_TAU, rel=5e-3)
    assert record["u_tau_stress"] == pytest.approx(RE_TAU * NU, rel=0.02)
    for row in record["rows"]:
        assert abs(row["error"]) < 0.01, row
    assert (tmp_path / "a.png").stat().st_size > 10_000
    assert "peak u_rms+" in capsys.readouterr().out


def test_files_of_a_chain_count_once_and_separate_windows_join(tmp_path):
    write_profile(tmp_path / "early.h5", scale=1.0, t_last=80.0, weight=20.0)
    write_profile(tmp_path / "late.h5", scale=1.1, t_last=100.0, weight=40.0)  # window 60..100 holds 80
    chain = bench.combine([bench.read_statistics(tmp_path / p) for p in ("early.h5", "late.h5")])
    assert chain["files"] == [str(tmp_path / "late.h5")] and chain["weight"] == 40.0
    write_profile(tmp_path / "late.h5", scale=1.1, t_last=100.0, weight=20.0)  # window 80..100
    joined = bench.combine([bench.read_statistics(tmp_path / p) for p in ("early.h5", "late.h5")])
    single = bench.read_statistics(tmp_path / "early.h5")
    np.testing.assert_allclose(joined["mean_ux"], 1.05 * single["mean_ux"], rtol=1e-12)
