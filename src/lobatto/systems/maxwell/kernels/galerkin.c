/* Compiled CPU kernel of Maxwell's weight-adjusted Galerkin form (skew-symmetric volume term)
 * (wrapped by lobatto.systems.maxwell.galerkin_cpu; galerkin.py's WeightAdjustedOperator.rhs
 * with its default skew volume term defines what it computes):
 *
 *     out = M_W^-1 (K(H) / eps + S_E,  -K(E) / mu + S_H),   M_W^-1 = M^-1 M_{1/J} M^-1,
 *     K(f) = (B(., f) + B_w(., f)) / 2   (volume_load: the strong form and the one by parts,
 *                                         whose face sums take the element's own traces).
 *
 * Specialised at compile time on the GLL points NP = N + 1 and the Gauss points NG = Q per
 * direction and the floating-point type:
 *     cc -O3 -march=native -shared -fPIC -fopenmp -DNP=8 -DNG=8 -DREAL=double galerkin.c
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
 * and a per-point medium's arrays (galerkin_media.py; medium_t below), NULL without one: then
 * M_{eps_c W}^-1 takes w / (J eps_c) per component for ijw and 1/eps, E's load gains the
 * conductor's -V^T (w J sigma . V E), the faces take the medium's Riemann fluxes, and an affine
 * element takes the closed form only with the medium's constants (where it is constant there).
 * Face f's points [a, b] are the volume slice with the normal index fixed ([k, j] on faces
 * 0/1, [k, i] on 2/3, [j, i] on 4/5), see mesh/topology.py.
 *
 * Per element, by sum factorisation (every contraction a small matrix product on rows of
 * vectors, VROWS below), the Gauss planes (fixed k) one at a time. Any Q (the general path):
 *  1. volume: V and V D along k for all planes; per plane the field and its 3 reference
 *     derivatives at its Gauss points ((V D) along the derivative's axis, V along the others),
 *     the crossed products with w J a^b (strong S = sum_b w J a^b x d_b f, weak G_b =
 *     w J a^b x f), back along i, j with V^T or (V D)^T as each part needs; at the end along k:
 *     the GLL load;
 *  2. faces: the jumps and the own traces interpolated to Q x Q points, the upwind/central flux
 *     and B_w's own-trace term times w sJ, V^T back, added at the face's GLL points;
 *  3. mass: with A = V M^-1, M_W^-1 load = A^T (w/J . A load) (A along each axis), plane by
 *     plane again.
 * Q = N + 1 (the default rule; V square): square_rhs, the whole rhs at the Gauss points with
 * their own derivative D_G = V D V^-1 (V^T's and A's products cancel: see there), half the
 * contractions. Before the skew form (strong B only, Q = max(ceil(3N / 2), N + 1)), at N = 7
 * (10 elements, one thread) 1 took 62 %, 2 14 %, 3 23 % of the time.
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

/* ---- vectors ---------------------------------------------------------------------------
 * The scratch's rows (the fastest axis, GLL or Gauss) are padded to whole vectors of VW values
 * (GCC/clang vector extensions: the compiler keeps the accumulators of a row block in
 * registers, which it does not for plain arrays at these trip counts). VW = 8 (-DVW=4 or 16
 * override it): measured on an AVX-512 Xeon, 4 was slower for double at NP = 5..12 (at NP = 10
 * no faster despite its smaller padding) and 16 for float faster at NP = 10 but slower at 8.
 * Pad lanes start at zero and are never read back as coefficients. */
#define PAD_(n, w) (((n) + (w) - 1) / (w) * (w))
#ifndef VW
#define VW 8
#endif
typedef REAL vec __attribute__((vector_size(VW * sizeof(REAL)), aligned(VW * sizeof(REAL))));
#define NPV PAD_(NP, VW) /* a padded GLL row */
#define NGV PAD_(NG, VW) /* a padded Gauss row */
#define NPW (NPV / VW)   /* its vectors */
#define NGW (NGV / VW)

/* Rows of y (= or +=, OP) sum_k a[m * AM + k * AK] (row k of x) for m < M, each row NV vectors
 * (x's rows XS vectors apart, y's YS): a small matrix product, MB rows at a time so that each
 * loaded vector of x serves MB rows. Every size is a compile-time constant. */
#define VROWS(M, K, NV, MB, a, AM, AK, x, XS, y, YS, OP)                                                   \
    do {                                                                                                   \
        const REAL *restrict a_ = (a);                                                                     \
        const vec *restrict x_ = (const vec *)(x);                                                         \
        vec *restrict y_ = (vec *)(y);                                                                     \
        int m_ = 0;                                                                                        \
        for (; m_ + (MB) <= (M); m_ += (MB)) {                                                             \
            vec c_[MB][NV];                                                                                \
            for (int r_ = 0; r_ < (MB); ++r_)                                                              \
                for (int v_ = 0; v_ < (NV); ++v_) c_[r_][v_] = (vec){0};                                   \
            for (int k_ = 0; k_ < (K); ++k_)                                                               \
                for (int r_ = 0; r_ < (MB); ++r_) {                                                        \
                    const REAL s_ = a_[(m_ + r_) * (AM) + k_ * (AK)];                                      \
                    for (int v_ = 0; v_ < (NV); ++v_) c_[r_][v_] += s_ * x_[k_ * (XS) + v_];               \
                }                                                                                          \
            for (int r_ = 0; r_ < (MB); ++r_)                                                              \
                for (int v_ = 0; v_ < (NV); ++v_) y_[(m_ + r_) * (YS) + v_] OP c_[r_][v_];                 \
        }                                                                                                  \
        if ((M) % (MB)) {                                                                                  \
            vec c_[MB][NV];                                                                                \
            for (int r_ = 0; r_ < (M) % (MB); ++r_)                                                        \
                for (int v_ = 0; v_ < (NV); ++v_) c_[r_][v_] = (vec){0};                                   \
            for (int k_ = 0; k_ < (K); ++k_)                                                               \
                for (int r_ = 0; r_ < (M) % (MB); ++r_) {                                                  \
                    const REAL s_ = a_[(m_ + r_) * (AM) + k_ * (AK)];                                      \
                    for (int v_ = 0; v_ < (NV); ++v_) c_[r_][v_] += s_ * x_[k_ * (XS) + v_];               \
                }                                                                                          \
            for (int r_ = 0; r_ < (M) % (MB); ++r_)                                                        \
                for (int v_ = 0; v_ < (NV); ++v_) y_[(m_ + r_) * (YS) + v_] OP c_[r_][v_];                 \
        }                                                                                                  \
    } while (0)

/* VROWS along the slowest axis of a padded GLL block [.][NP][NPW]: one j row (NPW vectors) at a
 * time, which keeps the accumulators in registers where a whole plane would not fit. */
#define SLABS_OP(M, K, a, AM, AK, x, y, OP)                                                                 \
    for (int j_ = 0; j_ < NP; ++j_)                                                                          \
        VROWS(M, K, NPW, ROWS(NPW), a, AM, AK, (const vec *)(x) + j_ * NPW, NP * NPW, (vec *)(y) + j_ * NPW, \
              NP * NPW, OP)
#define SLABS(M, K, a, AM, AK, x, y) SLABS_OP(M, K, a, AM, AK, x, y, =)

/* rows per block: about 12 accumulator vectors */
#define ROWS(nv) ((nv) >= 12 ? 1 : (nv) >= 6 ? 2 : (nv) >= 3 ? 4 : (nv) == 2 ? 6 : 8)

/* Padded volume index of face point (a, b) of face f: off[f] + a * sa[f] + b * sb[f]; the
 * unpadded one (u's) with U_OFF, U_SA, U_SB. */
#define PS2 (NP * NPV) /* a padded GLL plane */
static const int FACE_OFF[6] = {0, NP - 1, 0, (NP - 1) * NPV, 0, (NP - 1) * PS2};
static const int FACE_SA[6] = {PS2, PS2, PS2, PS2, NPV, NPV};
static const int FACE_SB[6] = {NPV, NPV, 1, 1, 1, 1};
static const int U_OFF[6] = {0, NP - 1, 0, (NP - 1) * NP, 0, (NP - 1) * NP2};
static const int U_SA[6] = {NP2, NP2, NP2, NP2, NP, NP};
static const int U_SB[6] = {NP, NP, 1, 1, 1, 1};

typedef struct {
    vec V[NG][NPW];     /* V[q][p]: interpolation to the Gauss points, rows padded */
    vec Vt[NP][NGW];    /* V^T */
    vec VDt[NP][NGW];   /* (V D)^T */
    vec VVD[2 * NG][NPW]; /* V's rows, then (V D)'s */
    vec A[NG][NPW];     /* A = V M^-1 */
    vec At[NP][NGW];    /* A^T */
    REAL v[NG][NP];     /* V, (V D) stacked, A as plain coefficients */
    REAL vd[NG][NP];
    REAL vvd[2 * NG][NP]; /* V, then V D */
    REAL a[NG][NP];
    REAL d[NP][NP], mi[NP][NP]; /* D and M^-1 (the affine path) */
    /* Q = N + 1 (square_rhs): the Gauss points' derivative D_G = V D V^-1 (coefficients, rows),
       1 / w, w_q A[q][end] of the ends 0 and NP - 1, A^T's coefficients */
    vec DG[NG][NGW], DGt[NG][NGW];
    REAL dg[NG][NG], winv[NG], wa[NG][2], att[NP][NG];
    REAL inv_eps, inv_mu, ae, ah; /* 1/eps, 1/mu, alpha / Z, alpha Z */
} matrices_t;

/* A per-point medium (galerkin_media.py's GalerkinMedium), or iw NULL for the uniform one:
 *     iw   : (6, E, NG, NG, NG)  w / (J eps_c) for E_c, w / (J mu_c) for H_c: M_{eps W}^-1's middle,
 *                                per component instead of ijw (and 1/eps, 1/mu, which are then 1)
 *     loss : (E, NG, NG, NG)     w J sigma, or NULL: E's load gains -V^T (loss . V E)
 *     flux : (4, E, 6, NG, NG)   a, b, c, d at the face Gauss points: F_E = a S_H - alpha b n x S_E,
 *                                F_H = -(c S_E + alpha d n x S_H)
 *     affine: (E, MEDIUM_CONSTANTS) the closed form's constants of the medium (affine_rhs), or NULL */
typedef struct {
    const REAL *iw, *loss, *flux;
    const REAL *affine; /* (E, MEDIUM_CONSTANTS) of affine_rhs, or NULL: no element in closed form */
    REAL alpha;
} medium_t;

/* Per-thread scratch of one element (rows padded to NPV or NGV). */
typedef struct {
    vec u[6][NP][NP][NPW];       /* the element's fields */
    vec load[6][NP][NP][NPW];    /* M_W dU/dt at the GLL points */
    vec zk[6][2][NG][NP][NPW];   /* V, V D along k of each field: [Gauss k][GLL j][GLL i] */
    vec planes[6][2 * NG][NP][NPW]; /* per Gauss k plane, a field contracted back along i, j:
                                        [k] for V^T along k, [NG + k] for (V D)^T */
    vec zj[3][NG][NPW];          /* one plane, one field: along j */
    vec d[6][4][NG][NGW];        /* on one Gauss plane per field: d_r f, f, d_s f, d_t f */
    vec o[6][NG][NGW];           /* a face's fluxes; the mass's products */
    vec os[6][2][NG][NGW];       /* a plane's products for V^T along i, then (V D)^T along i */
    vec ow[6][2][NG][NGW];       /* a plane's products for V^T along i, then (V D)^T along j | k */
    vec t[6][NG][NPW];           /* partial contractions */
    vec tv[6][3][NG][NPW];       /* the volume's along i: for V^T | (V D)^T along j, then for k */
    vec jo[12][NP][NPW];         /* a face's jumps and own values */
    vec wp[9][NG][NGW];          /* one plane's w J a^b, rows padded */
    vec lw[NG][NGW];             /* one plane's w J sigma (a medium with a conductor), rows padded */
    vec g[12][NP][NGW];          /* those along b */
    vec cg[6][NP][NP][NPW];      /* the energy's conjugate gradients; the rhs's M_W^-1 load */
} scratch_t;

#define R(x) ((REAL *)(x)) /* a vector array's values */

/* one plane's w J sigma into padded rows (pad lanes stay zero) */
static inline void plane_loss(vec (*restrict lw)[NGW], const REAL *restrict w)
{
    for (int jq = 0; jq < NG; ++jq)
        for (int iq = 0; iq < NG; ++iq) R(lw[jq])[iq] = w[jq * NG + iq];
}

/* The products at a vector of Gauss points: S[c] = (sum_b w J a^b x d_b H)_c for c < 3 (E's load),
 * (sum_b w J a^b x d_b E)_c for c >= 3 (H's); G[b] likewise of w J a^b x H, w J a^b x E. w: the
 * nine w J a^b [b * 3 + a], fv: the six fields, dv[f][b]: their derivatives. */
static inline void products(const vec w[9], const vec fv[6], const vec dv[6][3], vec S[6], vec G[3][6])
{
    for (int c = 0; c < 6; ++c) S[c] = (vec){0};
    for (int b = 0; b < 3; ++b) {
        const vec w0 = w[b * 3], w1 = w[b * 3 + 1], w2 = w[b * 3 + 2];
        S[0] += w1 * dv[5][b] - w2 * dv[4][b];
        S[1] += w2 * dv[3][b] - w0 * dv[5][b];
        S[2] += w0 * dv[4][b] - w1 * dv[3][b];
        S[3] += w1 * dv[2][b] - w2 * dv[1][b];
        S[4] += w2 * dv[0][b] - w0 * dv[2][b];
        S[5] += w0 * dv[1][b] - w1 * dv[0][b];
        G[b][0] = w1 * fv[5] - w2 * fv[4], G[b][1] = w2 * fv[3] - w0 * fv[5], G[b][2] = w0 * fv[4] - w1 * fv[3];
        G[b][3] = w1 * fv[2] - w2 * fv[1], G[b][4] = w2 * fv[0] - w0 * fv[2], G[b][5] = w0 * fv[1] - w1 * fv[0];
    }
}

/* one plane's w J a^b into padded rows (pad lanes zero: so are the products') */
static inline void plane_cofactors(scratch_t *restrict s, const REAL *restrict w, idx_t cs)
{
    for (int ba = 0; ba < 9; ++ba)
        for (int jq = 0; jq < NG; ++jq)
            for (int iq = 0; iq < NG; ++iq) R(s->wp[ba][jq])[iq] = w[ba * cs + jq * NG + iq];
}

/* ---- 1. the volume load (B + B_w) / 2 on one element, B_w's face sums aside ------------
 * Per Gauss point the strong part S = sum_b w J a^b x d_b f and the weak parts
 * G_b = w J a^b x f (f at the point: V along each axis), then V^T_3 S / 2 - sum_b (V D)^T_b
 * V^T_(others) G_b / 2 back, grouped by the operators each axis needs: along i V^T (S) +
 * (V D)^T (G_r) summed into one row, V^T (G_s), V^T (G_t); along j V^T
 * (the first) + (V D)^T (G_s's) into the plane stack for V^T_k, V^T (G_t's) into the one for
 * (V D)^T_k; along k both stacks in one contraction. */
static inline void volume_load(const matrices_t *restrict m, scratch_t *restrict s, const REAL *restrict cof,
                               const REAL *restrict loss, idx_t E, idx_t e)
{
    const idx_t cs = E * NG3;
    /* along k for all Gauss planes: zk[f][0] = V u_f, zk[f][1] = (V D) u_f */
    for (int f = 0; f < 6; ++f) {
        SLABS(NG, NP, &m->v[0][0], NP, 1, s->u[f], s->zk[f][0]);
        SLABS(NG, NP, &m->vd[0][0], NP, 1, s->u[f], s->zk[f][1]);
    }
    /* the halves of (B + B_w) / 2 with E's 1/eps and H's -1/mu */
    const REAL ie = (REAL)0.5 * m->inv_eps, im = (REAL)-0.5 * m->inv_mu;
    for (int kq = 0; kq < NG; ++kq) {
        for (int f = 0; f < 6; ++f) {
            /* along j: zj0 = V zv, zj1 = VD zv, zj2 = V zd */
            VROWS(NG, NP, NPW, ROWS(NPW), &m->v[0][0], NP, 1, s->zk[f][0][kq], NPW, s->zj[0], NPW, =);
            VROWS(NG, NP, NPW, ROWS(NPW), &m->vd[0][0], NP, 1, s->zk[f][0][kq], NPW, s->zj[1], NPW, =);
            VROWS(NG, NP, NPW, ROWS(NPW), &m->v[0][0], NP, 1, s->zk[f][1][kq], NPW, s->zj[2], NPW, =);
            /* along i: d_r = zj0 (V D)^T; f = zj0 V^T, d_s = zj1 V^T, d_t = zj2 V^T */
            VROWS(NG, NP, NGW, ROWS(NGW), R(s->zj[0]), NPV, 1, m->VDt, NGW, s->d[f][0], NGW, =);
            VROWS(3 * NG, NP, NGW, ROWS(NGW), R(s->zj[0]), NPV, 1, m->Vt, NGW, s->d[f][1], NGW, =);
        }
        /* the products S and -G_b at the plane's points, scaled, a vector of points at a time */
        plane_cofactors(s, cof + e * NG3 + kq * NG2, cs);
        if (loss) plane_loss(s->lw, loss + e * NG3 + kq * NG2);
        for (int jq = 0; jq < NG; ++jq)
            for (int v = 0; v < NGW; ++v) {
                vec w[9], fv[6], dv[6][3], S[6], G[3][6];
                for (int ba = 0; ba < 9; ++ba) w[ba] = s->wp[ba][jq][v];
                for (int f = 0; f < 6; ++f) {
                    fv[f] = s->d[f][1][jq][v];
                    dv[f][0] = s->d[f][0][jq][v];
                    dv[f][1] = s->d[f][2][jq][v];
                    dv[f][2] = s->d[f][3][jq][v];
                }
                products(w, fv, dv, S, G);
                for (int c = 0; c < 6; ++c) {
                    const REAL h = c < 3 ? ie : im;
                    s->os[c][0][jq][v] = S[c] * h;
                    s->os[c][1][jq][v] = -G[0][c] * h;
                    s->ow[c][0][jq][v] = -G[1][c] * h;
                    s->ow[c][1][jq][v] = -G[2][c] * h;
                }
                if (loss) /* the conductor: -w J sigma E at the point, back with V^T as S */
                    for (int c = 0; c < 3; ++c) s->os[c][0][jq][v] -= s->lw[jq][v] * fv[c];
            }
        for (int c = 0; c < 6; ++c) {
            /* along i: tv0 = V^T S + (V D)^T G_r, tv1, tv2 = V^T G_s, V^T G_t */
            VROWS(NG, NG, NPW, ROWS(NPW), R(s->os[c][0]), NGV, 1, m->V, NPW, s->tv[c][0], NPW, =);
            VROWS(NG, NG, NPW, ROWS(NPW), R(s->os[c][1]), NGV, 1, m->VVD[NG], NPW, s->tv[c][0], NPW, +=);
            VROWS(2 * NG, NG, NPW, ROWS(NPW), R(s->ow[c]), NGV, 1, m->V, NPW, s->tv[c][1], NPW, =);
            /* along j: V^T tv0 + (V D)^T tv1 (for V^T_k), V^T tv2 (for (V D)^T_k) */
            VROWS(NP, 2 * NG, NPW, ROWS(NPW), &m->vvd[0][0], 1, NP, s->tv[c][0], NPW, s->planes[c][kq], NPW, =);
            VROWS(NP, NG, NPW, ROWS(NPW), &m->v[0][0], 1, NP, s->tv[c][2], NPW, s->planes[c][NG + kq], NPW, =);
        }
    }
    /* along k: V^T of the first stack + (V D)^T of the second */
    for (int c = 0; c < 6; ++c)
        SLABS(NP, 2 * NG, &m->vvd[0][0], 1, NP, s->planes[c], s->load[c]);
}

/* ---- 2. the face load S at the GLL face points ------------------------------------------ */
static const int FACE_NORMAL[6] = {1, 1, NPV, NPV, PS2, PS2}; /* a face's normal axis stride, padded */

/* square (Q = N + 1 only): the fluxes go to square_rhs's Gauss-point load instead (see there) */
static inline void face_load(const matrices_t *restrict m, const medium_t *restrict md, scratch_t *restrict s,
                             const REAL *restrict sums,
                             const REAL *restrict factors, const REAL *restrict normals,
                             const REAL *restrict face_weights, idx_t E, idx_t e, const int square)
{
    const idx_t ts = E * 6 * NP2, ns = E * 6 * NG2;
    REAL *uu = R(s->u);
    const int us = NP * PS2; /* a field of s->u */
    for (int f = 0; f < 6; ++f) {
        const REAL fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
        const int interior = fe == (REAL)1 && fh == (REAL)1;
        const int off = FACE_OFF[f], sa = FACE_SA[f], sb = FACE_SB[f];
        const REAL *sm = sums + (e * 6 + f) * NP2;
        REAL *jump = R(s->jo); /* [12][NP][NPV]: the jumps, then the own values */
        for (int c = 0; c < 6; ++c) {
            const REAL *uc = uu + c * us + off;
            const REAL *sc = sm + c * ts;
            const REAL g = c < 3 ? fe : fh;
            for (int a = 0; a < NP; ++a)
                for (int b = 0; b < NP; ++b) {
                    const REAL own = uc[a * sa + b * sb];
                    jump[(c * NP + a) * NPV + b] = interior ? 2 * own - sc[a * NP + b] : g * own;
                    jump[((6 + c) * NP + a) * NPV + b] = own;
                }
        }
        /* to the Q x Q points: V along b (all twelve), then along a */
        VROWS(12 * NP, NP, NGW, ROWS(NGW), jump, NPV, 1, m->Vt, NGW, s->g, NGW, =);
        for (int c = 0; c < 6; ++c) {
            VROWS(NG, NP, NGW, ROWS(NGW), &m->v[0][0], NP, 1, s->g[c], NGW, s->d[c][0], NGW, =);
            VROWS(NG, NP, NGW, ROWS(NGW), &m->v[0][0], NP, 1, s->g[6 + c], NGW, s->d[c][1], NGW, =);
        }
        /* the flux (reference.add_surface_terms with sums = -n x jump) times w sJ, and B_w's face
           sum of the volume term, (1/2) w sJ n x (the own H) / eps for E, -(1/2) w sJ n x (own E) / mu */
        const REAL *n0 = normals + (e * 6 + f) * NG2, *n1 = n0 + ns, *n2 = n1 + ns;
        const REAL *fw = face_weights + (e * 6 + f) * NG2;
        const REAL ae = m->ae, ah = m->ah, he = (REAL)0.5 * m->inv_eps, hm = (REAL)0.5 * m->inv_mu;
        /* the face's points with the flux's weights A2 S_H - B2 n x S_E, -(C2 S_E + D2 n x S_H) (times
           he, hm): a loop of its own per flux, so that the uniform one stays branch-free */
#define FACE_POINTS(A2, B2, C2, D2)                                                                         \
        for (int aq = 0; aq < NG; ++aq)                                                                     \
            for (int bq = 0; bq < NG; ++bq) {                                                               \
                const int p = aq * NG + bq;                                                                 \
                const REAL x0 = n0[p], x1 = n1[p], x2 = n2[p];                                              \
                const REAL je0 = R(s->d[0][0][aq])[bq], je1 = R(s->d[1][0][aq])[bq], je2 = R(s->d[2][0][aq])[bq]; \
                const REAL jh0 = R(s->d[3][0][aq])[bq], jh1 = R(s->d[4][0][aq])[bq], jh2 = R(s->d[5][0][aq])[bq]; \
                const REAL se0 = -(x1 * je2 - x2 * je1), se1 = -(x2 * je0 - x0 * je2), se2 = -(x0 * je1 - x1 * je0); \
                const REAL sh0 = -(x1 * jh2 - x2 * jh1), sh1 = -(x2 * jh0 - x0 * jh2), sh2 = -(x0 * jh1 - x1 * jh0); \
                const REAL oe0 = R(s->d[0][1][aq])[bq], oe1 = R(s->d[1][1][aq])[bq], oe2 = R(s->d[2][1][aq])[bq]; \
                const REAL oh0 = R(s->d[3][1][aq])[bq], oh1 = R(s->d[4][1][aq])[bq], oh2 = R(s->d[5][1][aq])[bq]; \
                const REAL we = he * fw[p], wh = hm * fw[p];                                                \
                const REAL a2 = (A2), b2 = (B2), c2 = (C2), d2 = (D2);                                      \
                R(s->o[0][aq])[bq] = (a2 * sh0 - b2 * (x1 * se2 - x2 * se1) + (x1 * oh2 - x2 * oh1)) * we; \
                R(s->o[1][aq])[bq] = (a2 * sh1 - b2 * (x2 * se0 - x0 * se2) + (x2 * oh0 - x0 * oh2)) * we; \
                R(s->o[2][aq])[bq] = (a2 * sh2 - b2 * (x0 * se1 - x1 * se0) + (x0 * oh1 - x1 * oh0)) * we; \
                R(s->o[3][aq])[bq] = (-c2 * se0 - d2 * (x1 * sh2 - x2 * sh1) - (x1 * oe2 - x2 * oe1)) * wh; \
                R(s->o[4][aq])[bq] = (-c2 * se1 - d2 * (x2 * sh0 - x0 * sh2) - (x2 * oe0 - x0 * oe2)) * wh; \
                R(s->o[5][aq])[bq] = (-c2 * se2 - d2 * (x0 * sh1 - x1 * sh0) - (x0 * oe1 - x1 * oe0)) * wh; \
            }
        if (md->flux) { /* a medium's a, b, c, d over he = hm = 1/2 (eps, mu then 1) */
            const REAL *fa = md->flux + (e * 6 + f) * NG2, al = md->alpha;
            FACE_POINTS(2 * fa[p], 2 * al * fa[ns + p], 2 * fa[2 * ns + p], 2 * al * fa[3 * ns + p]);
        } else { /* uniform: 1, alpha / Z, 1, alpha Z (x 1 is exact: the same values as without media) */
            FACE_POINTS((REAL)1, ae, (REAL)1, ah);
        }
#undef FACE_POINTS
        if (square) { /* along the normal w_q A[q][end] F at every Gauss point of that line */
            const int end = f & 1, base = off - (end ? NP - 1 : 0) * FACE_NORMAL[f], ns_ = FACE_NORMAL[f];
            for (int c = 0; c < 6; ++c) {
                REAL *l = R(s->load[c]) + base;
                if (ns_ == 1) /* the normal along i: contiguous along it */
                    for (int a = 0; a < NP; ++a)
                        for (int b = 0; b < NP; ++b) {
                            const REAL F = R(s->o[c][a])[b];
                            for (int q = 0; q < NP; ++q) l[a * sa + b * sb + q] += m->wa[q][end] * F;
                        }
                else /* b along i: whole padded rows (o's pad lanes are zero) */
                    for (int a = 0; a < NP; ++a)
                        for (int q = 0; q < NP; ++q) {
                            const REAL x = m->wa[q][end];
                            vec *lr = (vec *)(l + a * sa + q * ns_);
                            for (int v = 0; v < NPW; ++v) lr[v] += x * s->o[c][a][v];
                        }
            }
            continue;
        }
        /* V^T back along b (all six), then along a, added at the face's GLL points */
        VROWS(6 * NG, NG, NPW, ROWS(NPW), R(s->o), NGV, 1, m->V, NPW, s->t, NPW, =);
        for (int c = 0; c < 6; ++c) {
            vec r[NP][NPW];
            VROWS(NP, NG, NPW, ROWS(NPW), &m->v[0][0], 1, NP, s->t[c], NPW, r, NPW, =);
            REAL *l = R(s->load[c]) + off;
            for (int a = 0; a < NP; ++a)
                for (int b = 0; b < NP; ++b) l[a * sa + b * sb] += R(r[a])[b];
        }
    }
}

/* y = a along each axis of x (a NP x NP: coefficients and the rows of a^T) */
static inline void tensor3(const REAL *restrict a, const vec (*restrict at)[NPW], const vec *restrict x,
                           vec *restrict y, scratch_t *restrict s)
{
    vec (*z)[NP][NPW] = s->planes[0]; /* [NP][NP][NPW] of it */
    SLABS(NP, NP, a, NP, 1, x, z);
    vec (*yy)[NP][NPW] = (vec (*)[NP][NPW])y;
    for (int k = 0; k < NP; ++k) {
        VROWS(NP, NP, NPW, ROWS(NPW), a, NP, 1, z[k], NPW, s->t[0], NPW, =);
        VROWS(NP, NP, NPW, ROWS(NPW), R(s->t[0]), NPV, 1, at, NPW, yy[k], NPW, =);
    }
}

/* ---- 3. out = M_W^-1 load = A^T (w/J . A load), A = V M^-1 along each axis --------------- */
/* y = F^T (w . F x) with F (NG x NP) along each axis: f its coefficients, F its rows, Ft the
 * rows of F^T; x, y padded GLL blocks (may not overlap the scratch it uses: zk, planes, t, o). */
static inline void sandwich(const REAL *restrict f, const vec (*restrict F)[NPW], const vec (*restrict Ft)[NGW],
                            const REAL *restrict wj, const vec *restrict x, vec *restrict y, scratch_t *restrict s)
{
    vec (*z)[NP][NPW] = s->zk[0][0]; /* [NG][NP][NPW] */
    SLABS(NG, NP, f, NP, 1, x, z);
    for (int kq = 0; kq < NG; ++kq) {
        VROWS(NG, NP, NPW, ROWS(NPW), f, NP, 1, z[kq], NPW, s->t[0], NPW, =);
        VROWS(NG, NP, NGW, ROWS(NGW), R(s->t[0]), NPV, 1, Ft, NGW, s->o[0], NGW, =);
        const REAL *wp = wj + kq * NG2;
        for (int jq = 0; jq < NG; ++jq)
            for (int iq = 0; iq < NG; ++iq) R(s->o[0][jq])[iq] *= wp[jq * NG + iq];
        VROWS(NG, NG, NPW, ROWS(NPW), R(s->o[0]), NGV, 1, F, NPW, s->t[1], NPW, =);
        VROWS(NP, NG, NPW, ROWS(NPW), f, 1, NP, s->t[1], NPW, s->planes[0][kq], NPW, =);
    }
    SLABS(NP, NG, f, 1, NP, s->planes[0], y);
}

static inline void inverse_mass(const matrices_t *restrict m, const medium_t *restrict md, scratch_t *restrict s,
                                const REAL *restrict ijw, REAL *restrict out, idx_t E, idx_t e)
{
    const idx_t fs = E * NP3;
    for (int c = 0; c < 6; ++c) {
        const REAL *wj = md->iw ? md->iw + (c * E + e) * NG3 : ijw + e * NG3; /* M_{eps_c W}^-1 or M_W^-1 */
        sandwich(&m->a[0][0], m->A, m->At, wj, &s->load[c][0][0][0], &s->cg[0][0][0][0], s);
        const vec (*r)[NP][NPW] = s->cg[0];
        REAL *o = out + c * fs + e * NP3;
        for (int k = 0; k < NP; ++k)
            for (int j = 0; j < NP; ++j)
                for (int i = 0; i < NP; ++i) o[(k * NP + j) * NP + i] = R(r[k][j])[i];
    }
}

/* ---- Q = N + 1: the whole rhs at the Gauss points -------------------------------------------
 * With V square (invertible) (V D)^T = V^T D_G^T, D_G = V D V^-1 the Gauss points' own
 * derivative, and A V^T = V M^-1 V^T = W^-1 (M = V^T W V), so with Y the Gauss-point load,
 * volume V^T Y, M_W^-1 V^T Y = A^T (w/J . W^-1 Y) = A^T (Y / J), and a face's V^T F at its end
 * of the normal axis gives A^T (w_q A[q][end] F / J) along that normal line:
 *     out = A^T [ (Y + faces) / J ],  Y = (S - sum_b D_G^T_b G_b) / 2,
 * f = V u once, its derivatives D_G along each axis: 12 contractions of N^4 per field where the
 * general path takes 24 (volume_load's 18 and the mass's 6). */
#if NG == NP
static inline void square_rhs(const matrices_t *restrict m, const medium_t *restrict md, scratch_t *restrict s,
                              const REAL *restrict cof, const REAL *restrict ijw, const REAL *restrict sums,
                              const REAL *restrict factors, const REAL *restrict normals,
                              const REAL *restrict face_weights, REAL *restrict out, idx_t E, idx_t e)
{
    const idx_t cs = E * NG3, fs = E * NP3;
    /* zk[f][0] = V u_f (along k into zk[f][1], then per plane along j, i), zk[f][1] = D_G along k */
    for (int f = 0; f < 6; ++f) {
        SLABS(NG, NP, &m->v[0][0], NP, 1, s->u[f], s->zk[f][1]);
        for (int kq = 0; kq < NG; ++kq) {
            VROWS(NG, NP, NPW, ROWS(NPW), &m->v[0][0], NP, 1, s->zk[f][1][kq], NPW, s->t[0], NPW, =);
            VROWS(NG, NP, NGW, ROWS(NGW), R(s->t[0]), NPV, 1, m->Vt, NGW, s->zk[f][0][kq], NGW, =);
        }
        SLABS(NG, NG, &m->dg[0][0], NG, 1, s->zk[f][0], s->zk[f][1]);
    }
    const REAL ie = (REAL)0.5 * m->inv_eps, im = (REAL)-0.5 * m->inv_mu;
    for (int kq = 0; kq < NG; ++kq) {
        for (int f = 0; f < 6; ++f) { /* d_r, d_s on the plane: D_G along i, j */
            VROWS(NG, NG, NGW, ROWS(NGW), R(s->zk[f][0][kq]), NGV, 1, m->DGt, NGW, s->d[f][0], NGW, =);
            VROWS(NG, NG, NGW, ROWS(NGW), &m->dg[0][0], NG, 1, s->zk[f][0][kq], NGW, s->d[f][2], NGW, =);
        }
        /* the products S, -G_b at the plane's points, scaled, a vector of points at a time */
        plane_cofactors(s, cof + e * NG3 + kq * NG2, cs);
        if (md->loss) plane_loss(s->lw, md->loss + e * NG3 + kq * NG2);
        for (int jq = 0; jq < NG; ++jq)
            for (int v = 0; v < NGW; ++v) {
                vec w[9], fv[6], dv[6][3], S[6], G[3][6];
                for (int ba = 0; ba < 9; ++ba) w[ba] = s->wp[ba][jq][v];
                for (int f = 0; f < 6; ++f) {
                    fv[f] = s->zk[f][0][kq][jq][v];
                    dv[f][0] = s->d[f][0][jq][v];
                    dv[f][1] = s->d[f][2][jq][v];
                    dv[f][2] = s->zk[f][1][kq][jq][v];
                }
                products(w, fv, dv, S, G);
                for (int c = 0; c < 6; ++c) {
                    const REAL h = c < 3 ? ie : im;
                    s->load[c][kq][jq][v] = S[c] * h;
                    s->ow[c][0][jq][v] = -G[0][c] * h;
                    s->ow[c][1][jq][v] = -G[1][c] * h;
                    s->planes[c][kq][jq][v] = -G[2][c] * h;
                }
                if (md->loss) /* the conductor: -w J sigma E at the point (Y is V^T's argument) */
                    for (int c = 0; c < 3; ++c) s->load[c][kq][jq][v] -= s->lw[jq][v] * fv[c];
            }
        for (int c = 0; c < 6; ++c) { /* + D_G^T along i of -G_r, along j of -G_s */
            VROWS(NG, NG, NGW, ROWS(NGW), R(s->ow[c][0]), NGV, 1, m->DG, NGW, s->load[c][kq], NGW, +=);
            VROWS(NG, NG, NGW, ROWS(NGW), &m->dg[0][0], 1, NG, s->ow[c][1], NGW, s->load[c][kq], NGW, +=);
        }
    }
    for (int c = 0; c < 6; ++c) /* + D_G^T along k of -G_t */
        SLABS_OP(NG, NG, &m->dg[0][0], 1, NG, s->planes[c], s->load[c], +=);
    face_load(m, md, s, sums, factors, normals, face_weights, E, e, 1);
    for (int c = 0; c < 6; ++c) {
        const REAL *wj = md->iw ? md->iw + (c * E + e) * NG3 : ijw + e * NG3; /* M_{eps_c W}^-1 or M_W^-1 */
        for (int k = 0; k < NG; ++k) /* / J = w/J . W^-1 */
            for (int j = 0; j < NG; ++j) {
                const REAL wkj = m->winv[k] * m->winv[j];
                for (int i = 0; i < NG; ++i) R(s->load[c][k][j])[i] *= wj[(k * NG + j) * NG + i] * wkj * m->winv[i];
            }
        tensor3(&m->att[0][0], (const vec (*)[NPW])m->A, &s->load[c][0][0][0], &s->cg[0][0][0][0], s);
        REAL *o = out + c * fs + e * NP3;
        for (int k = 0; k < NP; ++k)
            for (int j = 0; j < NP; ++j)
                for (int i = 0; i < NP; ++i) o[(k * NP + j) * NP + i] = R(s->cg[0][k][j])[i];
    }
}
#endif

/* ---- an affine element: the same rhs in closed form ----------------------------------------
 * With J a^b and J constant and flat faces (n, sJ constant) every Gauss rule here is exact, so
 * B_w = B (by parts exactly), M_W^-1 = M^-1 / J and the volume part is the collocated chain
 * rule, (1/J) sum_b J a^b x D_b f;
 * a face's part, M_W^-1 of (M x M) (sJ flux) at its GLL points, is (1/J) M^-1 e_end (x) sJ flux
 * (the inverse mass's column of the face's end along its normal axis). Equal to the general
 * path up to round-off. k: the element's constants, J a^b [b][a] (9), 1/J, n per face (18), sJ
 * per face (6).
 * With a per-point medium the same holds where the medium is constant in the element and the
 * flux's a, b, c, d on each of its faces (galerkin_cpu.affine_constants marks those elements):
 * M_{eps_c W}^-1 = M^-1 / (J eps_c), the conductor's M_{eps_c W}^-1 M_sigma E_c = (sigma / eps_c)
 * E_c, the fluxes a S_H - alpha b n x S_E, -(c S_E + alpha d n x S_H). km: 1/(J eps_c), 1/(J mu_c)
 * (6), sigma / eps_c (3), a, b, c, d per face (24); NULL without a medium. */
#define AFFINE_CONSTANTS 34
#define MEDIUM_CONSTANTS 33
static const int U_NORMAL[6] = {1, 1, NP, NP, NP2, NP2}; /* a face's normal axis stride */

static inline void affine_rhs(const matrices_t *restrict m, const REAL *restrict k, const REAL *restrict km,
                              REAL alpha, const REAL *restrict u, const REAL *restrict sums,
                              const REAL *restrict factors, REAL *restrict out, idx_t E, idx_t e)
{
    const idx_t fs = E * NP3, ts = E * 6 * NP2;
    const REAL *ue = u + e * NP3;
    REAL *oe = out + e * NP3;
    /* each component's 1 / (J eps) (1 / (J mu)): one for all without a medium */
    REAL ic[6];
    for (int c = 0; c < 6; ++c) ic[c] = km ? km[c] : (c < 3 ? m->inv_eps * k[9] : m->inv_mu * k[9]);
    for (int kk = 0; kk < NP; ++kk)
        for (int j = 0; j < NP; ++j)
            for (int i = 0; i < NP; ++i) {
                REAL g[6][3];
                for (int f = 0; f < 6; ++f) {
                    const REAL *uf = ue + f * fs;
                    REAL gr = 0, gs = 0, gt = 0;
                    for (int l = 0; l < NP; ++l) {
                        gr += m->d[i][l] * uf[(kk * NP + j) * NP + l];
                        gs += m->d[j][l] * uf[(kk * NP + l) * NP + i];
                        gt += m->d[kk][l] * uf[(l * NP + j) * NP + i];
                    }
                    g[f][0] = gr, g[f][1] = gs, g[f][2] = gt;
                }
                REAL oe0 = 0, oe1 = 0, oe2 = 0, oh0 = 0, oh1 = 0, oh2 = 0;
                for (int b = 0; b < 3; ++b) {
                    const REAL w0 = k[b * 3], w1 = k[b * 3 + 1], w2 = k[b * 3 + 2];
                    oe0 += w1 * g[5][b] - w2 * g[4][b];
                    oe1 += w2 * g[3][b] - w0 * g[5][b];
                    oe2 += w0 * g[4][b] - w1 * g[3][b];
                    oh0 += w1 * g[2][b] - w2 * g[1][b];
                    oh1 += w2 * g[0][b] - w0 * g[2][b];
                    oh2 += w0 * g[1][b] - w1 * g[0][b];
                }
                const int p = (kk * NP + j) * NP + i;
                oe[p] = oe0 * ic[0];
                oe[p + fs] = oe1 * ic[1];
                oe[p + 2 * fs] = oe2 * ic[2];
                oe[p + 3 * fs] = -oh0 * ic[3];
                oe[p + 4 * fs] = -oh1 * ic[4];
                oe[p + 5 * fs] = -oh2 * ic[5];
            }
    if (km && (km[6] != 0 || km[7] != 0 || km[8] != 0)) /* the conductor: -(sigma / eps_c) E_c */
        for (int c = 0; c < 3; ++c)
            for (int p = 0; p < NP3; ++p) oe[c * fs + p] -= km[6 + c] * ue[c * fs + p];
    const REAL ae = m->ae, ah = m->ah;
    for (int f = 0; f < 6; ++f) {
        const REAL fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
        const int interior = fe == (REAL)1 && fh == (REAL)1;
        const int off = U_OFF[f], sa = U_SA[f], sb = U_SB[f], ns = U_NORMAL[f], end = (f & 1) ? NP - 1 : 0;
        const REAL *sm = sums + (e * 6 + f) * NP2;
        const REAL x0 = k[10 + 3 * f], x1 = k[11 + 3 * f], x2 = k[12 + 3 * f];
        /* F_E = (a S_H - alpha b n x S_E) sJ / (J eps_c), F_H = -(c S_E + alpha d n x S_H) sJ / (J mu_c)
           with a medium (EXPRESSIONS below); uniform, (S_H - alpha/Z n x S_E) sJ / (2 eps J) and
           (-S_E - alpha Z n x S_H) sJ / (2 mu J) */
#define AFFINE_FACE(...)                                                                                     \
        for (int a = 0; a < NP; ++a)                                                                         \
            for (int b = 0; b < NP; ++b) {                                                                   \
                const int v = off + a * sa + b * sb, q = a * NP + b;                                         \
                REAL jmp[6];                                                                                 \
                for (int c = 0; c < 6; ++c) {                                                                \
                    const REAL own = ue[c * fs + v];                                                         \
                    jmp[c] = interior ? 2 * own - sm[c * ts + q] : (c < 3 ? fe : fh) * own;                  \
                }                                                                                            \
                const REAL se0 = -(x1 * jmp[2] - x2 * jmp[1]), se1 = -(x2 * jmp[0] - x0 * jmp[2]),           \
                           se2 = -(x0 * jmp[1] - x1 * jmp[0]);                                               \
                const REAL sh0 = -(x1 * jmp[5] - x2 * jmp[4]), sh1 = -(x2 * jmp[3] - x0 * jmp[5]),           \
                           sh2 = -(x0 * jmp[4] - x1 * jmp[3]);                                               \
                const REAL F[6] = {__VA_ARGS__};                                                             \
                const int base = v - end * ns; /* the normal index 0 */                                      \
                for (int l = 0; l < NP; ++l) {                                                               \
                    const REAL c_l = m->mi[l][end];                                                          \
                    for (int c = 0; c < 6; ++c) oe[c * fs + base + l * ns] += c_l * F[c];                    \
                }                                                                                            \
            }
        if (km) {
            const REAL *fk = km + 9 + 4 * f, A = fk[0], B = alpha * fk[1], C = fk[2], D = alpha * fk[3];
            const REAL s0 = k[28 + f] * ic[0], s1 = k[28 + f] * ic[1], s2 = k[28 + f] * ic[2],
                       s3 = k[28 + f] * ic[3], s4 = k[28 + f] * ic[4], s5 = k[28 + f] * ic[5];
            AFFINE_FACE((A * sh0 - B * (x1 * se2 - x2 * se1)) * s0, (A * sh1 - B * (x2 * se0 - x0 * se2)) * s1,
                          (A * sh2 - B * (x0 * se1 - x1 * se0)) * s2, (-C * se0 - D * (x1 * sh2 - x2 * sh1)) * s3,
                          (-C * se1 - D * (x2 * sh0 - x0 * sh2)) * s4, (-C * se2 - D * (x0 * sh1 - x1 * sh0)) * s5);
        } else {
            const REAL he = (REAL)0.5 * m->inv_eps * k[28 + f] * k[9], hm = (REAL)0.5 * m->inv_mu * k[28 + f] * k[9];
            AFFINE_FACE((sh0 - ae * (x1 * se2 - x2 * se1)) * he, (sh1 - ae * (x2 * se0 - x0 * se2)) * he,
                          (sh2 - ae * (x0 * se1 - x1 * se0)) * he, (-se0 - ah * (x1 * sh2 - x2 * sh1)) * hm,
                          (-se1 - ah * (x2 * sh0 - x0 * sh2)) * hm, (-se2 - ah * (x0 * sh1 - x1 * sh0)) * hm);
        }
#undef AFFINE_FACE
    }
}

/* ---- rhs: out = M_W^-1 ((B + B_w) / 2 + S) on elements [first, stop) of E ----------------
 * Returns 1 when a per-thread scratch buffer could not be allocated (out is then incomplete). */
int galerkin_rhs(const REAL *u, const REAL *sums, const REAL *factors, const REAL *v, const REAL *cof,
                 const REAL *ijw, const REAL *inverse_mass_1d, const REAL *D, const REAL *normals,
                 const REAL *face_weights, const int8_t *affine, const REAL *constants,
                 const REAL *inverse_weights, const REAL *loss, const REAL *flux, const REAL *medium_affine,
                 REAL *out, idx_t E, idx_t first, idx_t stop, double eps, double mu, double alpha)
{
    /* a per-point medium (inverse_weights not NULL): eps, mu in its masses and fluxes, so 1 here;
       the closed form only with the medium's constants (where it is constant over the element) */
    const medium_t md = {inverse_weights, inverse_weights ? loss : NULL, inverse_weights ? flux : NULL,
                         inverse_weights ? medium_affine : NULL, (REAL)alpha};
    if (inverse_weights) {
        eps = mu = 1.0;
        if (!medium_affine) affine = NULL;
    }
    matrices_t *m = NULL;
    if (posix_memalign((void **)&m, 64, sizeof(matrices_t)) != 0) return 1;
    memset(m, 0, sizeof(matrices_t));
    /* the products V D and V M^-1 in double, then rounded once */
    for (int q = 0; q < NG; ++q)
        for (int p = 0; p < NP; ++p) {
            double vd = 0, a = 0;
            for (int l = 0; l < NP; ++l) {
                vd += (double)v[q * NP + l] * (double)D[l * NP + p];
                a += (double)v[q * NP + l] * (double)inverse_mass_1d[l * NP + p];
            }
            m->v[q][p] = R(m->V[q])[p] = R(m->Vt[p])[q] = v[q * NP + p];
            m->vd[q][p] = R(m->VDt[p])[q] = (REAL)vd;
            m->vvd[q][p] = R(m->VVD[q])[p] = m->v[q][p];
            m->vvd[NG + q][p] = R(m->VVD[NG + q])[p] = m->vd[q][p];
            m->a[q][p] = R(m->A[q])[p] = R(m->At[p])[q] = (REAL)a;
        }
    for (int i = 0; i < NP; ++i)
        for (int l = 0; l < NP; ++l) {
            m->d[i][l] = D[i * NP + l];
            m->mi[i][l] = inverse_mass_1d[i * NP + l];
        }
#if NG == NP
    {   /* in double from V, D, M^-1: 1 / w = diag(V M^-1 V^T) (exact mass: M = V^T W V) and
           D_G = V D V^-1 = (V D) (M^-1 V^T) W */
        double w[NG], mv[NP][NG];
        for (int p = 0; p < NP; ++p)
            for (int r = 0; r < NG; ++r) {
                double x = 0;
                for (int l = 0; l < NP; ++l) x += (double)inverse_mass_1d[p * NP + l] * (double)v[r * NP + l];
                mv[p][r] = x;
            }
        for (int q = 0; q < NG; ++q) {
            double x = 0;
            for (int p = 0; p < NP; ++p) x += (double)v[q * NP + p] * mv[p][q];
            w[q] = 1.0 / x;
            m->winv[q] = (REAL)x;
        }
        for (int q = 0; q < NG; ++q) {
            double a0 = 0, a1 = 0;
            for (int l = 0; l < NP; ++l) {
                a0 += (double)v[q * NP + l] * (double)inverse_mass_1d[l * NP];
                a1 += (double)v[q * NP + l] * (double)inverse_mass_1d[l * NP + NP - 1];
            }
            m->wa[q][0] = (REAL)(w[q] * a0);
            m->wa[q][1] = (REAL)(w[q] * a1);
            for (int r = 0; r < NG; ++r) {
                double x = 0;
                for (int p = 0; p < NP; ++p) {
                    double vd = 0;
                    for (int l = 0; l < NP; ++l) vd += (double)v[q * NP + l] * (double)D[l * NP + p];
                    x += vd * mv[p][r];
                }
                m->dg[q][r] = R(m->DG[q])[r] = R(m->DGt[r])[q] = (REAL)(x * w[r]);
            }
        }
        for (int p = 0; p < NP; ++p)
            for (int q = 0; q < NG; ++q) m->att[p][q] = m->a[q][p];
    }
#endif
    const double z = sqrt(mu / eps);
    m->inv_eps = (REAL)(1.0 / eps);
    m->inv_mu = (REAL)(1.0 / mu);
    m->ae = (REAL)(alpha / z);
    m->ah = (REAL)(alpha * z);
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
        } else {
            memset(s, 0, sizeof(scratch_t)); /* pad lanes: zero */
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (idx_t e = first; e < stop; ++e) {
            if (!s) continue;
            if (affine && affine[e]) {
                affine_rhs(m, constants + e * AFFINE_CONSTANTS, md.affine ? md.affine + e * MEDIUM_CONSTANTS : NULL,
                           md.alpha, u, sums, factors, out, E, e);
                continue;
            }
            for (int c = 0; c < 6; ++c) {
                const REAL *uc = u + c * fs + e * NP3;
                for (int k = 0; k < NP; ++k)
                    for (int j = 0; j < NP; ++j)
                        for (int i = 0; i < NP; ++i) R(s->u[c][k][j])[i] = uc[(k * NP + j) * NP + i];
            }
#if NG == NP
            square_rhs(m, &md, s, cof, ijw, sums, factors, normals, face_weights, out, E, e);
#else
            volume_load(m, s, cof, md.loss, E, e);
            face_load(m, &md, s, sums, factors, normals, face_weights, E, e, 0);
            inverse_mass(m, &md, s, ijw, out, E, e);
#endif
        }
        free(s);
    }
    free(m);
    return failed;
}

/* ---- the energy's products (WeightAdjustedOperator.energy_products) -----------------------
 * parts[c] = sum_e y . z with y = M u_c (M the exact mass, mass_1d along each axis) and
 * M_{1/J} z = y solved per component and element by conjugate gradients preconditioned by
 * sqrt(J) M^-1 sqrt(J) (root = sqrt(J) at the GLL points), until the preconditioned residual
 * falls below tolerance times its start or after `iterations` steps. The array code stops all
 * systems together at the worst one's convergence; here each stops at its own (the products
 * agree to the tolerance). Dot products in double. Returns 1 if scratch could not be had.
 * component_stride: 0 (one w/J for all six components), or E NG^3 with a per-point medium's
 * inverse weights (6, E, NG, NG, NG), w / (J eps_c), w / (J mu_c): then the products in
 * M_{eps_c W}, M_{mu_c W} (galerkin_media.py). */

static inline double dot(const vec *restrict x, const vec *restrict y)
{
    double sum = 0;
    const REAL *a = R(x), *b = R(y);
    for (int p = 0; p < NP2; ++p)
        for (int i = 0; i < NP; ++i) sum += (double)a[p * NPV + i] * (double)b[p * NPV + i];
    return sum;
}

int galerkin_energy(const REAL *u, const REAL *v, const REAL *ijw, idx_t component_stride, const REAL *mass_1d,
                    const REAL *inverse_mass_1d, const REAL *root, idx_t E, int iterations, double tolerance,
                    double *parts)
{
    matrices_t *m = NULL;
    if (posix_memalign((void **)&m, 64, sizeof(matrices_t)) != 0) return 1;
    memset(m, 0, sizeof(matrices_t));
    /* a, A, At: the interpolation V; mm, mt: the mass and its transpose's rows; mi, mit: M^-1 */
    REAL mm[NP][NP], mi[NP][NP];
    vec mt[NP][NPW], mit[NP][NPW];
    memset(mt, 0, sizeof(mt));
    memset(mit, 0, sizeof(mit));
    for (int q = 0; q < NG; ++q)
        for (int p = 0; p < NP; ++p) m->a[q][p] = R(m->A[q])[p] = R(m->At[p])[q] = v[q * NP + p];
    for (int i = 0; i < NP; ++i)
        for (int l = 0; l < NP; ++l) {
            mm[i][l] = R(mt[l])[i] = mass_1d[i * NP + l];
            mi[i][l] = R(mit[l])[i] = inverse_mass_1d[i * NP + l];
        }
    const idx_t fs = E * NP3;
    /* one row of sums per thread, added in thread order after the loop: the same bits on every
       call with a given thread count (a shared sum under a critical section adds in the order
       the threads arrive) */
#ifdef _OPENMP
    const int nthreads = omp_get_max_threads();
#else
    const int nthreads = 1;
#endif
    double *partial = calloc((size_t)nthreads * 6, sizeof(double));
    if (!partial) {
        free(m);
        return 1;
    }
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
#ifdef _OPENMP
        double *local = partial + 6 * omp_get_thread_num();
#else
        double *local = partial;
#endif
        scratch_t *s = NULL;
        if (posix_memalign((void **)&s, 64, sizeof(scratch_t)) != 0) s = NULL;
        if (!s) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        } else {
            memset(s, 0, sizeof(scratch_t));
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (idx_t e = 0; e < E; ++e) {
            if (!s) continue;
            const REAL *re = root + e * NP3;
            vec *x = &s->cg[0][0][0][0], *y = &s->cg[1][0][0][0], *z = &s->cg[2][0][0][0];
            vec *r = &s->cg[3][0][0][0], *h = &s->cg[4][0][0][0], *p = &s->cg[5][0][0][0];
            vec *ap = &s->load[0][0][0][0], *w = &s->load[1][0][0][0];
            REAL *xr = R(x), *hr = R(h), *wr = R(w);
            for (int c = 0; c < 6; ++c) {
                const REAL *uc = u + c * fs + e * NP3, *wj = ijw + c * component_stride + e * NG3;
                for (int q = 0; q < NP3; ++q) xr[q / NP * NPV + q % NP] = uc[q];
                tensor3(&mm[0][0], (const vec (*)[NPW])mt, x, y, s);
                /* h = root M^-1 (root r) */
#define PRECONDITION()                                                                      \
    do {                                                                                    \
        const REAL *rr_ = R(r);                                                             \
        for (int q = 0; q < NP3; ++q) wr[q / NP * NPV + q % NP] = re[q] * rr_[q / NP * NPV + q % NP]; \
        tensor3(&mi[0][0], (const vec (*)[NPW])mit, w, h, s);                                                   \
        for (int q = 0; q < NP3; ++q) hr[q / NP * NPV + q % NP] *= re[q];                   \
    } while (0)
                memset(z, 0, sizeof(s->cg[0]));
                memcpy(r, y, sizeof(s->cg[0]));
                PRECONDITION();
                memcpy(p, h, sizeof(s->cg[0]));
                double rh = dot(r, h);
                const double scale = sqrt(fabs(rh));
                for (int it = 0; it < iterations; ++it) {
                    sandwich(&m->a[0][0], m->A, m->At, wj, p, ap, s);
                    const double pap = dot(p, ap);
                    const REAL step = (REAL)(pap > 0 ? rh / pap : 0);
                    for (int q = 0; q < NP2 * NPW; ++q) {
                        z[q] += step * p[q];
                        r[q] -= step * ap[q];
                    }
                    PRECONDITION();
                    const double rh_new = dot(r, h);
                    if ((scale > 0 ? sqrt(fabs(rh_new)) / scale : 0) < tolerance) break;
                    const REAL beta = (REAL)(rh > 0 ? rh_new / rh : 0);
                    for (int q = 0; q < NP2 * NPW; ++q) p[q] = h[q] + beta * p[q];
                    rh = rh_new;
                }
#undef PRECONDITION
                local[c] += dot(y, z);
            }
        }
        free(s);
    }
    free(m);
    for (int c = 0; c < 6; ++c) parts[c] = 0;
    for (int t = 0; t < nthreads; ++t)
        for (int c = 0; c < 6; ++c) parts[c] += partial[6 * t + c];
    free(partial);
    return failed;
}
