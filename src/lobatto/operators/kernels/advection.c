/* Compiled CPU kernel of the dealiased convective term's application (wrapped by
 * lobatto.operators.advection_cpu; the reference is advection.py's ``advection_apply``).
 *
 * Specialised at compile time on the GLL points per direction (NQ), the Gauss points of the
 * fine grid (NM) and the floating-point type:
 *     cc -O3 -march=native -shared -fPIC -fopenmp -DNQ=6 -DNM=9 -DREAL=double advection.c
 *
 * For every element and field f (all arrays C order, axes [k, j, i] with i fastest):
 *     out = I^T [ U_r (ID x I x I) f + U_s (I x ID x I) f + U_t (I x I x ID) f ]
 * with I (NM, NQ) the interpolation to the Gauss points and ID = I D; the three fine
 * derivatives share their first passes (I f and ID f along i, then along j). Layouts:
 *     U   : (3, E, NM, NM, NM)     fields, out : (K, E, NQ, NQ, NQ)
 *     it  : (NQ, NM) = I^T         idt : (NQ, NM) = ID^T
 * Elements are independent: an OpenMP `parallel for` over elements; each keeps its passes
 * (about 7 NM^2 NQ + NM^3 values) on the stack, so NQ <= 16 (the wrapper checks).
 */
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef NQ
#error "compile with -DNQ=<GLL points per direction>"
#endif
#ifndef NM
#error "compile with -DNM=<Gauss points per direction>"
#endif
#ifndef REAL
#define REAL double
#endif

#define NQ2 (NQ * NQ)
#define NQ3 (NQ * NQ * NQ)
#define NM2 (NM * NM)
#define NM3 (NM * NM * NM)

typedef int64_t idx_t;

int lobatto_nq(void) { return NQ; }
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

static void one(const REAL *restrict f, const REAL *restrict ur, const REAL *restrict us,
                const REAL *restrict ut, const REAL *restrict it, const REAL *restrict idt,
                REAL *restrict out)
{
    REAL ai[NQ2 * NM], bi[NQ2 * NM];             /* [k][j][a]: I and ID along i */
    REAL bj[NQ * NM2], adj[NQ * NM2], aj[NQ * NM2]; /* [k][b][a]: then along j */
    REAL p[NM3];                                  /* [c][b][a]: the fine product */
    REAL q1[NM2 * NQ], q2[NM * NQ2];              /* back: [c][b][i], [c][j][i] */
    for (int kj = 0; kj < NQ2; kj++) {
        REAL *a = ai + kj * NM, *b = bi + kj * NM;
        for (int x = 0; x < NM; x++) a[x] = b[x] = 0;
        for (int l = 0; l < NQ; l++) {
            const REAL v = f[kj * NQ + l];
            for (int x = 0; x < NM; x++) {
                a[x] += it[l * NM + x] * v;
                b[x] += idt[l * NM + x] * v;
            }
        }
    }
    for (int k = 0; k < NQ; k++) {
        for (int y = 0; y < NM; y++) {
            REAL *o1 = bj + (k * NM + y) * NM, *o2 = adj + (k * NM + y) * NM, *o3 = aj + (k * NM + y) * NM;
            for (int x = 0; x < NM; x++) o1[x] = o2[x] = o3[x] = 0;
            for (int l = 0; l < NQ; l++) {
                const REAL cy = it[l * NM + y], dy = idt[l * NM + y];
                const REAL *a = ai + (k * NQ + l) * NM, *b = bi + (k * NQ + l) * NM;
                for (int x = 0; x < NM; x++) {
                    o1[x] += cy * b[x];
                    o2[x] += dy * a[x];
                    o3[x] += cy * a[x];
                }
            }
        }
    }
    for (int z = 0; z < NM; z++) {
        REAL r[NM2], s[NM2], t[NM2];
        for (int yx = 0; yx < NM2; yx++) r[yx] = s[yx] = t[yx] = 0;
        for (int l = 0; l < NQ; l++) {
            const REAL cz = it[l * NM + z], dz = idt[l * NM + z];
            const REAL *b = bj + l * NM2, *ad = adj + l * NM2, *a = aj + l * NM2;
            for (int yx = 0; yx < NM2; yx++) {
                r[yx] += cz * b[yx];
                s[yx] += cz * ad[yx];
                t[yx] += dz * a[yx];
            }
        }
        const REAL *u0 = ur + z * NM2, *u1 = us + z * NM2, *u2 = ut + z * NM2;
        REAL *pz = p + z * NM2;
        for (int yx = 0; yx < NM2; yx++) pz[yx] = u0[yx] * r[yx] + u1[yx] * s[yx] + u2[yx] * t[yx];
    }
    /* back to the GLL points: I^T along i, then j, then k */
    for (int zy = 0; zy < NM2; zy++) {
        const REAL *pz = p + zy * NM;
        for (int i = 0; i < NQ; i++) {
            REAL sum = 0;
            for (int x = 0; x < NM; x++) sum += it[i * NM + x] * pz[x];
            q1[zy * NQ + i] = sum;
        }
    }
    for (int z = 0; z < NM; z++) {
        for (int j = 0; j < NQ; j++) {
            REAL *o = q2 + (z * NQ + j) * NQ;
            for (int i = 0; i < NQ; i++) o[i] = 0;
            for (int y = 0; y < NM; y++) {
                const REAL c = it[j * NM + y];
                const REAL *q = q1 + (z * NM + y) * NQ;
                for (int i = 0; i < NQ; i++) o[i] += c * q[i];
            }
        }
    }
    for (int k = 0; k < NQ; k++) {
        REAL *o = out + k * NQ2;
        for (int ji = 0; ji < NQ2; ji++) o[ji] = 0;
        for (int z = 0; z < NM; z++) {
            const REAL c = it[k * NM + z];
            const REAL *q = q2 + z * NQ2;
            for (int ji = 0; ji < NQ2; ji++) o[ji] += c * q[ji];
        }
    }
}

void advection_apply(const REAL *restrict u, const REAL *restrict fields, const REAL *restrict it,
                     const REAL *restrict idt, REAL *restrict out, idx_t elements, idx_t count)
{
#pragma omp parallel for schedule(static)
    for (idx_t e = 0; e < elements; e++) {
        const REAL *ur = u + e * NM3, *us = u + (elements + e) * NM3, *ut = u + (2 * elements + e) * NM3;
        for (idx_t c = 0; c < count; c++)
            one(fields + (c * elements + e) * NQ3, ur, us, ut, it, idt, out + (c * elements + e) * NQ3);
    }
}
