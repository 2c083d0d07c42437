// Tuned CUDA kernels of fused differential operators (lobatto/operators/differential.py):
//
//   curl:                        out = curl v                 (MASS: B curl v)
//   weak_divergence_minus_curl:  out = sum_b D_b^T [B sum_a (d r_b / d x_a) (f_a - nu (curl w)_a)]
//   mass_minus_gradient:         out = B (f - grad p)
//
// Layouts (C order): fields (k, E, n, n, n) with axes [k, j, i], i fastest; metrics
// (3, 3, E, n, n, n) with [b, a] = d r_b / d x_a; mass (E, n, n, n); D (n, n), D[i][l] = h_l'(x_i).
//
// A block owns EPB consecutive elements; thread (x = i + n j, y = element of the block) owns
// the column (:, j, i) of its element. The differentiated fields of an element are staged in
// shared memory (every value read from device memory once, coalesced along i); the metric terms,
// mass and the other inputs are read once at the point that uses them, and each output is
// written once. weak_divergence_minus_curl keeps the three fluxes of its column in registers
// until every thread has finished reading the curl's inputs, then reuses that shared memory
// for the fluxes' transposed derivatives.
//
// Every value is summed in the reference's order (the derivatives' l from 0 up, the chain
// rule b = 0, 1, 2, the weak divergence's r + s + t): what changes from the reference's
// rounding is only the compiler's fused multiply-adds, and nothing depends on E.

#include "common.cuh"

namespace lobatto {

// sum_l D[x][l] s[... l ...] for the three reference directions at (k, j, i) of one element
template <int N, typename T>
__device__ __forceinline__ void reference_derivatives(const T* s, const T* sD, int k, int j, int i, T& ur, T& us,
                                                      T& ut) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, RS = Dims<N>::RS;
    ur = sD[i * RS] * s[k * n2 + j * n];
    us = sD[j * RS] * s[k * n2 + i];
    ut = sD[k * RS] * s[j * n + i];
#pragma unroll
    for (int l = 1; l < n; ++l) {
        ur += sD[i * RS + l] * s[k * n2 + j * n + l];
        us += sD[j * RS + l] * s[k * n2 + l * n + i];
        ut += sD[k * RS + l] * s[l * n2 + j * n + i];
    }
}

// (d v / d x_a) = sum_b m[b][a] (d v / d r_b), the reference's order b = 0, 1, 2
template <typename T>
__device__ __forceinline__ T chain(const T (&m)[9], int a, T ur, T us, T ut) {
    return m[a] * ur + m[3 + a] * us + m[6 + a] * ut;
}

template <int N, typename T>
__device__ __forceinline__ void curl_at(const T* sv, const T* sD, const T (&m)[9], int k, int j, int i, T (&c)[3]) {
    constexpr int n3 = Dims<N>::n3;
    T r[3][3];  // [component][direction]
#pragma unroll
    for (int f = 0; f < 3; ++f) reference_derivatives<N>(sv + f * n3, sD, k, j, i, r[f][0], r[f][1], r[f][2]);
    // curl = (d2/dy - d1/dz, d0/dz - d2/dx, d1/dx - d0/dy), d_c/dx_a = chain(m, a, r[c])
    c[0] = chain(m, 1, r[2][0], r[2][1], r[2][2]) - chain(m, 2, r[1][0], r[1][1], r[1][2]);
    c[1] = chain(m, 2, r[0][0], r[0][1], r[0][2]) - chain(m, 0, r[2][0], r[2][1], r[2][2]);
    c[2] = chain(m, 0, r[1][0], r[1][1], r[1][2]) - chain(m, 1, r[0][0], r[0][1], r[0][2]);
}

template <int N, typename T, int EPB, int FIELDS>
__device__ __forceinline__ T* stage(const T* LOBATTO_RESTRICT in, const T* LOBATTO_RESTRICT D, unsigned char* raw,
                                    index_t E, index_t e, bool active, T*& sD) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3, RS = Dims<N>::RS;
    sD = reinterpret_cast<T*>(raw);
    const int t = threadIdx.x, el = threadIdx.y;
    for (int p = t + el * n2; p < n2; p += n2 * EPB) sD[(p / n) * RS + p % n] = D[p];
    T* s = sD + n * RS + el * FIELDS * n3;
#pragma unroll
    for (int f = 0; f < FIELDS; ++f) {
        const index_t base = ((index_t)f * E + e) * n3 + t;
#pragma unroll
        for (int k = 0; k < n; ++k) s[f * n3 + k * n2 + t] = active ? in[base + k * n2] : T(0);
    }
    __syncthreads();
    return s;
}

template <typename T>
__device__ __forceinline__ void load_metrics(const T* LOBATTO_RESTRICT metrics, index_t stride, index_t p, T (&m)[9]) {
#pragma unroll
    for (int q = 0; q < 9; ++q) m[q] = metrics[p + q * stride];
}

template <int N, typename T, bool MASS, int EPB>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
curl_kernel(const T* LOBATTO_RESTRICT v, const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
            const T* LOBATTO_RESTRICT D, T* LOBATTO_RESTRICT out, index_t E) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    const T* sv = stage<N, T, EPB, 3>(v, D, smem_raw, E, e, active, sD);
    if (!active) return;  // no barrier below
    const int t = threadIdx.x, i = t % n, j = t / n;
    const index_t stride = E * n3;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {
        const index_t p = e * n3 + k * n2 + t;
        T m[9], c[3];
        load_metrics(metrics, stride, p, m);
        curl_at<N>(sv, sD, m, k, j, i, c);
        if (MASS) {
            const T w = mass[p];
#pragma unroll
            for (int a = 0; a < 3; ++a) c[a] *= w;
        }
#pragma unroll
        for (int a = 0; a < 3; ++a) out[p + a * stride] = c[a];
    }
}

template <int N, typename T, int EPB>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
weak_divergence_minus_curl_kernel(const T* LOBATTO_RESTRICT forcing, const T* LOBATTO_RESTRICT w,
                                  const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
                                  const T* LOBATTO_RESTRICT D, T* LOBATTO_RESTRICT out, T nu, index_t E) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3, RS = Dims<N>::RS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    T* sw = stage<N, T, EPB, 3>(w, D, smem_raw, E, e, active, sD);
    const int t = threadIdx.x, i = t % n, j = t / n;
    const index_t stride = E * n3;
    T flux[3][n];
#pragma unroll
    for (int k = 0; k < n; ++k) {
        flux[0][k] = flux[1][k] = flux[2][k] = T(0);
        if (active) {
            const index_t p = e * n3 + k * n2 + t;
            T m[9], c[3], f[3];
            load_metrics(metrics, stride, p, m);
            curl_at<N>(sw, sD, m, k, j, i, c);
#pragma unroll
            for (int a = 0; a < 3; ++a) f[a] = forcing[p + a * stride] - nu * c[a];
            const T b = mass[p];
#pragma unroll
            for (int r = 0; r < 3; ++r) flux[r][k] = b * (m[3 * r] * f[0] + m[3 * r + 1] * f[1] + m[3 * r + 2] * f[2]);
        }
    }
    __syncthreads();  // every thread is done with the curl's inputs
#pragma unroll
    for (int r = 0; r < 3; ++r) {
#pragma unroll
        for (int k = 0; k < n; ++k) sw[r * n3 + k * n2 + t] = flux[r][k];
    }
    __syncthreads();
    if (!active) return;
    const T* s0 = sw;
    const T* s1 = sw + n3;
    const T* s2 = sw + 2 * n3;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {  // D^T along each direction: sum_l D[l][x] flux[... l ...]
        T sr = sD[i] * s0[k * n2 + j * n];
        T ss = sD[j] * s1[k * n2 + i];
        T st = sD[k] * s2[j * n + i];
#pragma unroll
        for (int l = 1; l < n; ++l) {
            sr += sD[l * RS + i] * s0[k * n2 + j * n + l];
            ss += sD[l * RS + j] * s1[k * n2 + l * n + i];
            st += sD[l * RS + k] * s2[l * n2 + j * n + i];
        }
        out[e * n3 + k * n2 + t] = sr + ss + st;
    }
}

template <int N, typename T, int EPB>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
mass_minus_gradient_kernel(const T* LOBATTO_RESTRICT forcing, const T* LOBATTO_RESTRICT pressure,
                           const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
                           const T* LOBATTO_RESTRICT D, T* LOBATTO_RESTRICT out, index_t E) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    const T* sp = stage<N, T, EPB, 1>(pressure, D, smem_raw, E, e, active, sD);
    if (!active) return;
    const int t = threadIdx.x, i = t % n, j = t / n;
    const index_t stride = E * n3;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {
        const index_t p = e * n3 + k * n2 + t;
        T m[9], pr, ps, pt;
        load_metrics(metrics, stride, p, m);
        reference_derivatives<N>(sp, sD, k, j, i, pr, ps, pt);
        const T b = mass[p];
#pragma unroll
        for (int a = 0; a < 3; ++a) out[p + a * stride] = (forcing[p + a * stride] - chain(m, a, pr, ps, pt)) * b;
    }
}

}  // namespace lobatto

// Explicit instantiation (nvcc compile test); NVRTC instantiates by name expression.
#define LOBATTO_DIFFERENTIAL_INSTANTIATE(N, T, EPB)                                                      \
    template __global__ void lobatto::curl_kernel<N, T, true, EPB>(const T*, const T*, const T*, const T*, T*,   \
                                                                   lobatto::index_t);                     \
    template __global__ void lobatto::curl_kernel<N, T, false, EPB>(const T*, const T*, const T*, const T*, T*,  \
                                                                    lobatto::index_t);                    \
    template __global__ void lobatto::weak_divergence_minus_curl_kernel<N, T, EPB>(                       \
        const T*, const T*, const T*, const T*, const T*, T*, T, lobatto::index_t);                       \
    template __global__ void lobatto::mass_minus_gradient_kernel<N, T, EPB>(const T*, const T*, const T*,  \
                                                                           const T*, const T*, T*,        \
                                                                           lobatto::index_t);
