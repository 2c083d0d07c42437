/* Compiled CPU kernel of Maxwell's over-integrated weak form with the weight-adjusted mass
 * (wrapped by lobatto.systems.maxwell.galerkin_cpu; galerkin.py's WeightAdjustedOperator.rhs
 * defines what it computes):
 *
 *     out = M_W^-1 (B(., H) / eps + S_E,  -B(., E) / mu + S_H),   M_W^-1 = M^-1 M_{1/J} M^-1.
 *
 * Specialised at compile time on the GLL points NP = N + 1 and the Gauss points NG = Q per
 * direction and the floating-point type:
 *     cc -O3 -march=native -shared -fPIC -fopenmp -DNP=8 -DNG=14 -DREAL=double galerkin.c
 * so every contraction has constant trip counts.
 *
 * Layouts (C order, axes [k, j, i] with i fastest; those of WeightAdjustedOperator):
 *     u, out          : (6, E, NP, NP, NP)      Ex Ey Ez Hx Hy Hz
 *     sums            : (6, E, 6, NP, NP)       own + neighbour face values (the exchange's)
 *     factors         : (2, E, 6)               boundary factors of E and H (1 on interior faces)
 *     v               : (NG, NP)                GLL nodal values -> Gauss points
 *     cof             : (3, 3, E, NG, NG, NG)   w_q (J a^b)_a at [b, a]
 *     ijw             : (E, NG, NG, NG)         w_q / J
 *     inverse_mass    : (NP, NP)                the exact 1D mass's inverse
 *     D               : (NP, NP)                D[i, l] = h_l'(x_i)
 *     normals         : (3, E, 6, NG, NG)       unit outward normals at the face Gauss points
 *     face_weights    : (E, 6, NG, NG)          w sJ
 * Face f's points [a, b] are the volume slice with the normal index fixed ([k, j] on faces
 * 0/1, [k, i] on 2/3, [j, i] on 4/5), see mesh/topology.py.
 *
 * Per element, by sum factorisation, one Gauss plane (fixed k) at a time:
 *  1. volume: the 18 reference derivatives at the plane's Gauss points ((V D) along the
 *     derivative's axis, V along the others; the k contraction first), the crossed products
 *     with w J a^b, and V^T back along i, j, accumulated into the GLL load along k;
 *  2. faces: the jumps interpolated to Q x Q points, the upwind/central flux times w sJ, V^T
 *     back, added at the face's GLL points;
 *  3. mass: with A = V M^-1, M_W^-1 load = A^T (w/J . A load) (A along each axis), again plane
 *     by plane.
 * Elements are independent: an OpenMP `parallel for` over elements (static schedule), the
 * scratch in one per-thread buffer.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef NP
#error "compile with -DNP=<GLL points per direction>"
#endif
#ifndef NG
#error "compile with -DNG=<Gauss points per direction>"
#endif
#ifndef REAL
#define REAL double
#endif

#define NP2 (NP * NP)
#define NP3 (NP * NP * NP)
#define NG2 (NG * NG)
#define NG3 (NG * NG * NG)

typedef int64_t idx_t;

/* ---- introspection / threads (jit/c.py's set_num_threads calls these) ------------------- */
int lobatto_np(void) { return NP; }
int lobatto_ng(void) { return NG; }
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

/* Volume index of face point (a, b) of face f: off[f] + a * sa[f] + b * sb[f]. */
static const int FACE_OFF[6] = {0, NP - 1, 0, (NP - 1) * NP, 0, (NP - 1) * NP2};
static const int FACE_SA[6] = {NP2, NP2, NP2, NP2, NP, NP};
static const int FACE_SB[6] = {NP, NP, 1, 1, 1, 1};

typedef struct {
    REAL V[NG][NP], Vt[NP][NG];   /* interpolation to the Gauss points and its transpose */
    REAL VD[NG][NP], VDt[NP][NG]; /* derivative at the Gauss points: V D */
    REAL A[NG][NP], At[NP][NG];   /* V M^-1 */
    REAL inv_eps, inv_mu, ae, ah; /* 1/eps, 1/mu, alpha / Z, alpha Z */
} matrices_t;

/* Per-thread scratch of one element. */
typedef struct {
    REAL load[6][NP3]; /* M_W dU/dt at the GLL points */
    REAL acc[6][NP3];  /* M_W^-1 load */
    REAL d[6][3][NG2]; /* reference derivatives of the six fields on one Gauss plane */
    REAL o[6][NG2];    /* the crossed products on that plane */
    REAL t[6][NG][NP]; /* partial contractions */
    REAL zk[6][2][NP2];
    REAL zj[6][3][NG][NP];
} scratch_t;

/* ---- 1. the volume load B on one element ----------------------------------------------- */
static inline void volume_load(const matrices_t *restrict m, scratch_t *restrict s, const REAL *restrict u,
                               const REAL *restrict cof, idx_t E, idx_t e)
{
    const idx_t fs = E * NP3, cs = E * NG3;
    memset(s->load, 0, sizeof(s->load));
    for (int kq = 0; kq < NG; ++kq) {
        for (int f = 0; f < 6; ++f) {
            const REAL *uf = u + f * fs + e * NP3;
            REAL *zv = s->zk[f][0], *zd = s->zk[f][1];
            for (int p = 0; p < NP2; ++p) zv[p] = zd[p] = 0;
            for (int kp = 0; kp < NP; ++kp) {
                const REAL a = m->V[kq][kp], b = m->VD[kq][kp];
                const REAL *up = uf + kp * NP2;
                for (int p = 0; p < NP2; ++p) {
                    zv[p] += a * up[p];
                    zd[p] += b * up[p];
                }
            }
            /* along j: zj0 = V zv, zj1 = VD zv, zj2 = V zd */
            for (int jq = 0; jq < NG; ++jq) {
                REAL *r0 = s->zj[f][0][jq], *r1 = s->zj[f][1][jq], *r2 = s->zj[f][2][jq];
                for (int i = 0; i < NP; ++i) r0[i] = r1[i] = r2[i] = 0;
                for (int jp = 0; jp < NP; ++jp) {
                    const REAL a = m->V[jq][jp], b = m->VD[jq][jp];
                    const REAL *x = zv + jp * NP, *y = zd + jp * NP;
                    for (int i = 0; i < NP; ++i) {
                        r0[i] += a * x[i];
                        r1[i] += b * x[i];
                        r2[i] += a * y[i];
                    }
                }
            }
            /* along i: d_r = (VD)_i zj0, d_s = V_i zj1, d_t = V_i zj2 */
            for (int jq = 0; jq < NG; ++jq) {
                REAL *dr = s->d[f][0] + jq * NG, *ds = s->d[f][1] + jq * NG, *dt = s->d[f][2] + jq * NG;
                const REAL *x0 = s->zj[f][0][jq], *x1 = s->zj[f][1][jq], *x2 = s->zj[f][2][jq];
                for (int iq = 0; iq < NG; ++iq) dr[iq] = ds[iq] = dt[iq] = 0;
                for (int ip = 0; ip < NP; ++ip) {
                    const REAL a = x0[ip], b = x1[ip], c = x2[ip];
                    const REAL *vd = m->VDt[ip], *v = m->Vt[ip];
                    for (int iq = 0; iq < NG; ++iq) {
                        dr[iq] += vd[iq] * a;
                        ds[iq] += v[iq] * b;
                        dt[iq] += v[iq] * c;
                    }
                }
            }
        }
        /* the crossed products sum_b w J a^b x d_b f at the plane's points */
        const REAL *w = cof + e * NG3 + kq * NG2;
        const REAL ie = m->inv_eps, im = m->inv_mu;
        for (int p = 0; p < NG2; ++p) {
            REAL oe0 = 0, oe1 = 0, oe2 = 0, oh0 = 0, oh1 = 0, oh2 = 0;
            for (int b = 0; b < 3; ++b) {
                const REAL w0 = w[(b * 3 + 0) * cs + p], w1 = w[(b * 3 + 1) * cs + p], w2 = w[(b * 3 + 2) * cs + p];
                const REAL e0 = s->d[0][b][p], e1 = s->d[1][b][p], e2 = s->d[2][b][p];
                const REAL h0 = s->d[3][b][p], h1 = s->d[4][b][p], h2 = s->d[5][b][p];
                oe0 += w1 * h2 - w2 * h1;
                oe1 += w2 * h0 - w0 * h2;
                oe2 += w0 * h1 - w1 * h0;
                oh0 += w1 * e2 - w2 * e1;
                oh1 += w2 * e0 - w0 * e2;
                oh2 += w0 * e1 - w1 * e0;
            }
            s->o[0][p] = oe0 * ie;
            s->o[1][p] = oe1 * ie;
            s->o[2][p] = oe2 * ie;
            s->o[3][p] = -oh0 * im;
            s->o[4][p] = -oh1 * im;
            s->o[5][p] = -oh2 * im;
        }
        /* V^T along i, then j, then into the load along k */
        for (int c = 0; c < 6; ++c) {
            for (int jq = 0; jq < NG; ++jq) {
                REAL *t = s->t[c][jq];
                const REAL *x = s->o[c] + jq * NG;
                for (int ip = 0; ip < NP; ++ip) t[ip] = 0;
                for (int iq = 0; iq < NG; ++iq) {
                    const REAL a = x[iq];
                    const REAL *v = m->V[iq];
                    for (int ip = 0; ip < NP; ++ip) t[ip] += a * v[ip];
                }
            }
            REAL pl[NP2];
            for (int p = 0; p < NP2; ++p) pl[p] = 0;
            for (int jq = 0; jq < NG; ++jq) {
                const REAL *t = s->t[c][jq];
                for (int jp = 0; jp < NP; ++jp) {
                    const REAL a = m->V[jq][jp];
                    for (int ip = 0; ip < NP; ++ip) pl[jp * NP + ip] += a * t[ip];
                }
            }
            REAL *l = s->load[c];
            for (int kp = 0; kp < NP; ++kp) {
                const REAL a = m->V[kq][kp];
                REAL *lk = l + kp * NP2;
                for (int p = 0; p < NP2; ++p) lk[p] += a * pl[p];
            }
        }
    }
}

/* ---- 2. the face load S at the GLL face points ------------------------------------------ */
static inline void face_load(const matrices_t *restrict m, scratch_t *restrict s, const REAL *restrict u,
                             const REAL *restrict sums, const REAL *restrict factors,
                             const REAL *restrict normals, const REAL *restrict face_weights, idx_t E, idx_t e)
{
    const idx_t fs = E * NP3, ts = E * 6 * NP2, ns = E * 6 * NG2;
    for (int f = 0; f < 6; ++f) {
        const REAL fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
        const int interior = fe == (REAL)1 && fh == (REAL)1;
        const int off = FACE_OFF[f], sa = FACE_SA[f], sb = FACE_SB[f];
        const REAL *sm = sums + (e * 6 + f) * NP2;
        REAL jump[6][NP2];
        for (int c = 0; c < 6; ++c) {
            const REAL *uc = u + c * fs + e * NP3 + off;
            const REAL *sc = sm + c * ts;
            const REAL g = c < 3 ? fe : fh;
            for (int a = 0; a < NP; ++a)
                for (int b = 0; b < NP; ++b) {
                    const REAL own = uc[a * sa + b * sb];
                    jump[c][a * NP + b] = interior ? 2 * own - sc[a * NP + b] : g * own;
                }
        }
        /* to the Q x Q points: V along b, then along a */
        REAL (*jq)[NG2] = (REAL (*)[NG2])s->d; /* 6 x NG2 of the scratch, free between the volume planes */
        for (int c = 0; c < 6; ++c) {
            REAL (*t)[NP] = s->t[c]; /* t[bq][ap] */
            for (int bq = 0; bq < NG; ++bq)
                for (int ap = 0; ap < NP; ++ap) {
                    REAL x = 0;
                    for (int bp = 0; bp < NP; ++bp) x += m->V[bq][bp] * jump[c][ap * NP + bp];
                    t[bq][ap] = x;
                }
            for (int aq = 0; aq < NG; ++aq) {
                REAL *r = jq[c] + aq * NG;
                for (int bq = 0; bq < NG; ++bq) {
                    REAL x = 0;
                    for (int ap = 0; ap < NP; ++ap) x += m->V[aq][ap] * t[bq][ap];
                    r[bq] = x;
                }
            }
        }
        /* the flux (reference.add_surface_terms with sums = -n x jump) times w sJ */
        const REAL *n0 = normals + (e * 6 + f) * NG2, *n1 = n0 + ns, *n2 = n1 + ns;
        const REAL *fw = face_weights + (e * 6 + f) * NG2;
        const REAL ae = m->ae, ah = m->ah, he = (REAL)0.5 * m->inv_eps, hm = (REAL)0.5 * m->inv_mu;
        for (int p = 0; p < NG2; ++p) {
            const REAL x0 = n0[p], x1 = n1[p], x2 = n2[p];
            const REAL je0 = jq[0][p], je1 = jq[1][p], je2 = jq[2][p];
            const REAL jh0 = jq[3][p], jh1 = jq[4][p], jh2 = jq[5][p];
            const REAL se0 = -(x1 * je2 - x2 * je1), se1 = -(x2 * je0 - x0 * je2), se2 = -(x0 * je1 - x1 * je0);
            const REAL sh0 = -(x1 * jh2 - x2 * jh1), sh1 = -(x2 * jh0 - x0 * jh2), sh2 = -(x0 * jh1 - x1 * jh0);
            const REAL we = he * fw[p], wh = hm * fw[p];
            s->o[0][p] = (sh0 - ae * (x1 * se2 - x2 * se1)) * we;
            s->o[1][p] = (sh1 - ae * (x2 * se0 - x0 * se2)) * we;
            s->o[2][p] = (sh2 - ae * (x0 * se1 - x1 * se0)) * we;
            s->o[3][p] = (-se0 - ah * (x1 * sh2 - x2 * sh1)) * wh;
            s->o[4][p] = (-se1 - ah * (x2 * sh0 - x0 * sh2)) * wh;
            s->o[5][p] = (-se2 - ah * (x0 * sh1 - x1 * sh0)) * wh;
        }
        /* V^T back along b, then a, added at the face's GLL points */
        for (int c = 0; c < 6; ++c) {
            REAL (*t)[NP] = s->t[c]; /* t[aq][bp] */
            for (int aq = 0; aq < NG; ++aq) {
                const REAL *x = s->o[c] + aq * NG;
                for (int bp = 0; bp < NP; ++bp) t[aq][bp] = 0;
                for (int bq = 0; bq < NG; ++bq) {
                    const REAL a = x[bq];
                    for (int bp = 0; bp < NP; ++bp) t[aq][bp] += a * m->V[bq][bp];
                }
            }
            REAL *l = s->load[c] + off;
            for (int ap = 0; ap < NP; ++ap) {
                REAL r[NP];
                for (int bp = 0; bp < NP; ++bp) r[bp] = 0;
                for (int aq = 0; aq < NG; ++aq) {
                    const REAL a = m->V[aq][ap];
                    for (int bp = 0; bp < NP; ++bp) r[bp] += a * t[aq][bp];
                }
                for (int bp = 0; bp < NP; ++bp) l[ap * sa + bp * sb] += r[bp];
            }
        }
    }
}

/* ---- 3. acc = M_W^-1 load = A^T (w/J . A load), A = V M^-1 along each axis --------------- */
static inline void inverse_mass(const matrices_t *restrict m, scratch_t *restrict s, const REAL *restrict ijw,
                                idx_t e)
{
    memset(s->acc, 0, sizeof(s->acc));
    for (int kq = 0; kq < NG; ++kq) {
        const REAL *wj = ijw + e * NG3 + kq * NG2;
        for (int c = 0; c < 6; ++c) {
            REAL y[NP2];
            for (int p = 0; p < NP2; ++p) y[p] = 0;
            const REAL *l = s->load[c];
            for (int kp = 0; kp < NP; ++kp) {
                const REAL a = m->A[kq][kp];
                for (int p = 0; p < NP2; ++p) y[p] += a * l[kp * NP2 + p];
            }
            REAL (*t)[NP] = s->t[c]; /* t[jq][i] */
            for (int jq = 0; jq < NG; ++jq) {
                for (int i = 0; i < NP; ++i) t[jq][i] = 0;
                for (int jp = 0; jp < NP; ++jp) {
                    const REAL a = m->A[jq][jp];
                    for (int i = 0; i < NP; ++i) t[jq][i] += a * y[jp * NP + i];
                }
            }
            REAL *g = s->o[c];
            for (int jq = 0; jq < NG; ++jq) {
                REAL *r = g + jq * NG;
                for (int iq = 0; iq < NG; ++iq) r[iq] = 0;
                for (int ip = 0; ip < NP; ++ip) {
                    const REAL a = t[jq][ip];
                    const REAL *at = m->At[ip];
                    for (int iq = 0; iq < NG; ++iq) r[iq] += at[iq] * a;
                }
                for (int iq = 0; iq < NG; ++iq) r[iq] *= wj[jq * NG + iq];
            }
            /* back: A^T along i, j, then into acc along k */
            for (int jq = 0; jq < NG; ++jq) {
                const REAL *x = g + jq * NG;
                for (int ip = 0; ip < NP; ++ip) t[jq][ip] = 0;
                for (int iq = 0; iq < NG; ++iq) {
                    const REAL a = x[iq];
                    const REAL *ar = m->A[iq];
                    for (int ip = 0; ip < NP; ++ip) t[jq][ip] += a * ar[ip];
                }
            }
            for (int p = 0; p < NP2; ++p) y[p] = 0;
            for (int jq = 0; jq < NG; ++jq)
                for (int jp = 0; jp < NP; ++jp) {
                    const REAL a = m->A[jq][jp];
                    for (int ip = 0; ip < NP; ++ip) y[jp * NP + ip] += a * t[jq][ip];
                }
            REAL *r = s->acc[c];
            for (int kp = 0; kp < NP; ++kp) {
                const REAL a = m->A[kq][kp];
                for (int p = 0; p < NP2; ++p) r[kp * NP2 + p] += a * y[p];
            }
        }
    }
}

/* ---- rhs: out = M_W^-1 (B + S) on elements [first, stop) of E ---------------------------
 * Returns 1 when a per-thread scratch buffer could not be allocated (out is then incomplete). */
int galerkin_rhs(const REAL *u, const REAL *sums, const REAL *factors, const REAL *v, const REAL *cof,
                 const REAL *ijw, const REAL *inverse_mass_1d, const REAL *D, const REAL *normals,
                 const REAL *face_weights, REAL *out, idx_t E, idx_t first, idx_t stop, double eps, double mu,
                 double alpha)
{
    matrices_t m;
    /* the products V D and V M^-1 in double, then rounded once */
    for (int q = 0; q < NG; ++q)
        for (int p = 0; p < NP; ++p) {
            double vd = 0, a = 0;
            for (int l = 0; l < NP; ++l) {
                vd += (double)v[q * NP + l] * (double)D[l * NP + p];
                a += (double)v[q * NP + l] * (double)inverse_mass_1d[l * NP + p];
            }
            m.V[q][p] = m.Vt[p][q] = v[q * NP + p];
            m.VD[q][p] = m.VDt[p][q] = (REAL)vd;
            m.A[q][p] = m.At[p][q] = (REAL)a;
        }
    const double z = sqrt(mu / eps);
    m.inv_eps = (REAL)(1.0 / eps);
    m.inv_mu = (REAL)(1.0 / mu);
    m.ae = (REAL)(alpha / z);
    m.ah = (REAL)(alpha * z);
    const idx_t fs = E * NP3;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        scratch_t *s = NULL;
        if (posix_memalign((void **)&s, 64, sizeof(scratch_t)) != 0) s = NULL;
        if (!s) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (idx_t e = first; e < stop; ++e) {
            if (!s) continue;
            volume_load(&m, s, u, cof, E, e);
            face_load(&m, s, u, sums, factors, normals, face_weights, E, e);
            inverse_mass(&m, s, ijw, e);
            for (int c = 0; c < 6; ++c) memcpy(out + c * fs + e * NP3, s->acc[c], sizeof(s->acc[c]));
        }
        free(s);
    }
    return failed;
}
