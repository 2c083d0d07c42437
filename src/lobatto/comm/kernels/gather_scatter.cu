// Local gather-scatter kernels on the GPU (lobatto/comm/local_cuda.py).
//
//   gs_take<T, I>          out[v, c] = u[v, idx[c]]                       (columns of a 2-D array)
//   gs_gather<T, I, OP>    out[v, g] = OP over u[v, starts[g] : starts[g+1]]  (last run ends at m)
//   gs_scatter<T, I, J>    u[v, dest[q]] = vals[v, src[q]]
//   gs_combine<T, I, J, OP>  in place: u[v, perm[q]] = OP over its group, q in a group (serial, one pass)
//
// 2-D arrays are (vn, m) with unit column stride and a row stride given in elements.
// One thread per column (grid-stride), looping over the vn rows, so each index is read once.
// OP: 0 sum, 1 prod, 2 min, 3 max (NumPy semantics: min/max propagate NaN).

#include "common.cuh"

namespace lobatto {

template <int OP, typename T>
__device__ __forceinline__ T gs_op(T x, T y) {
    if (OP == 0) return x + y;
    if (OP == 1) return x * y;
    if (OP == 2) return (x != x || x < y) ? x : y;
    return (x != x || x > y) ? x : y;
}

template <typename T, typename I>
__global__ void gs_take(const T* LOBATTO_RESTRICT u, index_t ustride, const I* LOBATTO_RESTRICT idx, index_t m,
                        int vn, T* LOBATTO_RESTRICT out) {
    for (index_t c = (index_t)blockIdx.x * blockDim.x + threadIdx.x; c < m; c += (index_t)gridDim.x * blockDim.x) {
        const index_t col = (index_t)idx[c];
        for (int v = 0; v < vn; ++v) out[v * m + c] = u[v * ustride + col];
    }
}

template <typename T, typename I, int OP>
__global__ void gs_gather(const T* LOBATTO_RESTRICT us, index_t ustride, index_t m, const I* LOBATTO_RESTRICT starts,
                          index_t groups, int vn, T* LOBATTO_RESTRICT out) {
    for (index_t g = (index_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
         g += (index_t)gridDim.x * blockDim.x) {
        const index_t s = (index_t)starts[g];
        const index_t t = (g + 1 < groups) ? (index_t)starts[g + 1] : m;
        for (int v = 0; v < vn; ++v) {
            const T* row = us + v * ustride;
            T acc = row[s];
            for (index_t q = s + 1; q < t; ++q) acc = gs_op<OP, T>(acc, row[q]);
            out[v * groups + g] = acc;
        }
    }
}

template <typename T, typename I, typename J>
__global__ void gs_scatter(const T* LOBATTO_RESTRICT vals, index_t vstride, T* LOBATTO_RESTRICT u, index_t ustride,
                           const I* LOBATTO_RESTRICT dest, const J* LOBATTO_RESTRICT src, index_t count, int vn) {
    for (index_t q = (index_t)blockIdx.x * blockDim.x + threadIdx.x; q < count;
         q += (index_t)gridDim.x * blockDim.x) {
        const index_t d = (index_t)dest[q];
        const index_t s = (index_t)src[q];
        for (int v = 0; v < vn; ++v) u[v * ustride + d] = vals[v * vstride + s];
    }
}

// In place, one pass (serial gather-scatter): every point of group g gets the group's OP.
template <typename T, typename I, typename J, int OP>
__global__ void gs_combine(T* LOBATTO_RESTRICT u, index_t ustride, const I* LOBATTO_RESTRICT perm,
                           const J* LOBATTO_RESTRICT starts, index_t groups, index_t m, int vn) {
    for (index_t g = (index_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
         g += (index_t)gridDim.x * blockDim.x) {
        const index_t s = (index_t)starts[g];
        const index_t t = (g + 1 < groups) ? (index_t)starts[g + 1] : m;
        for (int v = 0; v < vn; ++v) {
            T* row = u + v * ustride;
            T acc = row[(index_t)perm[s]];
            for (index_t q = s + 1; q < t; ++q) acc = gs_op<OP, T>(acc, row[(index_t)perm[q]]);
            for (index_t q = s; q < t; ++q) row[(index_t)perm[q]] = acc;
        }
    }
}

}  // namespace lobatto

#define LOBATTO_GS_INSTANTIATE(T, I)                                                                          \
    template __global__ void lobatto::gs_take<T, I>(const T*, lobatto::index_t, const I*, lobatto::index_t,  \
                                                    int, T*);                                                \
    template __global__ void lobatto::gs_gather<T, I, 0>(const T*, lobatto::index_t, lobatto::index_t,      \
                                                         const I*, lobatto::index_t, int, T*);               \
    template __global__ void lobatto::gs_gather<T, I, 3>(const T*, lobatto::index_t, lobatto::index_t,      \
                                                         const I*, lobatto::index_t, int, T*);               \
    template __global__ void lobatto::gs_scatter<T, I, I>(const T*, lobatto::index_t, T*, lobatto::index_t,  \
                                                          const I*, const I*, lobatto::index_t, int);       \
    template __global__ void lobatto::gs_combine<T, I, I, 0>(T*, lobatto::index_t, const I*, const I*,        \
                                                             lobatto::index_t, lobatto::index_t, int);       \
    template __global__ void lobatto::gs_combine<T, I, I, 2>(T*, lobatto::index_t, const I*, const I*,        \
                                                             lobatto::index_t, lobatto::index_t, int);
