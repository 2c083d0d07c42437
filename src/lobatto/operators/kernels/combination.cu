// out = sum_j c_j a_j over up to K arrays of one size (lobatto/operators/combination.py), in one
// pass: each output value is c_0 a_0 + c_1 a_1 + ... in increasing j, so its bits depend on its
// own inputs alone (never on the size or the launch). out may be one of the a_j: every value is
// read before it is written, by the same thread.

#include "common.cuh"

namespace lobatto {

template <typename T, int K>
__global__ void linear_combination_kernel(T* out, const T* a0, const T* a1, const T* a2, const T* a3, const T* a4,
                                          const T* a5, const T* a6, const T* a7, T c0, T c1, T c2, T c3, T c4, T c5,
                                          T c6, T c7, index_t size) {
    const T* a[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    const T c[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
    for (index_t p = (index_t)blockIdx.x * blockDim.x + threadIdx.x; p < size; p += (index_t)gridDim.x * blockDim.x) {
        T s = c[0] * a[0][p];
#pragma unroll
        for (int j = 1; j < K; ++j) s += c[j] * a[j][p];
        out[p] = s;
    }
}

}  // namespace lobatto

#define LOBATTO_COMBINATION_INSTANTIATE(T, K)                                                          \
    template __global__ void lobatto::linear_combination_kernel<T, K>(                                 \
        T*, const T*, const T*, const T*, const T*, const T*, const T*, const T*, const T*, T, T, T, T, T, T, T, T, \
        lobatto::index_t);
