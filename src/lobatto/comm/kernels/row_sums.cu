// Per-row sums in a fixed order (lobatto/comm/exact_sum.py: row_sums), for sums over ranks
// that do not depend on the partition.
//
//   row_sums<T>(x, w, rows, points, wrows, weighted, out)
//       out[r] = sum over j < points of x[r, j] (* w[r % wrows, j] when weighted)
//
// One warp per row: lane l adds x[r, l], x[r, l + 32], ... in turn, then a fixed shuffle tree
// adds the 32 lane sums. The order depends on `points` alone, never on the number of rows or
// on where the row lies, so a row (an element) sums to the same bits on every partition.

#include "common.cuh"

namespace lobatto {

template <typename T>
__global__ void row_sums(const T* LOBATTO_RESTRICT x, const T* LOBATTO_RESTRICT w, index_t rows, index_t points,
                         index_t wrows, int weighted, T* LOBATTO_RESTRICT out) {
    const index_t row = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;  // the whole warp leaves together
    const T* r = x + row * points;
    const T* q = w + (row % wrows) * points;
    T s = 0;
    if (weighted) {
        for (index_t j = lane; j < points; j += 32) s += r[j] * q[j];
    } else {
        for (index_t j = lane; j < points; j += 32) s += r[j];
    }
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) out[row] = s;
}

template __global__ void row_sums<double>(const double*, const double*, index_t, index_t, index_t, int, double*);
template __global__ void row_sums<float>(const float*, const float*, index_t, index_t, index_t, int, float*);

}  // namespace lobatto

// exact_rows<T>(u, v, w, rows, points, wrows, mode, acc): the row sums above of u (mode 0),
// u v (1) or u v w (2), each added exactly into the integer accumulator acc of
// comm/exact_sum.py (68 chunks of 32 bits of s * 2^1126, then NaN, +inf, -inf counts) by
// integer atomics: exact, so in any order. acc is int64 (two's complement: an unsigned
// atomic add of a negative value is its signed add).
namespace lobatto {

__device__ __forceinline__ void exact_add(unsigned long long* acc, double s) {
    if (s == 0.0) return;
    if (!isfinite(s)) {
        atomicAdd(acc + 68 + (isnan(s) ? 0 : (s > 0 ? 1 : 2)), 1ull);
        return;
    }
    int e;
    const double m = frexp(s, &e);
    const long long whole = (long long)(m * 9007199254740992.0);
    const long long sign = whole < 0 ? -1 : 1;
    const unsigned long long a = (unsigned long long)(whole < 0 ? -whole : whole);
    const int shift = e + 1126 - 53, k = shift >> 5, r = shift & 31;
    const unsigned long long low = (a & 0xFFFFFFFFull) << r, high = (a >> 32) << r;
    atomicAdd(acc + k, (unsigned long long)(sign * (long long)(low & 0xFFFFFFFFull)));
    atomicAdd(acc + k + 1, (unsigned long long)(sign * (long long)((low >> 32) + (high & 0xFFFFFFFFull))));
    atomicAdd(acc + k + 2, (unsigned long long)(sign * (long long)(high >> 32)));
}

template <typename T>
__global__ void exact_rows(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT v, const T* LOBATTO_RESTRICT w,
                           index_t rows, index_t points, index_t wrows, int mode, unsigned long long* acc) {
    const index_t row = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* x = u + row * points;
    const T* y = v + row * points;
    const T* q = w + (row % wrows) * points;
    T s = 0;
    if (mode == 0) {
        for (index_t j = lane; j < points; j += 32) s += x[j];
    } else if (mode == 1) {
        for (index_t j = lane; j < points; j += 32) s += x[j] * y[j];
    } else {
        for (index_t j = lane; j < points; j += 32) s += x[j] * y[j] * q[j];
    }
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) exact_add(acc, (double)s);
}

template __global__ void exact_rows<double>(const double*, const double*, const double*, index_t, index_t, index_t,
                                            int, unsigned long long*);
template __global__ void exact_rows<float>(const float*, const float*, const float*, index_t, index_t, index_t, int,
                                           unsigned long long*);

}  // namespace lobatto
