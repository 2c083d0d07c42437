// A matrix applied along one axis of a tensor-product field, for CuPy arrays
// (lobatto/discretization/tensor.py: along):
//
//   out[a, j, c] = sum_{l < n} d[j, l] u[a, l, c]      u (A, n, C), d (m, n), out (A, m, C)
//
// One thread per output value, the sum over l in increasing order: a value's bits depend on
// its own inputs alone, never on A (an element count). cuBLAS, which CuPy's matmul calls,
// picks its kernel (and so its summation order, tensor cores or not) by the array's size,
// so a rank's share of the elements would round differently from the whole mesh.

#include "common.cuh"

namespace lobatto {

template <typename T>
__global__ void along_axis(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT d, T* LOBATTO_RESTRICT out,
                           index_t outer, int m, int n, index_t inner) {
    const index_t total = outer * m * inner;
    for (index_t t = (index_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (index_t)gridDim.x * blockDim.x) {
        const index_t c = t % inner;
        const index_t rest = t / inner;
        const int j = (int)(rest % m);
        const index_t a = rest / m;
        const T* x = u + a * n * inner + c;
        const T* row = d + (index_t)j * n;
        T s = row[0] * x[0];
        for (int l = 1; l < n; ++l) s += row[l] * x[l * inner];
        out[t] = s;
    }
}

template __global__ void along_axis<double>(const double*, const double*, double*, index_t, int, int, index_t);
template __global__ void along_axis<float>(const float*, const float*, float*, index_t, int, int, index_t);

}  // namespace lobatto
