// Tuned CUDA kernel of the Helmholtz operator (nekRS's axhelm, the CEED bake-off's BK5).
//
//   out = h1 * [Dr^T Ds^T Dt^T] G [Dr Ds Dt]^T u + h2 * mass * u      (MASS false: no h2 term)
//
// Same semantics as the reference in lobatto/operators/helmholtz.py. Layouts (C order):
//   u, out, mass : (E, n, n, n)      axes [k, j, i], i fastest
//   g            : (6, E, n, n, n)   rr rs rt ss st tt
//   D            : (n, n)            D[i][l] = h_l'(x_i)
// The template parameter D (the mesh dimension, default 3) = 2 takes a 2-D mesh's thin
// arrays: u, out, mass (E, 1, n, n), g (3, E, 1, n, n) rr rs ss; one plane, no t derivative.
//
// A block owns EPB consecutive elements; thread (x = i + n j, y = element of the block) owns
// the column (:, j, i) of its element, with u and the result of that column in registers.
// For each plane k: the plane of u goes to shared memory; the t-derivative comes from the
// registers, r and s from the shared plane; the thread applies G at its point, keeps the t
// part in registers (Dt^T adds it to every plane of the column at once) and puts the r and s
// parts in shared memory, from which Dr^T and Ds^T give the plane's result. So every value
// of u, G, mass and out crosses device memory once (the 72-byte-per-point model of
// HelmholtzOperator.bytes_per_point), coalesced along i.

#include "common.cuh"

namespace lobatto {

template <int N, typename T, bool MASS, int EPB, int D = 3>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
helmholtz_apply_kernel(const T* LOBATTO_RESTRICT u, T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT g,
                       const T* LOBATTO_RESTRICT mass, const T* LOBATTO_RESTRICT D_, T h1, T h2, index_t E) {
    static_assert(D == 2 || D == 3, "D is the mesh dimension, 2 or 3");
    constexpr int n = Dims<N>::n;
    constexpr int n2 = Dims<N>::n2;
    constexpr int nz = D == 3 ? n : 1;  // 2-D: the k axis has one point
    constexpr int npe = nz * n2;        // points per element
    constexpr int NG = D == 3 ? 6 : 3;  // factors: rr rs rt ss st tt, or rr rs ss
    constexpr int RS = Dims<N>::RS;  // padded row stride: lanes walking a column hit distinct banks
    __shared__ T s_D[n * RS];
    __shared__ T s_u[EPB][n * RS];
    __shared__ T s_wr[EPB][n * RS];
    __shared__ T s_ws[EPB][n * RS];

    const int t = threadIdx.x;
    const int i = t % n, j = t / n, el = threadIdx.y;
    for (int p = t + el * n2; p < n2; p += n2 * EPB) s_D[(p / n) * RS + p % n] = D_[p];

    const index_t e = (index_t)blockIdx.x * EPB + el;
    const bool active = e < E;  // a short last block: idle threads still reach every barrier
    const index_t base = e * npe + j * n + i;
    const index_t stride = E * npe;
    T* su = s_u[el];
    T* swr = s_wr[el];
    T* sws = s_ws[el];

    T r_u[nz], r_a[nz];
#pragma unroll
    for (int k = 0; k < nz; ++k) {
        r_u[k] = active ? u[base + k * n2] : T(0);
        r_a[k] = T(0);
    }
    __syncthreads();  // s_D

#pragma unroll
    for (int k = 0; k < nz; ++k) {
        su[j * RS + i] = r_u[k];
        T gr[NG];
#pragma unroll
        for (int c = 0; c < NG; ++c) gr[c] = T(0);
        if (active) {
            const index_t p = base + k * n2;
#pragma unroll
            for (int c = 0; c < NG; ++c) gr[c] = g[p + c * stride];
        }
        T ut = T(0);
        if constexpr (D == 3) {
#pragma unroll
            for (int m = 0; m < n; ++m) ut += s_D[k * RS + m] * r_u[m];
        }
        __syncthreads();  // the plane is in su

        T ur = T(0), us = T(0);
#pragma unroll
        for (int m = 0; m < n; ++m) {
            ur += s_D[i * RS + m] * su[j * RS + m];
            us += s_D[j * RS + m] * su[m * RS + i];
        }
        if constexpr (D == 3) {
            swr[j * RS + i] = gr[0] * ur + gr[1] * us + gr[2] * ut;
            sws[j * RS + i] = gr[1] * ur + gr[3] * us + gr[4] * ut;
            const T wt = gr[2] * ur + gr[4] * us + gr[5] * ut;
#pragma unroll
            for (int m = 0; m < nz; ++m) r_a[m] += s_D[k * RS + m] * wt;  // out(m) += D[k][m] wt(k)
        } else {
            swr[j * RS + i] = gr[0] * ur + gr[1] * us;
            sws[j * RS + i] = gr[1] * ur + gr[2] * us;
        }
        __syncthreads();  // swr, sws of the plane are complete

        T a = T(0);
#pragma unroll
        for (int m = 0; m < n; ++m) a += s_D[m * RS + i] * swr[j * RS + m] + s_D[m * RS + j] * sws[m * RS + i];
        r_a[k] += a;
    }

    if (active) {
#pragma unroll
        for (int k = 0; k < nz; ++k) {
            const index_t p = base + k * n2;
            T v = h1 * r_a[k];
            if (MASS) v += h2 * mass[p] * r_u[k];
            out[p] = v;
        }
    }
}

}  // namespace lobatto

// Explicit instantiation (nvcc compile test); NVRTC instantiates by name expression.
#define LOBATTO_HELMHOLTZ_INSTANTIATE_DIM(N, T, MASS, EPB, D)                                           \
    template __global__ void lobatto::helmholtz_apply_kernel<N, T, MASS, EPB, D>(                       \
        const T*, T*, const T*, const T*, const T*, T, T, lobatto::index_t);
#define LOBATTO_HELMHOLTZ_INSTANTIATE(N, T, MASS, EPB) LOBATTO_HELMHOLTZ_INSTANTIATE_DIM(N, T, MASS, EPB, 3)
