/* Compiled CPU kernel of the Helmholtz operator (wrapped by lobatto.operators.helmholtz_cpu).
 *
 * Specialised at compile time on the points per direction, the dimension and the
 * floating-point type:
 *     cc -O3 -march=native -fno-math-errno -ffp-contract=fast -shared -fPIC -fopenmp \
 *        -DNQ=8 -DDIM=3 -DREAL=double helmholtz.c -o helmholtz_nq8.so
 * DIM = 2 (a 2-D mesh: the k axis has one point): no t derivative, g is (3, E, 1, n, n)
 * (rr rs ss), u, out, mass (E, 1, n, n).
 *
 * out = h1 * [Dr^T Ds^T Dt^T] G [Dr Ds Dt]^T u + h2 * mass * u     (mass NULL: no h2 term)
 *
 * Layouts (C order, n = NQ, axes [k, j, i] with i fastest), as the reference in helmholtz.py:
 *     u, out, mass : (E, n, n, n)
 *     g            : (6, E, n, n, n)   rr rs rt ss st tt
 *     D            : (n, n)            D[i][l] = h_l'(x_i)
 * Elements are independent: an OpenMP `parallel for` over elements, static schedule. Each
 * thread keeps one element's three weighted derivatives (3 n^3 values) on its stack.
 */
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef NQ
#error "compile with -DNQ=<points per direction>"
#endif
#ifndef REAL
#define REAL double
#endif

#ifndef DIM
#define DIM 3
#endif
#if DIM != 2 && DIM != 3
#error "DIM must be 2 or 3"
#endif

#define NQ2 (NQ * NQ)
/* points per element: NQ^3, or NQ^2 on the thin k axis of a 2-D element */
#define NQ3 (DIM == 3 ? NQ * NQ * NQ : NQ * NQ)

/* Full unrolling pays up to NQ = 8 (111 against 64 Mpoints/s on one core); at NQ = 9 it spills
 * (30 against 95 Mpoints/s) and takes 5 s to compile. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(LOBATTO_NO_UNROLL) && NQ <= 8
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

typedef int64_t idx_t;

int lobatto_nq(void) { return NQ; }
int lobatto_dim(void) { return DIM; }
int lobatto_real_size(void) { return (int)sizeof(REAL); }
void lobatto_set_num_threads(int n)
{
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}
int lobatto_get_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#if DIM == 2
/* One 2-D element (factors rr rs ss): the loops run along i (contiguous) innermost. */
static inline void element(const REAL *restrict ue, REAL *restrict oe, const REAL *restrict ge,
                           idx_t gs, const REAL *restrict me, const REAL (*restrict D)[NQ],
                           const REAL (*restrict Dt)[NQ], REAL h1, REAL h2)
{
    REAL wr[NQ2], ws[NQ2];
    for (int j = 0; j < NQ; ++j) {
        REAL ur[NQ], us[NQ];
        UNROLL
        for (int i = 0; i < NQ; ++i) ur[i] = us[i] = 0;
        const REAL *row = ue + j * NQ;
        UNROLL
        for (int l = 0; l < NQ; ++l) {
            const REAL ul = row[l], ds = D[j][l];
            const REAL *u_s = ue + l * NQ;
            UNROLL
            for (int i = 0; i < NQ; ++i) {
                ur[i] += Dt[l][i] * ul;
                us[i] += ds * u_s[i];
            }
        }
        const int p0 = j * NQ;
        UNROLL
        for (int i = 0; i < NQ; ++i) {
            const int p = p0 + i;
            const REAL grr = ge[p], grs = ge[p + gs], gss = ge[p + 2 * gs];
            wr[p] = grr * ur[i] + grs * us[i];
            ws[p] = grs * ur[i] + gss * us[i];
        }
    }
    for (int j = 0; j < NQ; ++j) {
        REAL a[NQ];
        UNROLL
        for (int i = 0; i < NQ; ++i) a[i] = 0;
        const REAL *row = wr + j * NQ;
        UNROLL
        for (int l = 0; l < NQ; ++l) {
            /* out(j,i) += D[l][i] wr(j,l) + D[l][j] ws(l,i) */
            const REAL wl = row[l], ds = D[l][j];
            const REAL *w_s = ws + l * NQ;
            UNROLL
            for (int i = 0; i < NQ; ++i) a[i] += D[l][i] * wl + ds * w_s[i];
        }
        const int p0 = j * NQ;
        if (me) {
            UNROLL
            for (int i = 0; i < NQ; ++i) oe[p0 + i] = h1 * a[i] + h2 * me[p0 + i] * ue[p0 + i];
        } else {
            UNROLL
            for (int i = 0; i < NQ; ++i) oe[p0 + i] = h1 * a[i];
        }
    }
}
#else
/* One element: the loops run along i (contiguous) innermost so they vectorise. */
static inline void element(const REAL *restrict ue, REAL *restrict oe, const REAL *restrict ge,
                           idx_t gs, const REAL *restrict me, const REAL (*restrict D)[NQ],
                           const REAL (*restrict Dt)[NQ], REAL h1, REAL h2)
{
    REAL wr[NQ3], ws[NQ3], wt[NQ3];
    for (int k = 0; k < NQ; ++k) {
        for (int j = 0; j < NQ; ++j) {
            REAL ur[NQ], us[NQ], ut[NQ];
            UNROLL
            for (int i = 0; i < NQ; ++i) ur[i] = us[i] = ut[i] = 0;
            const REAL *row = ue + (k * NQ + j) * NQ;
            UNROLL
            for (int l = 0; l < NQ; ++l) {
                const REAL ul = row[l], ds = D[j][l], dt = D[k][l];
                const REAL *u_s = ue + (k * NQ + l) * NQ;
                const REAL *u_t = ue + (l * NQ + j) * NQ;
                UNROLL
                for (int i = 0; i < NQ; ++i) {
                    ur[i] += Dt[l][i] * ul;
                    us[i] += ds * u_s[i];
                    ut[i] += dt * u_t[i];
                }
            }
            const int p0 = (k * NQ + j) * NQ;
            UNROLL
            for (int i = 0; i < NQ; ++i) {
                const int p = p0 + i;
                const REAL grr = ge[p], grs = ge[p + gs], grt = ge[p + 2 * gs];
                const REAL gss = ge[p + 3 * gs], gst = ge[p + 4 * gs], gtt = ge[p + 5 * gs];
                wr[p] = grr * ur[i] + grs * us[i] + grt * ut[i];
                ws[p] = grs * ur[i] + gss * us[i] + gst * ut[i];
                wt[p] = grt * ur[i] + gst * us[i] + gtt * ut[i];
            }
        }
    }
    for (int k = 0; k < NQ; ++k) {
        for (int j = 0; j < NQ; ++j) {
            REAL a[NQ];
            UNROLL
            for (int i = 0; i < NQ; ++i) a[i] = 0;
            const REAL *row = wr + (k * NQ + j) * NQ;
            UNROLL
            for (int l = 0; l < NQ; ++l) {
                /* out(k,j,i) += D[l][i] wr(k,j,l) + D[l][j] ws(k,l,i) + D[l][k] wt(l,j,i) */
                const REAL wl = row[l], ds = D[l][j], dt = D[l][k];
                const REAL *w_s = ws + (k * NQ + l) * NQ;
                const REAL *w_t = wt + (l * NQ + j) * NQ;
                UNROLL
                for (int i = 0; i < NQ; ++i) a[i] += D[l][i] * wl + ds * w_s[i] + dt * w_t[i];
            }
            const int p0 = (k * NQ + j) * NQ;
            if (me) {
                UNROLL
                for (int i = 0; i < NQ; ++i) oe[p0 + i] = h1 * a[i] + h2 * me[p0 + i] * ue[p0 + i];
            } else {
                UNROLL
                for (int i = 0; i < NQ; ++i) oe[p0 + i] = h1 * a[i];
            }
        }
    }
}
#endif

void helmholtz_apply(const REAL *restrict u, REAL *restrict out, const REAL *restrict g,
                     const REAL *restrict mass, const REAL *restrict Dflat, REAL h1, REAL h2, idx_t E)
{
    REAL D[NQ][NQ], Dt[NQ][NQ];
    for (int i = 0; i < NQ; ++i)
        for (int l = 0; l < NQ; ++l) {
            D[i][l] = Dflat[i * NQ + l];
            Dt[l][i] = Dflat[i * NQ + l];
        }
    const idx_t gs = E * NQ3;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (idx_t e = 0; e < E; ++e)
        element(u + e * NQ3, out + e * NQ3, g + e * NQ3, gs, mass ? mass + e * NQ3 : 0,
                (const REAL (*)[NQ])D, (const REAL (*)[NQ])Dt, h1, h2);
}
