/* Compiled CPU kernels of Maxwell's stage terms (wrapped by lobatto.systems.maxwell.terms_cpu):
 * the PML's auxiliary fields (pml.py), the dispersive poles (dispersive.py), the TF/SF surface
 * correction (tfsf.py), and the generic finish of a stage term (terms.py). The array code of
 * those modules is the reference; these compute the same, point by point, in one pass.
 *
 * Specialised on NQ (GLL points per direction), DIM (2 or 3: NPE = NQ^DIM points per
 * element, a 2-D element's k axis has one point) and REAL (double or float), as maxwell.c.
 * Layouts (C order): u, residual (6, E, NPE); a term's arrays over its m elements (compact,
 * in the order of its element ids ``elements`` (m,)): rate (6, m, NPE), aux, aux_residual,
 * aux_rate (A, m, NPE).
 *
 * Two ways through a 2N-storage stage (residual = a residual + dt L(u); u += b residual):
 *   prepare (before the stage kernel): S -> rate, R -> aux_rate from the stage's input;
 *     then term_finish (after it): residual += dt S; u += b dt S;
 *     aux_residual = a aux_residual + dt R; aux += b aux_residual.
 *   fold (a != 0, before the kernel): residual += (dt / a) S and the aux stage, in one pass;
 *     the kernel's a * residual then carries dt S, and nothing runs after it.
 */
#include <stddef.h>
#include <stdint.h>
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

#define NQ2 (NQ * NQ)
#define NQZ (DIM == 3 ? NQ : 1) /* points along t: one on a 2-D mesh */
#define NPE (NQZ * NQ2)         /* points per element */
#define NFP (NQZ * NQ)          /* points per face */

#ifdef _OPENMP
#define OMP_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define OMP_PARALLEL_FOR
#endif

typedef int64_t idx_t;

int lobatto_nq(void) { return NQ; }
int lobatto_dim(void) { return DIM; }
int lobatto_real_size(void) { return (int)sizeof(REAL); }

/* ---- generic finish ---------------------------------------------------------------------
 * residual[f, elements] += dt S_f; u[f, elements] += b dt S_f for f < fields (6: E and H,
 * 3: E only, 0: none); aux_residual = a aux_residual + dt aux_rate; aux += b aux_residual
 * for the A auxiliary fields (A = 0: none; the three may then be NULL). */
void term_finish(REAL *u, REAL *residual, const REAL *rate, REAL *aux, REAL *aux_residual,
                 const REAL *aux_rate, const idx_t *elements, idx_t m, idx_t E, int fields, int A,
                 double a, double b, double dt)
{
    const REAL ra = (REAL)a, rb = (REAL)b, rdt = (REAL)dt;
    const idx_t fs = E * NPE, ms = m * NPE;
    OMP_PARALLEL_FOR
    for (idx_t i = 0; i < m; ++i) {
        const idx_t g = elements[i] * NPE, o = i * NPE;
        for (int f = 0; f < fields; ++f) {
            REAL *uf = u + f * fs + g, *rf = residual + f * fs + g;
            const REAL *sf = rate + f * ms + o;
            for (int p = 0; p < NPE; ++p) {
                const REAL s = rdt * sf[p];
                rf[p] += s;
                uf[p] += rb * s;
            }
        }
        for (int k = 0; k < A; ++k) {
            REAL *q = aux + k * ms + o, *qr = aux_residual + k * ms + o;
            const REAL *r = aux_rate + k * ms + o;
            for (int p = 0; p < NPE; ++p) {
                const REAL res = ra * qr[p] + rdt * r[p];
                qr[p] = res;
                q[p] += rb * res;
            }
        }
    }
}

/* ---- PML (pml.py) -----------------------------------------------------------------------
 * Per component c of E and of H (w0 = the field), sigma (3, m, NPE) on the layer's points:
 *   R1 = -sigma_c w0 - (alpha + sigma_c) q1          w1 = w0 + q1
 *   R2 = sigma_{c+1} w1 - alpha q2                   w2 = w1 + q2
 *   R3 = sigma_{c+2} w2 - alpha q3                   S = -(R1 + R2 + R3)
 * aux index of q_k (k = 0, 1, 2) of field f (0..5): 6 k + f.
 * active (m,): bit d set where sigma_d is non-zero somewhere on the element. A factor whose
 * sigma is zero on the whole element is skipped: its q starts at 0 and stays 0 (R = 0; the
 * prepare pass writes that 0). A face layer's element reads 6 of the 18 auxiliary fields.
 * fold == 0: S -> rate, R -> aux_rate (aux unchanged).
 * fold == 1: residual += (dt / a) S; aux_residual = a aux_residual + dt R; aux += b aux_residual. */
void pml_stage(const REAL *u, REAL *residual, REAL *rate, REAL *aux, REAL *aux_residual, REAL *aux_rate,
               const REAL *sigma, const int8_t *active, const idx_t *elements, idx_t m, idx_t E, double alpha,
               int fold, double a, double b, double dt)
{
    const REAL ra = (REAL)a, rb = (REAL)b, rdt = (REAL)dt, ral = (REAL)alpha;
    const REAL over_a = fold ? (REAL)(dt / a) : (REAL)0;
    const idx_t fs = E * NPE, ms = m * NPE;
    OMP_PARALLEL_FOR
    for (idx_t i = 0; i < m; ++i) {
        const idx_t g = elements[i] * NPE, o = i * NPE;
        REAL wk[NPE], sum[NPE];
        for (int f = 0; f < 6; ++f) {
            const REAL *w = u + f * fs + g;
            for (int p = 0; p < NPE; ++p) {
                wk[p] = w[p];
                sum[p] = 0;
            }
            for (int k = 0; k < 3; ++k) {
                const int d = (f % 3 + k) % 3; /* factor k's direction */
                if (!((active[i] >> d) & 1)) {
                    if (!fold) { /* R = 0 (kept so even after another path wrote aux_rate) */
                        REAL *r = aux_rate + (6 * k + f) * ms + o;
                        for (int p = 0; p < NPE; ++p) r[p] = 0;
                    }
                    continue;
                }
                const REAL *sd = sigma + d * ms + o;
                const REAL sign = k == 0 ? (REAL)-1 : (REAL)1, shift = k == 0 ? (REAL)1 : (REAL)0;
                const idx_t at = (6 * k + f) * ms + o;
                REAL *q = aux + at;
                if (fold) {
                    REAL *e = aux_residual + at;
                    for (int p = 0; p < NPE; ++p) {
                        const REAL x = sign * sd[p] * wk[p] - (ral + shift * sd[p]) * q[p];
                        wk[p] += q[p];
                        sum[p] += x;
                        const REAL y = ra * e[p] + rdt * x;
                        e[p] = y;
                        q[p] += rb * y;
                    }
                } else {
                    REAL *r = aux_rate + at;
                    for (int p = 0; p < NPE; ++p) {
                        const REAL x = sign * sd[p] * wk[p] - (ral + shift * sd[p]) * q[p];
                        wk[p] += q[p];
                        sum[p] += x;
                        r[p] = x;
                    }
                }
            }
            if (fold) {
                REAL *rf = residual + f * fs + g;
                for (int p = 0; p < NPE; ++p) rf[p] -= over_a * sum[p];
            } else {
                REAL *sf = rate + f * ms + o;
                for (int p = 0; p < NPE; ++p) sf[p] = -sum[p];
            }
        }
    }
}

/* ---- dispersive poles (dispersive.py) ---------------------------------------------------
 * P poles: model[j] (0 drude, 1 lorentz, 2 debye), offset[j] (its first aux field) and
 * coefficients c0, c1, c2 per pole:
 *   drude    (omega_p^2, gamma, -)           R_J = c0 d - c1 J,                current J
 *   lorentz  (delta omega0^2, omega0^2, gamma)  R_P = J, R_J = c0 d - c1 P - c2 J,  current J
 *   debye    (delta, 1 / tau, -)             R_P = (c0 d - P) c1,              current R_P
 * with d = w E (weight (m, NPE) or NULL: 1), or d = w (E + stretch) where stretch (3, m, NPE)
 * is given (Lambda E - E inside a PML: dispersive.py); S_E = minus_inv_eps * sum of the
 * currents (minus_inv_eps_points (m, NPE) where given, else the number; with eps_stride
 * m NPE, (3, m, NPE): component c's at c eps_stride, a diagonal eps_inf). fold as pml_stage. */
void dispersive_stage(const REAL *u, REAL *residual, REAL *rate, REAL *aux, REAL *aux_residual,
                      REAL *aux_rate, const REAL *weight, const REAL *stretch, const REAL *minus_inv_eps_points,
                      idx_t eps_stride, double minus_inv_eps, const int *model, const int *offset, const double *c0,
                      const double *c1, const double *c2, int P, const idx_t *elements, idx_t m, idx_t E, int fold,
                      double a, double b, double dt)
{
    const REAL ra = (REAL)a, rb = (REAL)b, rdt = (REAL)dt;
    const REAL over_a = fold ? (REAL)(dt / a) : (REAL)0;
    const idx_t fs = E * NPE, ms = m * NPE;
    OMP_PARALLEL_FOR
    for (idx_t i = 0; i < m; ++i) {
        const idx_t g = elements[i] * NPE, o = i * NPE;
        for (int c = 0; c < 3; ++c) {
            REAL s[NPE], d[NPE];
            const REAL *e = u + c * fs + g;
            const REAL *st = stretch ? stretch + c * ms + o : NULL;
            for (int p = 0; p < NPE; ++p) {
                const REAL x = st ? e[p] + st[p] : e[p];
                d[p] = weight ? x * weight[o + p] : x;
                s[p] = 0;
            }
            for (int j = 0; j < P; ++j) {
                const int k = offset[j] + c;
                const REAL k0 = (REAL)c0[j], k1 = (REAL)c1[j], k2 = (REAL)c2[j];
                if (model[j] == 1) { /* lorentz: P at k, J at k + 3 */
                    REAL *pp = aux + k * ms + o, *jj = aux + (k + 3) * ms + o;
                    REAL *ep = aux_residual + k * ms + o, *ej = aux_residual + (k + 3) * ms + o;
                    REAL *rp = aux_rate + k * ms + o, *rj = aux_rate + (k + 3) * ms + o;
                    for (int p = 0; p < NPE; ++p) {
                        const REAL xp = jj[p], xj = k0 * d[p] - k1 * pp[p] - k2 * jj[p];
                        s[p] += jj[p];
                        if (fold) {
                            const REAL yp = ra * ep[p] + rdt * xp, yj = ra * ej[p] + rdt * xj;
                            ep[p] = yp;
                            ej[p] = yj;
                            pp[p] += rb * yp;
                            jj[p] += rb * yj;
                        } else {
                            rp[p] = xp;
                            rj[p] = xj;
                        }
                    }
                } else {
                    REAL *q = aux + k * ms + o, *eq = aux_residual + k * ms + o, *rq = aux_rate + k * ms + o;
                    const int debye = model[j] == 2;
                    for (int p = 0; p < NPE; ++p) {
                        const REAL x = debye ? (k0 * d[p] - q[p]) * k1 : k0 * d[p] - k1 * q[p];
                        s[p] += debye ? x : q[p];
                        if (fold) {
                            const REAL y = ra * eq[p] + rdt * x;
                            eq[p] = y;
                            q[p] += rb * y;
                        } else {
                            rq[p] = x;
                        }
                    }
                }
            }
            const REAL *mie = minus_inv_eps_points ? minus_inv_eps_points + c * eps_stride + o : NULL;
            const REAL scalar = (REAL)minus_inv_eps;
            if (fold) {
                REAL *rf = residual + c * fs + g;
                for (int p = 0; p < NPE; ++p) rf[p] += over_a * (s[p] * (mie ? mie[p] : scalar));
            } else {
                REAL *sf = rate + c * ms + o;
                for (int p = 0; p < NPE; ++p) sf[p] = s[p] * (mie ? mie[p] : scalar);
            }
        }
    }
}

/* ---- TF/SF surface correction (tfsf.py) -------------------------------------------------
 * For each of the K surface faces j (element[j], face[j]) and its face points [a, b]:
 *   residual[f, point] += scale_residual * gain[f, j, a, b] w[j, a, b]
 *   u[f, point] += scale_u * gain[f, j, a, b] w[j, a, b]        (u may be NULL: not changed)
 * Face f's NQZ x NQ points are the volume slice with the normal index fixed: [k, j] on faces 0/1 (i
 * fixed), [k, i] on 2/3, [j, i] on 4/5 (mesh/topology.py). Serial: faces of one element share
 * edge points, and the surface has few points. */
void surface_add(REAL *u, REAL *residual, const REAL *gain, const REAL *w, const idx_t *element,
                 const idx_t *face, idx_t K, idx_t E, double scale_residual, double scale_u)
{
    const REAL sr = (REAL)scale_residual, su = (REAL)scale_u;
    const idx_t fs = E * NPE, gs = K * NFP;
    for (idx_t j = 0; j < K; ++j) {
        const int fc = (int)face[j], end = (fc % 2) ? NQ - 1 : 0;
        idx_t stride_a, stride_b, base = element[j] * NPE;
        if (fc < 2) { base += end; stride_a = NQ2; stride_b = NQ; }
        else if (fc < 4) { base += end * NQ; stride_a = NQ2; stride_b = 1; }
        else { base += end * NQ2; stride_a = NQ; stride_b = 1; }
        const REAL *wj = w + j * NFP;
        for (int f = 0; f < 6; ++f) {
            const REAL *gj = gain + f * gs + j * NFP;
            REAL *rf = residual + f * fs + base;
            REAL *uf = u ? u + f * fs + base : NULL;
            for (int x = 0; x < NQZ; ++x) /* a: one point on a 2-D mesh's edge */
                for (int y = 0; y < NQ; ++y) {
                    const REAL s = gj[x * NQ + y] * wj[x * NQ + y];
                    const idx_t at = x * stride_a + y * stride_b;
                    rf[at] += sr * s;
                    if (uf) uf[at] += su * s;
                }
        }
    }
}
