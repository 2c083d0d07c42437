/* Local (on-rank) gather-scatter kernels for lobatto.comm: the NumPy take / reduceat /
 * fancy-index scatter of comm/local.py in one pass, for float64 (_f64) and float32 (_f32).
 *
 * u is (vn, n) C-contiguous; perm lists point indices grouped by id, group g occupying
 * perm[starts[g] : starts[g+1]] (the last group ends at nperm).  op: 0 sum, 1 prod,
 * 2 min, 3 max.  Compiled once (no order specialisation) by lobatto/jit/c.py.
 */
#include <stdint.h>

typedef int64_t idx_t;

#define COMBINE(op, acc, x)                                   \
    do {                                                      \
        switch (op) {                                         \
        case 0: acc = acc + (x); break;                       \
        case 1: acc = acc * (x); break;                       \
        case 2: acc = (x) < acc ? (x) : acc; break;           \
        default: acc = (x) > acc ? (x) : acc; break;          \
        }                                                     \
    } while (0)

#define DEFINE_GS(SUFFIX, REAL)                                                               \
    /* In place: every point of every group gets the op over its group. */                    \
    void gs_combine_##SUFFIX(REAL *u, idx_t vn, idx_t n, const idx_t *perm, const idx_t *starts, \
                             idx_t ngroups, idx_t nperm, int op)                              \
    {                                                                                         \
        for (idx_t g = 0; g < ngroups; ++g) {                                                 \
            const idx_t s = starts[g], t = g + 1 < ngroups ? starts[g + 1] : nperm;          \
            if (op == 0 && t - s == 2) { /* the common case: a face point and its twin */     \
                const idx_t p = perm[s], q = perm[s + 1];                                     \
                for (idx_t v = 0; v < vn; ++v) {                                              \
                    REAL *row = u + v * n;                                                    \
                    const REAL x = row[p] + row[q];                                           \
                    row[p] = x;                                                               \
                    row[q] = x;                                                               \
                }                                                                             \
                continue;                                                                     \
            }                                                                                 \
            for (idx_t v = 0; v < vn; ++v) {                                                  \
                REAL *row = u + v * n;                                                        \
                REAL acc = row[perm[s]];                                                      \
                for (idx_t m = s + 1; m < t; ++m) COMBINE(op, acc, row[perm[m]]);             \
                for (idx_t m = s; m < t; ++m) row[perm[m]] = acc;                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    /* compact[v, g] = op over group g of u[v, :] (compact is (vn, ngroups)). */              \
    void gs_gather_##SUFFIX(const REAL *u, idx_t vn, idx_t n, const idx_t *perm,              \
                            const idx_t *starts, idx_t ngroups, idx_t nperm, int op,          \
                            REAL *compact)                                                    \
    {                                                                                         \
        for (idx_t v = 0; v < vn; ++v) {                                                      \
            const REAL *row = u + v * n;                                                      \
            REAL *out = compact + v * ngroups;                                                \
            for (idx_t g = 0; g < ngroups; ++g) {                                             \
                const idx_t s = starts[g], t = g + 1 < ngroups ? starts[g + 1] : nperm;      \
                REAL acc = row[perm[s]];                                                      \
                for (idx_t m = s + 1; m < t; ++m) COMBINE(op, acc, row[perm[m]]);             \
                out[g] = acc;                                                                 \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    /* u[v, dest[m]] = values[v, src[m]] (values is (vn, nvalues)). */                        \
    void gs_scatter_##SUFFIX(const REAL *values, idx_t nvalues, REAL *u, idx_t vn, idx_t n,   \
                             const idx_t *dest, const idx_t *src, idx_t m)                    \
    {                                                                                         \
        for (idx_t v = 0; v < vn; ++v) {                                                      \
            const REAL *val = values + v * nvalues;                                           \
            REAL *row = u + v * n;                                                            \
            for (idx_t x = 0; x < m; ++x) row[dest[x]] = val[src[x]];                         \
        }                                                                                     \
    }

DEFINE_GS(f64, double)
DEFINE_GS(f32, float)
