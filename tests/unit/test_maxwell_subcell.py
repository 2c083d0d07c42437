"""Sub-cell averaging (systems/maxwell/subcell.py, sampling = "average"): at a plane interface
normal to an axis each cut point's eps is the harmonic mean of its control volume for the
normal component and the arithmetic mean for the others, from the exact cut fraction computed
here; uncut points keep the point values; an oblique plane gives equal components along the
axes it leans on; bad input is one line."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from lobatto import cli
from lobatto.api import Simulation, case_from_dict
from lobatto.discretization.gll import gll_weights
from lobatto.systems.maxwell import subcell


def medium(where, order=3, elements=(3, 2, 1), epsilon=4.0, sampling="average"):
    case = case_from_dict({
        "mesh": {"elements": list(elements), "upper": [1.5, 1.0, 0.5], "periodic": [False, True, True],
                 "boundary": "absorbing"},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": where, "epsilon": epsilon, "sampling": sampling}},
        "initial": {"Ey": "exp(-20*(x-0.3)**2)", "Hz": "exp(-20*(x-0.3)**2)"}, "time": {"t_end": 0.1},
        "output": {"formats": []}})
    with tempfile.TemporaryDirectory() as out:
        sim = Simulation(case, backend="cpu", output_dir=out, comm=None)
    return sim.system


def control_bounds(coords_1d, lower, upper, order):
    """The physical bounds of each GLL point's control interval on an affine element [lower, upper]."""
    edges = -1.0 + np.concatenate([[0.0], np.cumsum(gll_weights(order))])  # widths: the GLL weights
    to_x = lambda r: lower + (r + 1) / 2 * (upper - lower)
    return to_x(edges[:-1]), to_x(edges[1:])


@pytest.mark.parametrize("axis, plane", [(0, 0.6), (1, 0.3)])
def test_plane_interface_normal_to_an_axis(axis, plane):
    """eps = 4 on the far side of a plane normal to x (or y) that cuts elements: at the cut
    points eps_axis = 1/(f/4 + 1 - f) and the other two 4 f + 1 - f, f the exact share of the
    control interval beyond the plane; elsewhere 1 or 4 (the point values), to 1e-12."""
    order = 3
    system = medium(f"{'xyz'[axis]} - {plane}", order)
    eps = system.medium.epsilon
    assert eps.shape[0] == 3
    coords = system.geometry.coords
    size = (1.5 / 3, 1.0 / 2)[axis]
    cut = 0
    for e in range(system.num_elements):
        lower = np.floor(coords[axis, e].min() / size + 1e-9) * size
        lo, hi = control_bounds(None, lower, lower + size, order)
        f = np.clip((hi - plane) / (hi - lo), 0.0, 1.0)  # per GLL index along the axis
        harmonic, mean = 1 / (f / 4 + 1 - f), 4 * f + 1 - f
        shape = [1, 1, 1]
        shape[2 - axis] = order + 1  # coords[c, e, k, j, i]: x varies along the last axis
        for c in range(3):
            want = (harmonic if c == axis else mean).reshape(shape) * np.ones((order + 1,) * 3)
            assert np.max(np.abs(eps[c, e] - want)) < 1e-12, (e, c, eps[c, e], want)
        cut += int(np.sum((f > 0) & (f < 1)))
    assert cut > 0  # the plane cuts some control volumes


def test_uncut_points_keep_the_point_values_and_oblique_planes_lean_on_two_axes():
    system = medium("x + y - 1.1", order=3)
    point = medium("x + y - 1.1", order=3, sampling="point")
    eps, eps_point = system.medium.epsilon, point.medium.epsilon
    cut = ~np.isclose(eps[0], eps_point) | ~np.isclose(eps[2], eps_point)
    assert 0 < cut.sum() < cut.size / 2
    assert np.array_equal(eps[0][~cut], eps_point[~cut])
    # n = (1, 1, 0)/sqrt(2): eps_xx = eps_yy = (harmonic + mean)/2 <= eps_zz = mean, all within [1, 4]
    assert np.allclose(eps[0][cut], eps[1][cut], rtol=1e-12)
    assert np.all(eps[0][cut] <= eps[2][cut] + 1e-12) and np.all((eps[:, cut] >= 1) & (eps[:, cut] <= 4))


@pytest.mark.parametrize("table, message", [
    ('where = "x - 0.6"\nepsilon = "x - 0.62"\nsampling = "average"',
     'epsilon is -0.0'),
    ('where = "x - 0.6"\nepsilon = "x - 0.62"\nsampling = "average"\nmodel = "drude"\n'
     'poles = [{plasma_frequency = 1.0, collision_frequency = 0.1}]', 'epsilon is -0.0'),  # (eps_inf, with poles)
    # a film through the face points x = 0.5 but under half of any control volume: no poles anywhere
    ('where = "min(x - 0.49, 0.51 - x)"\nepsilon = 2.0\nsampling = "average"\nmodel = "drude"\n'
     'poles = [{plasma_frequency = 1.0, collision_frequency = 0.1}]', 'its poles act at no point of the mesh'),
])
def test_bad_averaged_tables_are_one_line_errors(table, message, tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text('[mesh]\nelements = [3, 1, 1]\nupper = [1.5, 0.5, 0.5]\n[discretization]\norder = 3\n'
                    '[physics]\nequations = "maxwell"\n[time]\nt_end = 0.01\n[material.all]\n' + table + "\n")
    code = cli.main(["run", str(case), "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]


def test_mass_weighted_integrals_are_exact_with_averaging():
    """What makes the averaged slab converge faster (docs/electromagnetics.md, the table of
    benchmarks/subcell_convergence.py): with each control volume as wide as its GLL weight,
    sum M eps_yy = the integral of eps and sum M / eps_xx = the integral of 1/eps, to round-off,
    for a plane that cuts elements (eps = 4 for x > 0.6 in [0, 1.5] x [0, 1] x [0, 0.5]);
    point sampling misses both by the cut points' share."""
    averaged, pointwise = medium("x - 0.6"), medium("x - 0.6", sampling="point")
    mass = averaged.geometry.mass
    eps = averaged.medium.epsilon
    assert abs(np.sum(mass * eps[1]) - 2.1) < 1e-12 and abs(np.sum(mass * eps[2]) - 2.1) < 1e-12
    assert abs(np.sum(mass / eps[0]) - 0.4125) < 1e-12
    assert abs(np.sum(mass * pointwise.medium.epsilon) - 2.1) > 1e-2


def test_averaged_table_over_an_anisotropic_one():
    """An averaged plane (eps = 4 beyond x = 0.6) over a diagonal medium (x < 0.9): the cut
    points average against the tensor's components; points not cut keep their values."""
    case = case_from_dict({
        "mesh": {"elements": [3, 2, 1], "upper": [1.5, 1.0, 0.5], "periodic": [False, True, True]},
        "discretization": {"order": 3}, "physics": {"equations": "maxwell"},
        "material": {"crystal": {"where": "0.9 - x", "epsilon": [2.0, 3.0, 1.5], "sampling": "element"},
                     "slab": {"where": "x - 0.6", "epsilon": 4.0, "sampling": "average"}},
        "time": {"t_end": 0.1}, "output": {"formats": []}})
    with tempfile.TemporaryDirectory() as out:
        system = Simulation(case, backend="cpu", output_dir=out, comm=None).system
    eps, x = system.medium.epsilon, system.geometry.coords[0]
    inside_crystal = (x.mean(axis=(1, 2, 3)) < 0.5)[:, None, None, None] & (x < 0.55)
    for c, value in enumerate((2.0, 3.0, 1.5)):
        assert np.all(eps[c][inside_crystal] == value)
    assert np.all(eps[:, x > 0.7] == 4.0)
    cut = (x > 0.55) & (x < 0.65)
    assert np.all((eps[1][cut] > 3.0) & (eps[1][cut] < 4.0))  # between the crystal's e_y and 4


def test_averaging_halves_the_field_error_of_a_cut_slab():
    """benchmarks/subcell_convergence.py's slab at its coarsest (h = 0.5, N = 4): the L2 error of
    Ey at t_end against the exact reflected and transmitted pulses is 0.213 with point sampling
    and 0.073 averaged (measured; the table in docs/electromagnetics.md goes on to h = 0.0625,
    where it is 1.0e-2 against 6.3e-4)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import subcell_convergence as study

    point = study.measured_reflection(0.5, 4, "point")[3]
    averaged = study.measured_reflection(0.5, 4, "average")[3]
    print(f"field error: point {point:.3g}, average {averaged:.3g}")
    assert averaged < 0.5 * point and averaged < 0.1


DRUDE_KEYS = {"model": "drude", "poles": [{"plasma_frequency": 1.0, "collision_frequency": 0.1}]}


def pole_points(where, order, elements=(3, 1, 1)):
    """(system, the points where an averaged Drude table's poles act: its term's mask w)."""
    case = case_from_dict({
        "mesh": {"elements": list(elements), "upper": [1.5, 0.5, 0.5], "periodic": [False, True, True]},
        "discretization": {"order": order}, "physics": {"equations": "maxwell"},
        "material": {"slab": {"where": where, "epsilon": 2.0, "sampling": "average", **DRUDE_KEYS}},
        "time": {"t_end": 0.1}, "output": {"formats": []}})
    with tempfile.TemporaryDirectory() as out:
        system = Simulation(case, backend="cpu", output_dir=out, comm=None).system
    (term,) = [t for t in system.terms if t.name == "dispersion.slab"]
    acting = np.zeros(system.geometry.coords.shape[1:], dtype=bool)
    acting[term.elements] = True if term.weight is None else np.asarray(term.weight) == 1.0
    return system, acting


def test_averaged_poles_act_where_more_than_half_the_control_volume_is_inside():
    """materials.pole_mask: a slab 0.6 < x < 1.1 whose faces cut control volumes (N = 3, shares
    0.72 and 0.28): subcell.shares are the exact cut fractions, and the poles act exactly where
    the share is over 1/2 (a rule that took any share, or the whole volume, would differ at the
    cut points). A plane through
    the centre points of an element (x = 0.75, N = 6) halves their volumes: no poles there,
    for either side of the plane (the share is 1/2 up to rounding, which otherwise picks a side
    by its last bit)."""
    order = 3
    system, acting = pole_points("min(x - 0.6, 1.1 - x)", order)
    x = system.geometry.coords[0]
    lower = np.floor(x.min(axis=(1, 2, 3)) / 0.5 + 1e-9) * 0.5
    lo, hi = control_bounds(None, lower[:, None], lower[:, None] + 0.5, order)  # (E, n) along x
    inside = np.clip((np.minimum(hi, 1.1) - np.maximum(lo, 0.6)) / (hi - lo), 0.0, 1.0)
    exact = inside[:, None, None, :] * np.ones_like(x)
    shares = subcell.shares(system.mesh, system.geometry.coords, order,
                            lambda x, y, z, part: np.minimum(x - 0.6, 1.1 - x))
    assert np.max(np.abs(shares - exact)) < 1e-12
    assert np.any((exact > 0) & (exact <= 0.5)) and np.any((exact > 0.5) & (exact < 1))  # both kinds of cut
    assert np.array_equal(acting, exact > 0.5)
    for order in (6,):  # (at N = 6 the share at x = 0.75 rounds to either side of 1/2)
        for where in ("x - 0.75", "0.75 - x"):
            system, acting = pole_points(where, order)
            x = system.geometry.coords[0]
            on_plane = np.isclose(x, 0.75, atol=1e-12)
            assert on_plane.any() and not acting[on_plane].any(), (order, where)
            inside = (x - 0.75) * (1 if where.startswith("x") else -1) > 1e-6
            assert acting[inside].all() and not acting[~inside].any()


def test_averaged_poles_on_a_volume_far_from_the_tables_warn(capsys):
    """dispersive._check_poles_volume: a film 0.55 < x < 0.66 (N = 3, h = 0.5) fills about half
    of one control volume (both faces in it: the sub-cell fit finds 0.109 of its 0.11), so its
    poles act on 0.208 of x-width: a warning giving both volumes (times 0.25 of y-z area); the
    slab 0.6 < x < 1.1 (poles on exactly its width, 0.5) gives none."""
    pole_points("min(x - 0.6, 1.1 - x)", 3)
    assert "warning" not in capsys.readouterr().out
    pole_points("min(x - 0.55, 0.66 - x)", 3)
    lines = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    want = ("lobatto: warning: <case>: [material.slab] sampling = \"average\": its poles act on a volume of 0.05208 "
            "against the table's 0.027")
    assert len(lines) == 1 and lines[0].startswith(want), lines


def test_an_averaged_film_between_the_points_applies():
    """A film 0.52 < x < 0.53 holds no GLL point (N = 3, h = 0.5: points at 0.5 and 0.638) but
    0.24 of the control volume of the face point x = 0.5: averaged, it sets eps_y there to
    1 + 3 f, f the sub-cell fit's share (0.25: both faces in one sub-box), where before it was
    refused as applying nowhere (as point sampling refuses it); with poles it is refused by
    their own check (they would act nowhere)."""
    system = medium("min(x - 0.52, 0.53 - x)")
    eps, x = system.medium.epsilon, system.geometry.coords[0]
    share = 0.01 / (0.5 / 12)  # the face point's control interval: weight 1/6 of the half-width 0.25
    at = np.isclose(x, 0.5) & (x.mean(axis=(1, 2, 3)) > 0.5)[:, None, None, None]
    assert at.any() and np.all(np.abs(eps[1][at] - (1 + 3 * share)) < 3 * 0.02)
    assert np.all(eps[1][~at] == 1.0)
    with pytest.raises(Exception, match="its poles act at no point of the mesh"):
        pole_points("min(x - 0.52, 0.53 - x)", 3)
    with pytest.raises(Exception, match=r"is not > 0 at any point or sub-cell point \(sampling = \"average\"\)"):
        medium("x - 1.6")  # (beyond the mesh: still nowhere)


def test_sub_coordinates_equal_the_whole_contraction_and_ignore_the_chunking():
    """subcell.sub_coordinates (one axis at a time) equals the one-contraction interpolation to
    round-off on random elements, and gives the same bits for an element alone or in a chunk
    (the averaged medium is then the same on any number of ranks)."""
    rng = np.random.default_rng(5)
    for order in (2, 5):
        matrix = subcell.sub_points(order)[1]
        coords = rng.standard_normal((3, 9) + (order + 1,) * 3)
        got = subcell.sub_coordinates(matrix, coords)
        want = np.einsum("ia,jb,kc,deabc->deijk", matrix, matrix, matrix, coords)
        assert np.max(np.abs(got - want)) < 1e-13 * np.max(np.abs(want))
        alone = np.concatenate([subcell.sub_coordinates(matrix, coords[:, e:e + 1]) for e in range(9)], axis=1)
        assert np.array_equal(got, alone)
