"""Every CUDA kernel source compiles for sm_90 with nvcc (no GPU needed).

The translation unit is the text NVRTC receives at run time (local includes inlined by
lobatto.jit.nvrtc.source_text) plus explicit instantiations of the templates for
a few orders and both precisions, so a syntax or template error fails CI wherever nvcc is
installed. Skipped, with the reason, where nvcc is not on the PATH.

It compiles to PTX for compute_90 with the device front end's optimisation off (``--ptx
-Xcicc -O0``), as NVRTC hands PTX to the driver at run time: every C++ and template error is
the front end's, and the optimiser and ptxas took 8 of CI's 18 minutes on maxwell.cu's
order-14 and 15 instantiations (491 s against 38 s; 2-core machine, 2026-11-27). maxwell.cu's
instantiations go through the front end only, all but two (CODE_GENERATION_ONLY_FOR).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from pathlib import Path
from types import SimpleNamespace

import lobatto
from lobatto.jit.nvrtc import source_text
from lobatto.systems.maxwell.galerkin import quadrature_points
from lobatto.systems.maxwell.galerkin_cuda import (GalerkinCuda, default_min_blocks, default_planes, default_threads,
                                                   shared_values)

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH (install the CUDA toolkit to run)")

ORDERS = (1, 2, 7, 14, 15)
DTYPES = ("double", "float")


def galerkin_launches() -> list:
    """galerkin.cu's block kernel as galerkin_cuda launches it on an H100 (227 KiB of shared
    memory a block), at ORDERS and the largest order whose float64 blocks fit (N = 17), in each
    dtype where kernel_for accepts it: (P, Q = N + 1, dtype, threads, blocks per SM, planes), with
    the other plane count too where Q is even (the benchmark's launches), and two rules of more
    points (Q = N + 3: odd at N = 2, even at N = 7)."""
    limit, out = 227 * 1024, []
    for n, q in [(n, quadrature_points(n)) for n in ORDERS + (17,)] + [(2, 5), (7, 10)]:
        p, threads = n + 1, default_threads(q)
        for t, size in (("double", 8), ("float", 4)):
            planes = default_planes(p, q, size, threads, limit)
            for kp in (planes, 3 - planes) if q % 2 == 0 else (1,):
                if shared_values(p, q, kp) * size <= limit:
                    out.append((p, q, t, threads, default_min_blocks(p, q, size, threads, limit, kp), kp))
    return out


def galerkin_square_launches() -> list:
    """galerkin.cu's square kernel (Q = N + 1) as galerkin_cuda launches it on an H100 at ORDERS
    and 11, where its block fits (float64 to N = 15, float32 to N = 20): (P, dtype, threads, blocks per SM)."""
    out = []
    for n in ORDERS + (11,):
        p = n + 1
        for t, dtype in (("double", "float64"), ("float", "float32")):
            kernel = GalerkinCuda.__new__(GalerkinCuda)  # launch() needs only these
            kernel.p, kernel.q, kernel.square, kernel.threads, kernel.min_blocks = p, p, True, default_threads(p), None
            kernel.medium = None
            kernel.backend = SimpleNamespace(max_shared_per_block=227 * 1024)
            if kernel.fits(dtype):
                out.append((p, t, kernel.threads, kernel.launch(dtype)[0]))
    return out


def galerkin_media_launches() -> list:
    """The media instantiations (a per-point medium; LOSS true with a conductor) as galerkin_cuda
    launches them on an H100, where their blocks fit: (kind, template arguments) of the square
    kernel at ORDERS and 11 and of the general passes at Q = N + 1 to N = 7 and Q = N + 3 at
    N = 2 and 7, each with LOSS false and true."""
    out = []
    for n, q in [(n, n + 1) for n in ORDERS + (11,)] + [(2, 5), (7, 10)]:
        for square in (True, False) if q == n + 1 else (False,):
            if not square and q == n + 1 and n > 7:  # there the square kernel's block fits
                continue
            for t, dtype in (("double", "float64"), ("float", "float32")):
                kernel = GalerkinCuda.__new__(GalerkinCuda)  # launch() and fits() need only these
                kernel.p, kernel.q, kernel.square, kernel.threads = n + 1, q, square, default_threads(q)
                kernel.min_blocks, kernel.planes, kernel.medium = None, None, SimpleNamespace(loss_weights=None)
                kernel.backend = SimpleNamespace(max_shared_per_block=227 * 1024)
                if not kernel.fits(dtype):
                    continue
                blocks, planes = kernel.launch(dtype)
                for loss in ("false", "true"):
                    if square:
                        out.append(("SQUARE_MEDIA", (n + 1, t, kernel.threads, blocks, loss)))
                    else:
                        out.append(("MEDIA", (n + 1, q, t, kernel.threads, blocks, planes, loss)))
    return out


INSTANTIATIONS = {
    # sources that instantiate their own templates compile as they are
    "contract.cu": [],
    "row_sums.cu": [],
    # 3-D, then 2-D meshes (DIM = 2: n^2 points per element, four faces)
    "maxwell.cu": [f"LOBATTO_MAXWELL_INSTANTIATE({n}, {t})" for n in ORDERS for t in DTYPES]
    + [f"LOBATTO_MAXWELL_INSTANTIATE_DIM({n}, 2, {t})" for n in ORDERS for t in DTYPES],
    "gather_scatter.cu": [
        f"LOBATTO_GS_INSTANTIATE({t}, {i})"
        for t in ("double", "float", "long long", "int", "unsigned long long", "unsigned int")
        for i in ("int", "long long")
    ],
    # (order, fine points of the 3/2 rule, dtype, elements per block as operators/advection_cuda.py picks them)
    "advection.cu": [
        f"LOBATTO_ADVECTION_INSTANTIATE({n}, {-(-3 * (n + 1) // 2)}, {t}, {max(1, 256 // (-(-3 * (n + 1) // 2)) ** 2)})"
        for n in ORDERS for t in DTYPES
    ]  # and the 2-D kernels (D = 2, the same launch shape): velocity, U and factors with 2 components,
    # and at one order the layout with a t part (VC = OC = F = 3)
    + [
        f"LOBATTO_ADVECTION_{which}INSTANTIATE_2D({n}, {-(-3 * (n + 1) // 2)}, {t}, "
        f"{max(1, 256 // (-(-3 * (n + 1) // 2)) ** 2)}, {vc}, {vc}, {vc})"
        for n in ORDERS for t in DTYPES for which, vc in ((("", 2), ("CONTRAVARIANT_", 3)) if n == 7 else (("", 2),))
    ],
    # (M = order + 3, the Schwarz smoother's ext element, dtype)
    "fdm.cu": [f"LOBATTO_FDM_INSTANTIATE({n + 3}, {t})" for n in ORDERS for t in DTYPES]
    # and the 2-D kernels (D = 2: a 2-D mesh's thin (1, M, M) ext arrays)
    + [f"LOBATTO_FDM_INSTANTIATE_DIM({n + 3}, {t}, 2)" for n in ORDERS for t in DTYPES],
    # (order + 1, Gauss points Q, dtype, threads per block, blocks per SM, Gauss planes per pass) as
    # systems/maxwell/galerkin_cuda.py picks them (galerkin_launches)
    "galerkin.cu": [f"LOBATTO_GALERKIN_INSTANTIATE({', '.join(map(str, launch))})" for launch in galerkin_launches()]
    + [f"LOBATTO_GALERKIN_SQUARE_INSTANTIATE({', '.join(map(str, launch))})" for launch in galerkin_square_launches()]
    + [f"LOBATTO_GALERKIN_{kind}_INSTANTIATE({', '.join(map(str, launch))})"
       for kind, launch in galerkin_media_launches()]
    + [f"LOBATTO_GALERKIN_AFFINE_INSTANTIATE({n + 1}, {t})" for n in ORDERS for t in DTYPES]
    + [f"LOBATTO_GALERKIN_FACES_INSTANTIATE({n + 1}, {t})" for n in ORDERS for t in DTYPES]
    + [f"LOBATTO_GALERKIN_UPDATE_INSTANTIATE({t})" for t in DTYPES],
    "combination.cu": [f"LOBATTO_COMBINATION_INSTANTIATE({t}, {k})" for t in DTYPES for k in range(1, 9)],
    # (order, dtype, elements per block as operators/differential_cuda.py picks them)
    "differential.cu": [
        f"LOBATTO_DIFFERENTIAL_INSTANTIATE({n}, {t}, {max(1, 256 // (n + 1) ** 2)})" for n in ORDERS for t in DTYPES
    ]  # 2-D (D = 2; VC, OC, C, MR): the reference's layout (ux, uy in, w_z out, compact 2x2 metrics), and
    # at one order the 3-vector layout with the host's 3x3 metrics
    + [
        f"LOBATTO_DIFFERENTIAL_INSTANTIATE_2D({n}, {t}, {max(1, 256 // (n + 1) ** 2)}, {layout})"
        for n in ORDERS for t in DTYPES for layout in (("2, 1, 2, 2", "3, 3, 3, 3") if n == 7 else ("2, 1, 2, 2",))
    ],
    # (order, dtype, mass, elements per block as operators/helmholtz_cuda.py picks them)
    "helmholtz.cu": [
        f"LOBATTO_HELMHOLTZ_INSTANTIATE({n}, {t}, {m}, {max(1, 256 // (n + 1) ** 2)})"
        for n in ORDERS for t in DTYPES for m in (("true", "false") if n == 7 else ("true",))
    ] + [  # the 2-D kernels (D = 2, the same launch shape)
        f"LOBATTO_HELMHOLTZ_INSTANTIATE_DIM({n}, {t}, {m}, {max(1, 256 // (n + 1) ** 2)}, 2)"
        for n in ORDERS for t in DTYPES for m in (("true", "false") if n == 7 else ("true",))
    ],
}


#: instantiations that also go through code generation where a source's full set is slow there:
#: every instantiation goes through the device front end (``-fdevice-syntax-only``: template,
#: overload and static_assert errors, at every order and precision), these through cicc's code
#: generation too, for what only it reports (a __host__ function called from device code).
#: maxwell.cu has no branch on N at compile time (no ``if constexpr``), so the lowest order in
#: double and the highest in float meet every such check; its DIM = 2 branches once, at N = 1. Its 10 instantiations took 81 s of
#: code generation; front end for all 10 plus code generation for these 2, 17 s (2-core machine,
#: load 5, 2026-11-27).
CODE_GENERATION_ONLY_FOR = {
    "maxwell.cu": ["LOBATTO_MAXWELL_INSTANTIATE(1, double)", "LOBATTO_MAXWELL_INSTANTIATE(15, float)",
                   "LOBATTO_MAXWELL_INSTANTIATE_DIM(1, 2, double)"],
}

PACKAGE = Path(lobatto.__file__).resolve().parent
SOURCES = {p.name: p for p in PACKAGE.rglob("*.cu")}  # every layer keeps its kernels beside it


def test_every_source_has_instantiations():
    assert sorted(SOURCES) == sorted(INSTANTIATIONS), "add the new kernel source to INSTANTIATIONS"


@pytest.mark.parametrize("source", sorted(INSTANTIATIONS))
def test_compiles_for_sm90(source, tmp_path):
    passes = [(INSTANTIATIONS[source], ["-Xcicc", "-O0"])]
    if source in CODE_GENERATION_ONLY_FOR:
        subset = CODE_GENERATION_ONLY_FOR[source]
        assert set(subset) <= set(INSTANTIATIONS[source])
        passes = [(INSTANTIATIONS[source], ["-fdevice-syntax-only"]), (subset, ["-Xcicc", "-O0"])]
    for i, (lines, mode) in enumerate(passes):
        tu = tmp_path / f"check{i}_{source}"
        tu.write_text(source_text(SOURCES[source]) + "\n" + "\n".join(lines) + "\n")
        cmd = [NVCC, "-arch=compute_90", "--ptx", *mode, "-std=c++17", str(tu), "-o", str(tmp_path / f"check{i}.ptx")]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"


def test_the_front_end_pass_catches_an_instantiation_error(tmp_path):
    """-fdevice-syntax-only does instantiate: an error only the order-15 instantiation has fails."""
    tu = tmp_path / "bad.cu"
    tu.write_text("template <int N, typename T> __global__ void k(T* a) { static_assert(N < 15, \"N\"); a[0] = N; }\n"
                  "template __global__ void k<1, double>(double*);\ntemplate __global__ void k<15, float>(float*);\n")
    cmd = [NVCC, "-arch=compute_90", "--ptx", "-fdevice-syntax-only", "-std=c++17", str(tu), "-o", str(tmp_path / "b.ptx")]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "static assertion failed" in proc.stdout + proc.stderr
