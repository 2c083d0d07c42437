// Tuned CUDA kernel of the fast-diagonalization solve (the Schwarz smoother's local solve):
//
//   out = (Sz x Sy x Sx) diag(1 / (h1 (lx + ly + lz) + h2)) (Sz x Sy x Sx)^T r   per element
//   (0 instead where the sum is at most floor)
//
// The template parameter D (the mesh dimension, default 3) = 2 takes a 2-D mesh's thin ext
// arrays: r, out (E, 1, M, M), no sz (pass any pointer), lam (E, 2, M); the plane in shared
// memory, thread (i, j) owns the point (j, i).
//
// Same semantics as the reference in lobatto/operators/fdm.py. Layouts (C order):
//   r, out          : (E, M, M, M)   axes [k, j, i], i fastest (M = N + 3, the ext element)
//   sx, sy, sz      : (E, M, M)      S[e][p][a]: column a is the a-th 1-D eigenvector
//   lam             : (E, 3, M)      lx, ly, lz
//   coef            : (E, 3)         h1, h2, floor
//
// One block per element, M x M threads; thread (i, j) owns the column (:, j, i). The element
// sits in shared memory; the i and j contractions read it there (a barrier before each
// overwrite), the k contractions and the diagonal scaling run on the thread's own column in
// registers. S is read through the read-only cache (3 M^2 values per element, reused M^2
// times). r and out cross device memory once each; the diagonal is formed from 3 M + 3
// values per element.

#include "common.cuh"

namespace lobatto {

// The 2-D solve: one plane (r, out (E, 1, M, M), lam (E, 2, M)), one block of M x M threads
// per element, thread (i, j) owning the point (j, i); the plane in shared memory.
template <int M, typename T>
__device__ __forceinline__ void fdm_apply_plane(const T* LOBATTO_RESTRICT r, T* LOBATTO_RESTRICT out,
                                                const T* LOBATTO_RESTRICT sx, const T* LOBATTO_RESTRICT sy,
                                                const T* LOBATTO_RESTRICT lam, const T* LOBATTO_RESTRICT coef,
                                                index_t E) {
    constexpr int M2 = M * M;
    constexpr int RS = (M % 2 == 0) ? M + 1 : M;  // padded rows: a column walk hits distinct banks
    __shared__ T s_u[M * RS];
    const int t = threadIdx.x;
    const int i = t % M, j = t / M;
    const index_t e = blockIdx.x;
    if (e >= E) return;  // the grid has exactly E blocks: no block is partly idle
    const index_t p0 = e * M2 + j * M + i;
    const T* Sx = sx + e * M2;
    const T* Sy = sy + e * M2;

    s_u[j * RS + i] = r[p0];
    __syncthreads();
    // along i, transposed: v = sum_p Sx[p][i] u[j][p]
    T v = T(0);
#pragma unroll
    for (int p = 0; p < M; ++p) v += Sx[p * M + i] * s_u[j * RS + p];
    __syncthreads();
    s_u[j * RS + i] = v;
    __syncthreads();
    // along j, transposed, and the scaling
    v = T(0);
#pragma unroll
    for (int p = 0; p < M; ++p) v += Sy[p * M + j] * s_u[p * RS + i];
    const T h1 = coef[e * 3], h2 = coef[e * 3 + 1], floor = coef[e * 3 + 2];
    const T total = h1 * (lam[e * 2 * M + M + j] + lam[e * 2 * M + i]) + h2;
    v = total > floor ? v * (T(1) / total) : T(0);
    __syncthreads();
    s_u[j * RS + i] = v;
    __syncthreads();
    // along j, forward: v = sum_b Sy[j][b] u[b][i]
    v = T(0);
#pragma unroll
    for (int b = 0; b < M; ++b) v += Sy[j * M + b] * s_u[b * RS + i];
    __syncthreads();
    s_u[j * RS + i] = v;
    __syncthreads();
    // along i, forward: out[j][i] = sum_a Sx[i][a] u[j][a]
    v = T(0);
#pragma unroll
    for (int b = 0; b < M; ++b) v += Sx[i * M + b] * s_u[j * RS + b];
    out[p0] = v;
}

// The 3-D solve (module comment above).
template <int M, typename T>
__device__ __forceinline__ void fdm_apply_volume(const T* LOBATTO_RESTRICT r, T* LOBATTO_RESTRICT out,
                                                 const T* LOBATTO_RESTRICT sx, const T* LOBATTO_RESTRICT sy,
                                                 const T* LOBATTO_RESTRICT sz, const T* LOBATTO_RESTRICT lam,
                                                 const T* LOBATTO_RESTRICT coef, index_t E) {
    constexpr int M2 = M * M;
    constexpr int M3 = M2 * M;
    // padded rows (a column walk hits distinct banks) where the padded element fits the 48 KB
    // of static shared memory; at M = 18 in float64 it would not (49,248 bytes)
    constexpr int RS = (M % 2 == 0 && M * (M + 1) * M * (int)sizeof(T) <= 48 * 1024) ? M + 1 : M;
    constexpr int PS = RS * M;
    __shared__ T s_u[M * PS];

    const int t = threadIdx.x;
    const int i = t % M, j = t / M;
    const index_t e = blockIdx.x;
    if (e >= E) return;  // the grid has exactly E blocks: no block is partly idle
    const index_t base = e * M3 + j * M + i;
    const T* Sx = sx + e * M2;
    const T* Sy = sy + e * M2;
    const T* Sz = sz + e * M2;
    T v[M], w[M];

#pragma unroll
    for (int k = 0; k < M; ++k) s_u[k * PS + j * RS + i] = r[base + k * M2];
    __syncthreads();

    // along i, transposed: v[k] = sum_p Sx[p][i] u[k][j][p]
#pragma unroll
    for (int k = 0; k < M; ++k) {
        T a = T(0);
#pragma unroll
        for (int p = 0; p < M; ++p) a += Sx[p * M + i] * s_u[k * PS + j * RS + p];
        v[k] = a;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < M; ++k) s_u[k * PS + j * RS + i] = v[k];
    __syncthreads();

    // along j, transposed: v[k] = sum_p Sy[p][j] u[k][p][i]
#pragma unroll
    for (int k = 0; k < M; ++k) {
        T a = T(0);
#pragma unroll
        for (int p = 0; p < M; ++p) a += Sy[p * M + j] * s_u[k * PS + p * RS + i];
        v[k] = a;
    }

    // along k on the own column: transposed, scaled, then forward
    const T* lz = lam + e * 3 * M + 2 * M;
    const T lx_ij = lam[e * 3 * M + i] + lam[e * 3 * M + M + j];
    const T h1 = coef[e * 3], h2 = coef[e * 3 + 1], floor = coef[e * 3 + 2];
#pragma unroll
    for (int c = 0; c < M; ++c) {
        T a = T(0);
#pragma unroll
        for (int p = 0; p < M; ++p) a += Sz[p * M + c] * v[p];
        const T total = h1 * (lx_ij + lz[c]) + h2;
        w[c] = total > floor ? a * (T(1) / total) : T(0);
    }
#pragma unroll
    for (int k = 0; k < M; ++k) {
        T a = T(0);
#pragma unroll
        for (int c = 0; c < M; ++c) a += Sz[k * M + c] * w[c];
        v[k] = a;
    }
    __syncthreads();  // every thread has read the plane image of the i step
#pragma unroll
    for (int k = 0; k < M; ++k) s_u[k * PS + j * RS + i] = v[k];
    __syncthreads();

    // along j, forward: v[k] = sum_b Sy[j][b] u[k][b][i]
#pragma unroll
    for (int k = 0; k < M; ++k) {
        T a = T(0);
#pragma unroll
        for (int b = 0; b < M; ++b) a += Sy[j * M + b] * s_u[k * PS + b * RS + i];
        v[k] = a;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < M; ++k) s_u[k * PS + j * RS + i] = v[k];
    __syncthreads();

    // along i, forward: out[k][j][i] = sum_a Sx[i][a] u[k][j][a]
#pragma unroll
    for (int k = 0; k < M; ++k) {
        T a = T(0);
#pragma unroll
        for (int b = 0; b < M; ++b) a += Sx[i * M + b] * s_u[k * PS + j * RS + b];
        out[base + k * M2] = a;
    }
}

template <int M, typename T, int D = 3>
__global__ void __launch_bounds__(M * M)
fdm_apply_kernel(const T* LOBATTO_RESTRICT r, T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT sx,
                 const T* LOBATTO_RESTRICT sy, const T* LOBATTO_RESTRICT sz, const T* LOBATTO_RESTRICT lam,
                 const T* LOBATTO_RESTRICT coef, index_t E) {
    static_assert(D == 2 || D == 3, "D is the mesh dimension, 2 or 3");
    if constexpr (D == 2) {
        fdm_apply_plane<M, T>(r, out, sx, sy, lam, coef, E);
    } else {
        fdm_apply_volume<M, T>(r, out, sx, sy, sz, lam, coef, E);
    }
}

// The six face layers of ext arrays and the planes one inside them (operators/fdm.py,
// ``ext_layers``): MODE 0 layer = inside, 1 layer -= inside, 2 saved = layer, 3 inside +=
// layer - saved. One block per element, thread (a, b) of the face-local grid; the faces in
// turn, a barrier between them in mode 3 (two faces' inside planes share an edge).
// D = 2: ext arrays (E, 1, M, M), four face layers of M - 2 points (a thread each), saved
// (E, 4, 1, M - 2).
template <int M, typename T, int D = 3>
__global__ void __launch_bounds__(D == 3 ? (M - 2) * (M - 2) : M - 2)
ext_layers_kernel(T* LOBATTO_RESTRICT z, T* LOBATTO_RESTRICT saved, int mode, index_t E) {
    static_assert(D == 2 || D == 3, "D is the mesh dimension, 2 or 3");
    constexpr int n = M - 2;
    constexpr int M2 = M * M;
    const index_t e = blockIdx.x;
    if (e >= E) return;  // the grid has exactly E blocks: uniform per block
    const int t = threadIdx.x;
    if constexpr (D == 2) {
        const int b = t + 1;
        T* ze = z + e * M2;
        T* se = saved + e * 4 * n + t;
        for (int f = 0; f < 4; ++f) {
            const int L = (f % 2 == 0) ? 0 : M - 1;
            const int I = (f % 2 == 0) ? 2 : M - 3;
            const index_t layer = f < 2 ? b * M + L : L * M + b;  // faces 0, 1: i fixed; 2, 3: j fixed
            const index_t inside = f < 2 ? b * M + I : I * M + b;
            if (mode == 0) {
                ze[layer] = ze[inside];
            } else if (mode == 1) {
                ze[layer] -= ze[inside];
            } else if (mode == 2) {
                se[f * n] = ze[layer];
            } else {
                ze[inside] += ze[layer] - se[f * n];
                __syncthreads();
            }
        }
        return;
    }
    const int a = t / n + 1, b = t % n + 1;
    T* ze = z + e * M2 * M;
    T* se = saved + e * 6 * n * n + t;
    for (int f = 0; f < 6; ++f) {
        const int axis = f / 2;  // 0: i fixed, 1: j fixed, 2: k fixed
        const int L = (f % 2 == 0) ? 0 : M - 1;
        const int I = (f % 2 == 0) ? 2 : M - 3;
        index_t layer, inside;
        if (axis == 0) {
            layer = a * M2 + b * M + L;
            inside = a * M2 + b * M + I;
        } else if (axis == 1) {
            layer = a * M2 + L * M + b;
            inside = a * M2 + I * M + b;
        } else {
            layer = L * M2 + a * M + b;
            inside = I * M2 + a * M + b;
        }
        if (mode == 0) {
            ze[layer] = ze[inside];
        } else if (mode == 1) {
            ze[layer] -= ze[inside];
        } else if (mode == 2) {
            se[f * n * n] = ze[layer];
        } else {
            ze[inside] += ze[layer] - se[f * n * n];
            __syncthreads();
        }
    }
}

}  // namespace lobatto

// Explicit instantiation (nvcc compile test); NVRTC instantiates by name expression.
#define LOBATTO_FDM_INSTANTIATE_DIM(M, T, D)                                                           \
    template __global__ void lobatto::fdm_apply_kernel<M, T, D>(const T*, T*, const T*, const T*, const T*, \
                                                                const T*, const T*, lobatto::index_t); \
    template __global__ void lobatto::ext_layers_kernel<M, T, D>(T*, T*, int, lobatto::index_t);
#define LOBATTO_FDM_INSTANTIATE(M, T) LOBATTO_FDM_INSTANTIATE_DIM(M, T, 3)
