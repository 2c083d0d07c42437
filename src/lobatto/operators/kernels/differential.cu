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
// The template parameter D (the mesh dimension, default 3) = 2 takes a 2-D mesh's thin arrays:
// fields (k, E, 1, n, n), mass (E, 1, n, n), metrics (MR, MR, E, 1, n, n) with MR = 3 (the host
// Geometry's 3x3, whose t row and column are exactly (0, 0, 1)) or MR = 2 (the compact r, s
// block); one point per thread, no t derivative, only the in-plane metric terms are read. The
// velocity-like arguments may carry 2 (ux, uy) or 3 components (only 0 and 1 are read, except
// where VC / C say otherwise); the curl writes OC = 1 (w_z) or 3 components ((w_x, w_y, w_z), the
// first two d vz / dy and -d vz / dx when v has 3 components, else exact zeros);
// weak_divergence_minus_curl reads the vorticity's z component only (the only one whose curl
// has in-plane components), passed as its own (E, 1, n, n) array.
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

// D[i][l] into shared memory (padded rows), then FIELDS fields of this thread's element (its
// column, or in 2-D its point); SLOTS >= FIELDS fields of room per element
template <int N, typename T, int EPB, int FIELDS, int DIM = 3, int SLOTS = FIELDS>
__device__ __forceinline__ T* stage(const T* LOBATTO_RESTRICT in, const T* LOBATTO_RESTRICT D, unsigned char* raw,
                                    index_t E, index_t e, bool active, T*& sD) {
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, RS = Dims<N>::RS;
    constexpr int nz = DIM == 3 ? n : 1, npe = nz * n2;
    sD = reinterpret_cast<T*>(raw);
    const int t = threadIdx.x, el = threadIdx.y;
    for (int p = t + el * n2; p < n2; p += n2 * EPB) sD[(p / n) * RS + p % n] = D[p];
    T* s = sD + n * RS + el * SLOTS * npe;
#pragma unroll
    for (int f = 0; f < FIELDS; ++f) {
        const index_t base = ((index_t)f * E + e) * npe + t;
#pragma unroll
        for (int k = 0; k < nz; ++k) s[f * npe + k * n2 + t] = active ? in[base + k * n2] : T(0);
    }
    __syncthreads();
    return s;
}

// 2-D: sum_l D[x][l] s[... l ...] along r (i) and s (j) at (j, i) of one plane
template <int N, typename T>
__device__ __forceinline__ void plane_derivatives(const T* s, const T* sD, int j, int i, T& ur, T& us) {
    constexpr int n = Dims<N>::n, RS = Dims<N>::RS;
    ur = sD[i * RS] * s[j * n];
    us = sD[j * RS] * s[i];
#pragma unroll
    for (int l = 1; l < n; ++l) {
        ur += sD[i * RS + l] * s[j * n + l];
        us += sD[j * RS + l] * s[l * n + i];
    }
}

// 2-D: the in-plane metric terms m[b][a] = d r_b / d x_a (a, b < 2) of an MR x MR layout at p
template <int MR, typename T>
__device__ __forceinline__ void load_plane_metrics(const T* LOBATTO_RESTRICT metrics, index_t stride, index_t p,
                                                   T (&m)[2][2]) {
#pragma unroll
    for (int b = 0; b < 2; ++b) {
#pragma unroll
        for (int a = 0; a < 2; ++a) m[b][a] = metrics[p + (b * MR + a) * stride];
    }
}

// 2-D chain rule: d/dx_a = m[0][a] d/dr + m[1][a] d/ds (the 3-D term m[2][a] d/dt is 0)
template <typename T>
__device__ __forceinline__ T plane_chain(const T (&m)[2][2], int a, T ur, T us) {
    return m[0][a] * ur + m[1][a] * us;
}

template <int MR>
__host__ __device__ constexpr bool valid_metrics(int dim) {
    return dim == 3 ? MR == 3 : (MR == 2 || MR == 3);
}

template <typename T>
__device__ __forceinline__ void load_metrics(const T* LOBATTO_RESTRICT metrics, index_t stride, index_t p, T (&m)[9]) {
#pragma unroll
    for (int q = 0; q < 9; ++q) m[q] = metrics[p + q * stride];
}

template <int N, typename T, bool MASS, int EPB, int D = 3, int VC = 3, int OC = 3, int MR = 3>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
curl_kernel(const T* LOBATTO_RESTRICT v, const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
            const T* LOBATTO_RESTRICT D_, T* LOBATTO_RESTRICT out, index_t E) {
    static_assert(D == 3 ? (VC == 3 && OC == 3) : ((VC == 2 || VC == 3) && (OC == 1 || OC == 3)),
                  "3-D: 3 components in and out; 2-D: v has 2 or 3 components, out 1 (w_z) or 3");
    static_assert(valid_metrics<MR>(D), "metrics are 3 x 3, or 2 x 2 in 2-D");
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    if constexpr (D == 2) {
        // v_z (the third component) is staged only where w_x, w_y are written from it
        constexpr int F = (VC == 3 && OC == 3) ? 3 : 2;
        const T* sv = stage<N, T, EPB, F, 2>(v, D_, smem_raw, E, e, active, sD);
        if (!active) return;  // no barrier below
        const int t = threadIdx.x, i = t % n, j = t / n;
        const index_t stride = E * n2, p = e * n2 + t;
        T m[2][2], r[F][2];
        load_plane_metrics<MR>(metrics, stride, p, m);
#pragma unroll
        for (int f = 0; f < F; ++f) plane_derivatives<N>(sv + f * n2, sD, j, i, r[f][0], r[f][1]);
        // the 3-D reference's rows with every t derivative 0: w_z = d vy / dx - d vx / dy
        T c[3];
        c[2] = plane_chain(m, 0, r[1][0], r[1][1]) - plane_chain(m, 1, r[0][0], r[0][1]);
        if constexpr (F == 3) {
            c[0] = plane_chain(m, 1, r[F - 1][0], r[F - 1][1]);
            c[1] = -plane_chain(m, 0, r[F - 1][0], r[F - 1][1]);
        } else {
            c[0] = c[1] = T(0);
        }
        if (MASS) {
            const T w = mass[p];
#pragma unroll
            for (int a = 0; a < 3; ++a) c[a] *= w;
        }
        if constexpr (OC == 1) {
            out[p] = c[2];
        } else {
#pragma unroll
            for (int a = 0; a < 3; ++a) out[p + a * stride] = c[a];
        }
    } else {
        const T* sv = stage<N, T, EPB, 3>(v, D_, smem_raw, E, e, active, sD);
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
}

template <int N, typename T, int EPB, int D = 3, int MR = 3>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
weak_divergence_minus_curl_kernel(const T* LOBATTO_RESTRICT forcing, const T* LOBATTO_RESTRICT w,
                                  const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
                                  const T* LOBATTO_RESTRICT D_, T* LOBATTO_RESTRICT out, T nu, index_t E) {
    static_assert(D == 2 || D == 3, "D is the mesh dimension, 2 or 3");
    static_assert(valid_metrics<MR>(D), "metrics are 3 x 3, or 2 x 2 in 2-D");
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3, RS = Dims<N>::RS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    if constexpr (D == 2) {
        // w is the vorticity's z component (E, 1, n, n): curl (0, 0, w_z) = (d w_z / dy, -d w_z / dx, 0);
        // the t flux is never differentiated, so f_z does not enter. Room for the two fluxes.
        T* sw = stage<N, T, EPB, 1, 2, 2>(w, D_, smem_raw, E, e, active, sD);
        const int t = threadIdx.x, i = t % n, j = t / n;
        const index_t stride = E * n2, p = e * n2 + t;
        T flux[2] = {T(0), T(0)};
        if (active) {
            T m[2][2], wr, ws;
            load_plane_metrics<MR>(metrics, stride, p, m);
            plane_derivatives<N>(sw, sD, j, i, wr, ws);
            const T c[2] = {plane_chain(m, 1, wr, ws), -plane_chain(m, 0, wr, ws)};
            T f[2];
#pragma unroll
            for (int a = 0; a < 2; ++a) f[a] = forcing[p + a * stride] - nu * c[a];
            const T b = mass[p];
#pragma unroll
            for (int r = 0; r < 2; ++r) flux[r] = b * (m[r][0] * f[0] + m[r][1] * f[1]);
        }
        __syncthreads();  // every thread is done with w_z
        sw[t] = flux[0];
        sw[n2 + t] = flux[1];
        __syncthreads();
        if (!active) return;
        T sr = sD[i] * sw[j * n];
        T ss = sD[j] * sw[n2 + i];
#pragma unroll
        for (int l = 1; l < n; ++l) {  // D^T along r and s: sum_l D[l][x] flux[... l ...]
            sr += sD[l * RS + i] * sw[j * n + l];
            ss += sD[l * RS + j] * sw[n2 + l * n + i];
        }
        out[p] = sr + ss;
    } else {
        T* sw = stage<N, T, EPB, 3>(w, D_, smem_raw, E, e, active, sD);
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
}

template <int N, typename T, int EPB, int D = 3, int C = 3, int MR = 3>
__global__ void __launch_bounds__((N + 1) * (N + 1) * EPB)
mass_minus_gradient_kernel(const T* LOBATTO_RESTRICT forcing, const T* LOBATTO_RESTRICT pressure,
                           const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT mass,
                           const T* LOBATTO_RESTRICT D_, T* LOBATTO_RESTRICT out, index_t E) {
    static_assert(D == 3 ? C == 3 : (C == 2 || C == 3), "3-D: 3 components; 2-D: forcing and out have 2 or 3");
    static_assert(valid_metrics<MR>(D), "metrics are 3 x 3, or 2 x 2 in 2-D");
    constexpr int n = Dims<N>::n, n2 = Dims<N>::n2, n3 = Dims<N>::n3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const index_t e = (index_t)blockIdx.x * EPB + threadIdx.y;
    const bool active = e < E;
    T* sD;
    if constexpr (D == 2) {
        const T* sp = stage<N, T, EPB, 1, 2>(pressure, D_, smem_raw, E, e, active, sD);
        if (!active) return;
        const int t = threadIdx.x, i = t % n, j = t / n;
        const index_t stride = E * n2, p = e * n2 + t;
        T m[2][2], pr, ps;
        load_plane_metrics<MR>(metrics, stride, p, m);
        plane_derivatives<N>(sp, sD, j, i, pr, ps);
        const T b = mass[p];
#pragma unroll
        for (int a = 0; a < 2; ++a) out[p + a * stride] = (forcing[p + a * stride] - plane_chain(m, a, pr, ps)) * b;
        if constexpr (C == 3) out[p + 2 * stride] = forcing[p + 2 * stride] * b;  // d p / dz = 0
    } else {
        const T* sp = stage<N, T, EPB, 1>(pressure, D_, smem_raw, E, e, active, sD);
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
}

}  // namespace lobatto

// Explicit instantiation (nvcc compile test); NVRTC instantiates by name expression. The 2-D
// macro takes the layouts of the kernels' docstrings: VC, OC (curl), C (mass_minus_gradient), MR.
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
#define LOBATTO_DIFFERENTIAL_INSTANTIATE_2D(N, T, EPB, VC, OC, C, MR)                                    \
    template __global__ void lobatto::curl_kernel<N, T, true, EPB, 2, VC, OC, MR>(                       \
        const T*, const T*, const T*, const T*, T*, lobatto::index_t);                                    \
    template __global__ void lobatto::curl_kernel<N, T, false, EPB, 2, VC, OC, MR>(                      \
        const T*, const T*, const T*, const T*, T*, lobatto::index_t);                                    \
    template __global__ void lobatto::weak_divergence_minus_curl_kernel<N, T, EPB, 2, MR>(               \
        const T*, const T*, const T*, const T*, const T*, T*, T, lobatto::index_t);                       \
    template __global__ void lobatto::mass_minus_gradient_kernel<N, T, EPB, 2, C, MR>(                   \
        const T*, const T*, const T*, const T*, const T*, T*, lobatto::index_t);
