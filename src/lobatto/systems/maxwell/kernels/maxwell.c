/* Compiled CPU kernels of the SEDG Maxwell operator (wrapped by lobatto.systems.maxwell.cpu).
 *
 * Specialised at compile time on the number of GLL points per direction, the mesh's
 * dimension and the floating-point type:
 *     cc -O3 -march=native -fno-math-errno -ffp-contract=fast -shared -fPIC -fopenmp \
 *        -DNQ=8 -DDIM=3 -DREAL=double maxwell.c -o maxwell_nq8_f64.so
 * so every loop over points has a constant trip count and is unrolled / vectorised.
 *
 * Layouts (C order, n = NQ, axes [k, j, i] with i fastest) -- identical to the NumPy
 * reference in lobatto/systems/maxwell/reference.py, which defines what these compute.
 * nz = NQZ is n in 3-D and 1 in 2-D (DIM = 2: a thin k axis, z-invariant fields, the
 * t derivative skipped, NF = 4 edge faces of nz * n points):
 *     u, residual, out : (6, E, nz, n, n)       Ex Ey Ez Hx Hy Hz
 *     traces / sums    : (6, E, NF, nz, n)
 *     metrics          : (3, 3, E, nz, n, n)    metrics[b, a] = d r_b / d x_a
 *     jacobian         : (E, nz, n, n)          J = det(d x / d r)
 *     normals          : (3, E, NF, nz, n)
 *     lift             : (E, NF, nz, n)
 *     face_factors     : (2, E, NF)
 *     affine           : (E,) int8             1: metrics / normals / lift constant per element (face)
 *     derivative D     : (n, n)                 D[i, l] = h_l'(x_i)
 * Face f's points [a, b] are the volume slice with the normal index fixed
 * ([k, j] on faces 0/1, [k, i] on 2/3, [j, i] on 4/5), see mesh/topology.py.
 *
 * Elements are independent: an OpenMP `parallel for` over elements, static schedule.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
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

#define N1 (NQ - 1)
#define NQ2 (NQ * NQ)
#define NQZ (DIM == 3 ? NQ : 1) /* points along t: one on a 2-D mesh */
#define NPE (NQZ * NQ2)         /* points per element */
#define NF (2 * DIM)            /* faces per element */
#define NFP (NQZ * NQ)          /* points per face */

/* Full unrolling pays up to NQ = 9 and costs (spills, compile time) above it. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(LOBATTO_NO_UNROLL) && NQ <= 9
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

#ifdef _OPENMP
#define OMP_FOR _Pragma("omp for schedule(static)")
#define OMP_PARALLEL _Pragma("omp parallel")
#else
#define OMP_FOR
#define OMP_PARALLEL
#endif

typedef int64_t idx_t;

/* ---- introspection / threads ----------------------------------------------------------- */
int lobatto_nq(void) { return NQ; }
int lobatto_dim(void) { return DIM; }
int lobatto_real_size(void) { return (int)sizeof(REAL); }
int lobatto_has_openmp(void)
{
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}
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

/* The t term of the chain rule d/dx_a = sum_b m[b][a] d/dr_b: none on a 2-D mesh (the fields
 * are z-invariant; metrics[b][2] = 0 for b < 2 there, so d/dz of any field is 0). */
#if DIM == 3
#define PD_T(m, f, a) + m[2][a] * g[f][2][i]
#else
#define PD_T(m, f, a)
#endif

/* Volume index of face point (a, b) of face f: off[f] + a * sa[f] + b * sb[f]. */
static const int FACE_OFF[6] = {0, N1, 0, N1 * NQ, 0, N1 * NQ2};
static const int FACE_SA[6] = {NQ2, NQ2, NQ2, NQ2, NQ, NQ};
static const int FACE_SB[6] = {NQ, NQ, 1, 1, 1, 1};

/* ---- traces: out[0:3] = -n x E, out[3:6] = -n x H at the face points ------------------ */
void maxwell_traces(const REAL *restrict u, const REAL *restrict normals, REAL *restrict out,
                    idx_t E)
{
    const idx_t fs = E * NPE;      /* field stride of u */
    const idx_t ts = E * NF * NFP;  /* field stride of traces and normals */
    OMP_PARALLEL
    {
        OMP_FOR
        for (idx_t e = 0; e < E; ++e) {
            const REAL *ue = u + e * NPE;
            for (int f = 0; f < NF; ++f) {
                const idx_t fo = (e * NF + f) * NFP;
                const REAL *n0 = normals + fo, *n1 = n0 + ts, *n2 = n1 + ts;
                REAL *o = out + fo;
                const int off = FACE_OFF[f], sa = FACE_SA[f], sb = FACE_SB[f];
                for (int a = 0; a < NQZ; ++a) {
                    UNROLL
                    for (int b = 0; b < NQ; ++b) {
                        const int p = a * NQ + b;
                        const idx_t v = off + a * sa + b * sb;
                        const REAL x0 = n0[p], x1 = n1[p], x2 = n2[p];
                        const REAL e0 = ue[v], e1 = ue[v + fs], e2 = ue[v + 2 * fs];
                        const REAL h0 = ue[v + 3 * fs], h1 = ue[v + 4 * fs], h2 = ue[v + 5 * fs];
                        o[p] = -(x1 * e2 - x2 * e1);
                        o[p + ts] = -(x2 * e0 - x0 * e2);
                        o[p + 2 * ts] = -(x0 * e1 - x1 * e0);
                        o[p + 3 * ts] = -(x1 * h2 - x2 * h1);
                        o[p + 4 * ts] = -(x2 * h0 - x0 * h2);
                        o[p + 5 * ts] = -(x0 * h1 - x1 * h0);
                    }
                }
            }
        }
    }
}

/* ---- the operator on one element -------------------------------------------------------
 * r: output with field stride rs (rs = NPE for a per-element buffer, E*NPE for the global
 * out array, already offset to element e).  Dt[l][i] = D[i][l].
 */
typedef struct {
    const REAL *u, *sums, *metrics, *jacobian, *normals, *lift, *factors;
    const int8_t *affine;
    idx_t E;
    REAL D[NQ][NQ], Dt[NQ][NQ];
    REAL inv_eps, inv_mu, ae, ah, alpha;
    const REAL *medium_flux; /* a medium per point: its flux coefficients a, b, c, d, or NULL */
    idx_t flux_cs;           /* their component stride: 0, or 4 E 6 n^2 for a diagonal eps, mu (anisotropy.py) */
    int split;               /* 1: the split curl on curved elements, 0: the chain rule alone */
} ctx_t;

/* The surface terms in a medium given per point (materials.py), before the point's 1/eps,
 * 1/mu: r += L (a S_H - alpha b n x S_E), r_H -= L (c S_E + alpha d n x S_H); with a diagonal
 * eps, mu (flux_cs > 0) component i takes its own a, b (E_i) and c, d (H_i). */
static inline void element_flux_medium(const ctx_t *restrict c, idx_t e, REAL *restrict r, idx_t rs)
{
    const idx_t E = c->E;
    const idx_t ts = E * NF * NFP;
    const REAL alpha = c->alpha;
    const int cst = c->affine[e] != 0;
    for (int f = 0; f < NF; ++f) {
        const idx_t fo = (e * NF + f) * NFP;
        const REAL fe = c->factors[e * NF + f], fh = c->factors[(E + e) * NF + f];
        const REAL *s = c->sums + fo;
        const REAL *n0 = c->normals + fo, *n1 = n0 + ts, *n2 = n1 + ts;
        const REAL *lf = c->lift + fo;
        const REAL *ka = c->medium_flux + fo, *kb = ka + ts, *kc = kb + ts, *kd = kc + ts;
        const idx_t cs = c->flux_cs;
        const int off = FACE_OFF[f], sa = FACE_SA[f], sb = FACE_SB[f];
        for (int a = 0; a < NQZ; ++a) {
            for (int b = 0; b < NQ; ++b) {
                const int p = a * NQ + b, q = cst ? 0 : p;
                const idx_t v = off + a * sa + b * sb;
                const REAL x0 = n0[q], x1 = n1[q], x2 = n2[q], L = lf[q];
                const REAL se0 = s[p] * fe, se1 = s[p + ts] * fe, se2 = s[p + 2 * ts] * fe;
                const REAL sh0 = s[p + 3 * ts] * fh, sh1 = s[p + 4 * ts] * fh, sh2 = s[p + 5 * ts] * fh;
                const REAL A0 = ka[p], B0 = alpha * kb[p], C0 = kc[p], D0 = alpha * kd[p];
                const REAL A1 = ka[p + cs], B1 = alpha * kb[p + cs], C1 = kc[p + cs], D1 = alpha * kd[p + cs];
                const REAL A2 = ka[p + 2 * cs], B2 = alpha * kb[p + 2 * cs], C2 = kc[p + 2 * cs];
                const REAL D2 = alpha * kd[p + 2 * cs];
                r[v] += (A0 * sh0 - B0 * (x1 * se2 - x2 * se1)) * L;
                r[v + rs] += (A1 * sh1 - B1 * (x2 * se0 - x0 * se2)) * L;
                r[v + 2 * rs] += (A2 * sh2 - B2 * (x0 * se1 - x1 * se0)) * L;
                r[v + 3 * rs] -= (C0 * se0 + D0 * (x1 * sh2 - x2 * sh1)) * L;
                r[v + 4 * rs] -= (C1 * se1 + D1 * (x2 * sh0 - x0 * sh2)) * L;
                r[v + 5 * rs] -= (C2 * se2 + D2 * (x0 * sh1 - x1 * sh0)) * L;
            }
        }
    }
}

static void setup_ctx(ctx_t *c, const REAL *u, const REAL *sums, const REAL *metrics,
                      const REAL *jacobian, const REAL *normals, const REAL *lift, const REAL *factors,
                      const int8_t *affine, const REAL *D, idx_t E, double eps, double mu,
                      double alpha)
{
    c->u = u; c->sums = sums; c->metrics = metrics; c->jacobian = jacobian; c->normals = normals; c->lift = lift;
    c->factors = factors; c->affine = affine; c->E = E;
    for (int i = 0; i < NQ; ++i)
        for (int l = 0; l < NQ; ++l) {
            c->D[i][l] = D[i * NQ + l];
            c->Dt[l][i] = D[i * NQ + l];
        }
    const double z = sqrt(mu / eps);
    c->inv_eps = (REAL)(1.0 / eps);
    c->inv_mu = (REAL)(1.0 / mu);
    c->ae = (REAL)(alpha / z);
    c->ah = (REAL)(alpha * z);
    c->alpha = (REAL)alpha;
    c->medium_flux = NULL;
    c->flux_cs = 0;
    c->split = 1;
}

/* The conservative half of the split curl on a curved element (reference.py, split_curl):
 * r_E += he / J sum_b d_b(J a^b x H),  r_H -= hm / J sum_b d_b(J a^b x E), line by line:
 * the products at the points of one line of direction b, then their derivative along it. */
static inline void add_conservative_curl(const ctx_t *restrict c, idx_t e, REAL *restrict r, idx_t rs, REAL he,
                                         REAL hm)
{
    const idx_t fs = c->E * NPE;
    const REAL *ue = c->u + e * NPE, *je = c->jacobian + e * NPE, *me = c->metrics + e * NPE;
    static const int STEP[3] = {1, NQ, NQ2};        /* along r, s, t */
    static const int OUTER[3] = {NQ2, NQ2, NQ};     /* the two other directions' strides */
    static const int INNER[3] = {NQ, 1, 1};
    for (int b = 0; b < DIM; ++b) { /* in 2-D no t lines: d/dt of a z-invariant field is 0 */
        const int st = STEP[b];
        const REAL *m0 = me + (b * 3) * fs, *m1 = m0 + fs, *m2 = m1 + fs;
        const int nx = b == 2 ? NQ : NQZ; /* the outer direction: t for lines along r and s */
        for (int x = 0; x < nx; ++x) {
            for (int y = 0; y < NQ; ++y) {
                const int o = x * OUTER[b] + y * INNER[b];
                REAL q[6][NQ];
                UNROLL
                for (int l = 0; l < NQ; ++l) {
                    const int p = o + l * st;
                    const REAL J = je[p], a0 = J * m0[p], a1 = J * m1[p], a2 = J * m2[p];
                    const REAL e0 = ue[p], e1 = ue[p + fs], e2 = ue[p + 2 * fs];
                    const REAL h0 = ue[p + 3 * fs], h1 = ue[p + 4 * fs], h2 = ue[p + 5 * fs];
                    q[0][l] = a1 * h2 - a2 * h1;
                    q[1][l] = a2 * h0 - a0 * h2;
                    q[2][l] = a0 * h1 - a1 * h0;
                    q[3][l] = a1 * e2 - a2 * e1;
                    q[4][l] = a2 * e0 - a0 * e2;
                    q[5][l] = a0 * e1 - a1 * e0;
                }
                for (int i = 0; i < NQ; ++i) {
                    REAL d[6] = {0, 0, 0, 0, 0, 0};
                    UNROLL
                    for (int l = 0; l < NQ; ++l) {
                        const REAL w = c->D[i][l];
                        for (int f = 0; f < 6; ++f) d[f] += w * q[f][l];
                    }
                    const int p = o + i * st;
                    const REAL inv_j = (REAL)1 / je[p];
                    const REAL ke = he * inv_j, km = hm * inv_j;
                    r[p] += ke * d[0];
                    r[p + rs] += ke * d[1];
                    r[p + 2 * rs] += ke * d[2];
                    r[p + 3 * rs] -= km * d[3];
                    r[p + 4 * rs] -= km * d[4];
                    r[p + 5 * rs] -= km * d[5];
                }
            }
        }
    }
}

static inline void element_rhs(const ctx_t *restrict c, idx_t e, REAL *restrict r, idx_t rs)
{
    const idx_t E = c->E;
    const idx_t fs = E * NPE;
    const REAL *ue = c->u + e * NPE;
    const REAL ie = c->inv_eps, im = c->inv_mu;
    const int affine = c->affine[e] != 0;
    const int split = !affine && c->split;
    const idx_t ms = E * NPE; /* stride between metric components */
    const REAL *me = c->metrics + e * NPE;
    REAL mc[3][3];
    if (affine)
        for (int b = 0; b < 3; ++b)
            for (int a = 0; a < 3; ++a) mc[b][a] = me[(b * 3 + a) * ms];

    /* Volume: curl by the 18 reference derivatives and the chain rule, row by row (on a
     * curved element half of it, the split curl's chain-rule half). */
    for (int k = 0; k < NQZ; ++k) {
        for (int j = 0; j < NQ; ++j) {
            REAL g[6][DIM][NQ];
            const int row = (k * NQ + j) * NQ;
            for (int f = 0; f < 6; ++f) {
                const REAL *uf = ue + f * fs;
                REAL gr[NQ], gs[NQ];
                UNROLL
                for (int i = 0; i < NQ; ++i) gr[i] = gs[i] = 0;
#if DIM == 3
                REAL gt[NQ];
                UNROLL
                for (int i = 0; i < NQ; ++i) gt[i] = 0;
#endif
                UNROLL
                for (int l = 0; l < NQ; ++l) {
                    const REAL ul = uf[row + l];
                    const REAL ds = c->D[j][l];
                    const REAL *us = uf + (k * NQ + l) * NQ;
#if DIM == 3
                    const REAL dt = c->D[k][l];
                    const REAL *ut = uf + (l * NQ + j) * NQ;
#endif
                    UNROLL
                    for (int i = 0; i < NQ; ++i) {
                        gr[i] += c->Dt[l][i] * ul;
                        gs[i] += ds * us[i];
#if DIM == 3
                        gt[i] += dt * ut[i];
#endif
                    }
                }
                UNROLL
                for (int i = 0; i < NQ; ++i) {
                    g[f][0][i] = gr[i];
                    g[f][1][i] = gs[i];
#if DIM == 3
                    g[f][2][i] = gt[i];
#endif
                }
            }
            REAL *r0 = r + row, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs, *r4 = r3 + rs, *r5 = r4 + rs;
            if (affine) {
                UNROLL
                for (int i = 0; i < NQ; ++i) {
                    /* d/dx_a of field f = sum_b m[b][a] g[f][b] */
#define PD(f, a) (mc[0][a] * g[f][0][i] + mc[1][a] * g[f][1][i] PD_T(mc, f, a))
                    r0[i] = (PD(5, 1) - PD(4, 2)) * ie;
                    r1[i] = (PD(3, 2) - PD(5, 0)) * ie;
                    r2[i] = (PD(4, 0) - PD(3, 1)) * ie;
                    r3[i] = -(PD(2, 1) - PD(1, 2)) * im;
                    r4[i] = -(PD(0, 2) - PD(2, 0)) * im;
                    r5[i] = -(PD(1, 0) - PD(0, 1)) * im;
#undef PD
                }
            } else {
                /* curved: the chain rule, or the chain-rule half of the split curl (the other below) */
                const REAL hie = split ? (REAL)0.5 * ie : ie, him = split ? (REAL)0.5 * im : im;
                const REAL *mp = me + row;
                UNROLL
                for (int i = 0; i < NQ; ++i) {
                    REAL m[3][3];
                    for (int b = 0; b < 3; ++b)
                        for (int a = 0; a < 3; ++a) m[b][a] = mp[(b * 3 + a) * ms + i];
#define PD(f, a) (m[0][a] * g[f][0][i] + m[1][a] * g[f][1][i] PD_T(m, f, a))
                    r0[i] = (PD(5, 1) - PD(4, 2)) * hie;
                    r1[i] = (PD(3, 2) - PD(5, 0)) * hie;
                    r2[i] = (PD(4, 0) - PD(3, 1)) * hie;
                    r3[i] = -(PD(2, 1) - PD(1, 2)) * him;
                    r4[i] = -(PD(0, 2) - PD(2, 0)) * him;
                    r5[i] = -(PD(1, 0) - PD(0, 1)) * him;
#undef PD
                }
            }
        }
    }
    if (split) add_conservative_curl(c, e, r, rs, (REAL)0.5 * ie, (REAL)0.5 * im);

    if (c->medium_flux) {
        element_flux_medium(c, e, r, rs);
        return;
    }
    /* Surface: r += lift * F at the face points (boundary ghost factors on the sums). */
    const idx_t ts = E * NF * NFP;
    const REAL ae = c->ae, ah = c->ah, half = (REAL)0.5;
    for (int f = 0; f < NF; ++f) {
        const idx_t fo = (e * NF + f) * NFP;
        const REAL fe = c->factors[e * NF + f], fh = c->factors[(E + e) * NF + f];
        const REAL *s = c->sums + fo;
        const REAL *n0 = c->normals + fo, *n1 = n0 + ts, *n2 = n1 + ts;
        const REAL *lf = c->lift + fo;
        const int off = FACE_OFF[f], sa = FACE_SA[f], sb = FACE_SB[f];
        const int cst = affine; /* normals and lift constant on an affine element's face */
        for (int a = 0; a < NQZ; ++a) {
            UNROLL
            for (int b = 0; b < NQ; ++b) {
                const int p = a * NQ + b, q = cst ? 0 : p;
                const idx_t v = off + a * sa + b * sb;
                const REAL x0 = n0[q], x1 = n1[q], x2 = n2[q];
                const REAL le = lf[q] * ie, lh = lf[q] * im;
                const REAL se0 = s[p] * fe, se1 = s[p + ts] * fe, se2 = s[p + 2 * ts] * fe;
                const REAL sh0 = s[p + 3 * ts] * fh, sh1 = s[p + 4 * ts] * fh, sh2 = s[p + 5 * ts] * fh;
                r[v] += half * (sh0 - ae * (x1 * se2 - x2 * se1)) * le;
                r[v + rs] += half * (sh1 - ae * (x2 * se0 - x0 * se2)) * le;
                r[v + 2 * rs] += half * (sh2 - ae * (x0 * se1 - x1 * se0)) * le;
                r[v + 3 * rs] += half * (-se0 - ah * (x1 * sh2 - x2 * sh1)) * lh;
                r[v + 4 * rs] += half * (-se1 - ah * (x2 * sh0 - x0 * sh2)) * lh;
                r[v + 5 * rs] += half * (-se2 - ah * (x0 * sh1 - x1 * sh0)) * lh;
            }
        }
    }
}

/* ---- rhs: out = L(u) on elements [first, stop) of E -------------------------------------- */
void maxwell_rhs(const REAL *u, const REAL *sums, const REAL *metrics, const REAL *jacobian, const REAL *normals,
                 const REAL *lift, const REAL *factors, const int8_t *affine, const REAL *D,
                 REAL *out, idx_t E, idx_t first, idx_t stop, double eps, double mu, double alpha, int split)
{
    ctx_t c;
    setup_ctx(&c, u, sums, metrics, jacobian, normals, lift, factors, affine, D, E, eps, mu, alpha);
    c.split = split;
    OMP_PARALLEL
    {
        OMP_FOR
        for (idx_t e = first; e < stop; ++e) element_rhs(&c, e, out + e * NPE, E * NPE);
    }
}

/* ---- rhs in a medium given per point (materials.py) on elements [first, stop) -----------
 * out = (curl H + F_E) / eps - sigma / eps E, (-curl E + F_H) / mu, with 1/eps, 1/mu,
 * sigma/eps per point (sigma_eps may be NULL: no conductor) and the face coefficients
 * flux (4, E, 6, n, n). A diagonal eps, mu (anisotropy.py): cs = E n^3 the component stride of
 * inv_eps, inv_mu, sigma_eps (3, E, n, n, n) and flux (3, 4, E, 6, n, n); cs = 0 otherwise. */
void maxwell_rhs_medium(const REAL *u, const REAL *sums, const REAL *metrics, const REAL *jacobian,
                        const REAL *normals,
                        const REAL *lift, const REAL *factors, const int8_t *affine, const REAL *D,
                        REAL *out, const REAL *inv_eps, const REAL *inv_mu, const REAL *sigma_eps,
                        const REAL *flux, idx_t E, idx_t first, idx_t stop, double alpha, int split, idx_t cs)
{
    ctx_t c;
    setup_ctx(&c, u, sums, metrics, jacobian, normals, lift, factors, affine, D, E, 1.0, 1.0, alpha);
    c.split = split;
    c.medium_flux = flux;
    c.flux_cs = cs ? 4 * E * NF * NFP : 0;
    const idx_t fs = E * NPE;
    OMP_PARALLEL
    {
        OMP_FOR
        for (idx_t e = first; e < stop; ++e) {
            REAL *r = out + e * NPE;
            element_rhs(&c, e, r, fs);
            const idx_t o = e * NPE;
            for (int p = 0; p < NPE; ++p) {
                for (int k = 0; k < 3; ++k) {
                    const REAL se = sigma_eps ? sigma_eps[k * cs + o + p] : (REAL)0;
                    r[k * fs + p] = r[k * fs + p] * inv_eps[k * cs + o + p] - se * u[k * fs + o + p];
                }
                for (int k = 3; k < 6; ++k) r[k * fs + p] *= inv_mu[(k - 3) * cs + o + p];
            }
        }
    }
}

/* ---- fused low-storage RK stage -------------------------------------------------------
 * residual = a * residual + dt * L(u); u += b * residual, element by element over
 * [first, stop) of E (the rhs of one element lives in a per-thread buffer).  a == 0
 * discards the old residual unread.
 */
int maxwell_stage(REAL *u, REAL *residual, const REAL *sums, const REAL *metrics,
                  const REAL *jacobian, const REAL *normals, const REAL *lift, const REAL *factors,
                  const int8_t *affine, const REAL *D, idx_t E, idx_t first, idx_t stop,
                  double eps, double mu, double alpha, double a, double b, double dt, int split)
{
    ctx_t c;
    setup_ctx(&c, u, sums, metrics, jacobian, normals, lift, factors, affine, D, E, eps, mu, alpha);
    c.split = split;
    const REAL ra = (REAL)a, rb = (REAL)b, rdt = (REAL)dt;
    const idx_t fs = E * NPE;
    int failed = 0;
    OMP_PARALLEL
    {
        REAL *buf = NULL;
        if (posix_memalign((void **)&buf, 64, 6 * NPE * sizeof(REAL)) != 0) buf = NULL;
        if (!buf) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
        OMP_FOR
        for (idx_t e = first; e < stop; ++e) {
            if (!buf) continue;
            element_rhs(&c, e, buf, NPE);
            for (int f = 0; f < 6; ++f) {
                REAL *uf = u + f * fs + e * NPE, *rf = residual + f * fs + e * NPE;
                const REAL *bf = buf + f * NPE;
                if (ra == 0) {
                    for (int p = 0; p < NPE; ++p) {
                        const REAL res = rdt * bf[p];
                        rf[p] = res;
                        uf[p] += rb * res;
                    }
                } else {
                    for (int p = 0; p < NPE; ++p) {
                        const REAL res = ra * rf[p] + rdt * bf[p];
                        rf[p] = res;
                        uf[p] += rb * res;
                    }
                }
            }
        }
        free(buf);
    }
    return failed; /* 1: a per-thread buffer could not be allocated */
}

/* ---- fused low-storage RK stage in a medium given per point (materials.py) --------------
 * maxwell_stage with maxwell_rhs_medium's L(u) (1/eps, 1/mu, sigma/eps per point; sigma_eps
 * may be NULL): residual = a * residual + dt * L(u); u += b * residual, element by element.
 * cs: as for maxwell_rhs_medium (a diagonal eps, mu). */
int maxwell_stage_medium(REAL *u, REAL *residual, const REAL *sums, const REAL *metrics,
                         const REAL *jacobian, const REAL *normals, const REAL *lift, const REAL *factors,
                         const int8_t *affine, const REAL *D, const REAL *inv_eps, const REAL *inv_mu,
                         const REAL *sigma_eps, const REAL *flux, idx_t E, idx_t first, idx_t stop,
                         double alpha, double a, double b, double dt, int split, idx_t cs)
{
    ctx_t c;
    setup_ctx(&c, u, sums, metrics, jacobian, normals, lift, factors, affine, D, E, 1.0, 1.0, alpha);
    c.split = split;
    c.medium_flux = flux;
    c.flux_cs = cs ? 4 * E * NF * NFP : 0;
    const REAL ra = (REAL)a, rb = (REAL)b, rdt = (REAL)dt;
    const idx_t fs = E * NPE;
    int failed = 0;
    OMP_PARALLEL
    {
        REAL *buf = NULL;
        if (posix_memalign((void **)&buf, 64, 6 * NPE * sizeof(REAL)) != 0) buf = NULL;
        if (!buf) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
        OMP_FOR
        for (idx_t e = first; e < stop; ++e) {
            if (!buf) continue;
            element_rhs(&c, e, buf, NPE);
            const idx_t o = e * NPE;
            for (int f = 0; f < 6; ++f) {
                REAL *uf = u + f * fs + o, *rf = residual + f * fs + o;
                const REAL *bf = buf + f * NPE, *scale = (f < 3 ? inv_eps : inv_mu) + (f % 3) * cs + o;
                const REAL *se = (f < 3 && sigma_eps) ? sigma_eps + f * cs + o : NULL;
                for (int p = 0; p < NPE; ++p) {
                    const REAL du = se ? bf[p] * scale[p] - se[p] * uf[p] : bf[p] * scale[p];
                    const REAL res = (ra == 0 ? (REAL)0 : ra * rf[p]) + rdt * du;
                    rf[p] = res;
                    uf[p] += rb * res;
                }
            }
        }
        free(buf);
    }
    return failed; /* 1: a per-thread buffer could not be allocated */
}
