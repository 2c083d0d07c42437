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
