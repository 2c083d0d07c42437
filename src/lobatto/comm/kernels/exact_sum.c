/* Exact sums of per-element partial sums (lobatto/comm/exact_sum.py), for NumPy float64.
 *
 * exact_rows_f64(u, v, w, rows, points, wrows, mode, acc): for each row r (an element's
 * `points` values) the partial s_r = sum_j x_j with x = u (mode 0), u v (mode 1) or u v w
 * (mode 2, w's row r % wrows), in a fixed order (four interleaved running sums, then
 * (s0 + s1) + (s2 + s3)): it depends on the row's values alone. Each s_r is added exactly
 * into acc: chunk k holds bits [32 k, 32 k + 32) of s_r * 2^BIAS as an integer, and three
 * counters after the CHUNKS chunks count NaN, +inf and -inf. Integers add exactly, so acc
 * summed over ranks does not depend on the partition. Compiled by lobatto/jit/c.py.
 */
#include <math.h>
#include <stdint.h>

#define CHUNKS 68
#define BIAS 1126

static void carry(int64_t *acc)
{
    for (int k = 0; k + 1 < CHUNKS; ++k) {
        const int64_t c = acc[k] >> 32; /* floor */
        acc[k] -= c * ((int64_t)1 << 32);
        acc[k + 1] += c;
    }
}

static void add_term(int64_t *acc, double s)
{
    if (s == 0.0) return;
    if (!isfinite(s)) {
        acc[CHUNKS + (isnan(s) ? 0 : (s > 0 ? 1 : 2))] += 1;
        return;
    }
    int e;
    const double m = frexp(s, &e);
    const int64_t whole = (int64_t)(m * 9007199254740992.0); /* 2^53: exact */
    const int64_t sign = whole < 0 ? -1 : 1;
    const uint64_t a = (uint64_t)(whole < 0 ? -whole : whole);
    const int shift = e + BIAS - 53, k = shift >> 5, r = shift & 31;
    const uint64_t low = (a & 0xFFFFFFFFu) << r, high = (a >> 32) << r;
    acc[k] += sign * (int64_t)(low & 0xFFFFFFFFu);
    acc[k + 1] += sign * (int64_t)((low >> 32) + (high & 0xFFFFFFFFu));
    acc[k + 2] += sign * (int64_t)(high >> 32);
}

void exact_rows_f64(const double *u, const double *v, const double *w, int64_t rows, int64_t points,
                    int64_t wrows, int mode, int64_t *acc)
{
    for (int64_t r = 0; r < rows; ++r) {
        const double *x = u + r * points;
        const double *y = v + r * points;
        const double *q = w + (r % wrows) * points;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int64_t j = 0;
        if (mode == 0) {
            for (; j + 4 <= points; j += 4) { s0 += x[j]; s1 += x[j + 1]; s2 += x[j + 2]; s3 += x[j + 3]; }
            for (; j < points; ++j) s0 += x[j];
        } else if (mode == 1) {
            for (; j + 4 <= points; j += 4) {
                s0 += x[j] * y[j]; s1 += x[j + 1] * y[j + 1]; s2 += x[j + 2] * y[j + 2]; s3 += x[j + 3] * y[j + 3];
            }
            for (; j < points; ++j) s0 += x[j] * y[j];
        } else {
            for (; j + 4 <= points; j += 4) {
                s0 += x[j] * y[j] * q[j]; s1 += x[j + 1] * y[j + 1] * q[j + 1];
                s2 += x[j + 2] * y[j + 2] * q[j + 2]; s3 += x[j + 3] * y[j + 3] * q[j + 3];
            }
            for (; j < points; ++j) s0 += x[j] * y[j] * q[j];
        }
        add_term(acc, (s0 + s1) + (s2 + s3));
        if ((r & 0xFFFFF) == 0xFFFFF) carry(acc); /* each row adds < 2^33 per chunk */
    }
    carry(acc);
}
