// Tuned CUDA kernels of the dealiased convective term (lobatto/operators/advection.py):
//
//   contravariant: out[b] = sum_a G[b, a] (I x I x I) u_a             (fine grid, M^3 per element)
//   apply:         out_c  = (I^T x I^T x I^T) [sum_b U_b d f_c / d r_b] (GLL grid, n^3 per element)
//
// with I (M, n) the GLL -> Gauss interpolation and ID = I D its derivative. Layouts (C order):
//   velocity, fields, out (apply) : (k, E, n, n, n)      axes [k, j, i], i fastest
//   factors G                     : (3, 3, E, M, M, M)
//   contravariant U, out (contr.) : (3, E, M, M, M)
//   I, ID                         : (M, n)
//
// A block owns EPB consecutive elements, M^2 threads each; thread (b, a) of an element owns the
// fine column (:, b, a). The contraction along i runs through shared memory (the n^3 field
// staged there first), the contraction along j is computed by each thread for its own column
// into registers, the one along k (and, in apply, the transposed one back along k) in
// registers; the transposed contractions along j and i go through shared memory again. Every
// input value crosses device memory once per call (U once per field in apply: its second and
// later reads are meant to hit L2), every output value is written once, coalesced.
//
// Each output value is summed in a fixed order that depends on nothing but its own inputs
// (never on E or the launch shape), so a rank's share of the mesh gives the whole mesh's bits.
// The orders differ from the reference's (CuPy/NumPy) in the transposed contractions, so the
// two agree to rounding, not bitwise.
//
// Dynamic shared memory, per element (values): contravariant n^3 + 3 M n^2, apply
// max(n^3, M n^2) + max(2 M n^2, n M^2); plus the matrices once per block (contravariant
// I and its transpose, 2 M n; apply I, ID and their transposes, 4 M n).
//
// apply is bound by shared-memory bandwidth, not device memory: at N = 7 (M = 12) one field
// of one element costs about 1.2e5 multiply-adds, most with an operand from shared memory.
// Hence the transposed copies of I and ID (the pass along i walks their columns across lanes,
// which in row-major order would put 6 lanes on one bank) and the rows of I and ID kept in
// registers for the pass along j.

// The template parameter D (the mesh dimension, default 3) = 2 takes a 2-D mesh's thin arrays:
// velocity, fields, out (k, E, 1, n, n), factors (F, F, E, 1, M, M) with F = 3 (the t row and
// column of a 2-D map: G[b][2] = G[2][a] = 0 for a, b < 2) or F = 2, U (OC, E, 1, M, M). One
// fine point per thread, tensor products along i and j only (the fine grid is M^2). Only the
// velocity's x and y and U's r and s components are read; the contravariant kernel writes OC = 2
// or 3 components, the third G[2][2] (I x I) u_z where the velocity (VC = 3) and G (F = 3) have
// a t part, else exact zeros. Shared memory per element in 2-D: contravariant n^2 + NI M n
// (NI = 3 only in that case, else 2), apply max(n^2, M n) + max(2 M n, M^2).

#include "common.cuh"

namespace lobatto {

template <int N, int M>
struct FineDims {
    static constexpr int n = N + 1;
    static constexpr int n2 = n * n;
    static constexpr int n3 = n2 * n;
    static constexpr int M2 = M * M;
    static constexpr int M3 = M2 * M;
    static constexpr int contravariant_shared = n3 + 3 * M * n2;  // per element
    static constexpr int apply_s1 = (n3 > M * n2) ? n3 : M * n2;
    static constexpr int apply_s2 = (2 * M * n2 > n * M2) ? 2 * M * n2 : n * M2;
    static constexpr int apply_shared = apply_s1 + apply_s2;  // per element
};

template <int N, int M, typename T, int EPB, int D = 3, int VC = 3, int OC = 3, int F = 3>
__global__ void __launch_bounds__(M * M * EPB)
advection_contravariant_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT G,
                               const T* LOBATTO_RESTRICT I, T* LOBATTO_RESTRICT out, index_t E) {
    static_assert(D == 3 ? (VC == 3 && OC == 3 && F == 3)
                         : ((VC == 2 || VC == 3) && (OC == 2 || OC == 3) && (F == 2 || F == 3)),
                  "3-D: 3 components and 3 x 3 factors; 2-D: 2 or 3 of each");
    using Dm = FineDims<N, M>;
    constexpr int n = Dm::n, n2 = Dm::n2, n3 = Dm::n3, M2 = Dm::M2, M3 = Dm::M3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    if constexpr (D == 2) {
        constexpr int NI = (VC == 3 && OC == 3 && F == 3) ? 3 : 2;  // components interpolated
        T* s_I = reinterpret_cast<T*>(smem_raw);
        T* s_IT = s_I + M * n;
        const int t = threadIdx.x, el = threadIdx.y;
        for (int p = t + el * M2; p < M * n; p += M2 * EPB) {
            s_I[p] = I[p];
            s_IT[(p % n) * M + p / n] = I[p];
        }
        T* su = s_IT + M * n + el * (n2 + NI * M * n);  // one component, n^2
        T* sa = su + n2;                                // NI components along i: [j][a]
        const index_t e = (index_t)blockIdx.x * EPB + el;
        const bool active = e < E;
        for (int f = 0; f < NI; ++f) {
            __syncthreads();  // su free (and s_I written)
            for (int p = t; p < n2; p += M2) su[p] = active ? u[((index_t)f * E + e) * n2 + p] : T(0);
            __syncthreads();
            for (int p = t; p < M * n; p += M2) {  // along i: sa[f][j][a] = sum_l I[a][l] u[j][l]
                const int a = p % M, jj = p / M;
                T s = s_IT[a] * su[jj * n];
#pragma unroll
                for (int l = 1; l < n; ++l) s += s_IT[l * M + a] * su[jj * n + l];
                sa[f * M * n + p] = s;
            }
        }
        __syncthreads();
        if (!active) return;  // no barrier below
        const int b = t / M, a = t % M;
        T fu[NI];  // along j at this thread's fine point (b, a)
#pragma unroll
        for (int f = 0; f < NI; ++f) {
            const T* x = sa + f * M * n + a;
            T s = s_I[b * n] * x[0];
#pragma unroll
            for (int m = 1; m < n; ++m) s += s_I[b * n + m] * x[m * M];
            fu[f] = s;
        }
        const index_t fs = E * M2, p = e * M2 + t;
#pragma unroll
        for (int bb = 0; bb < OC; ++bb) {
            T v = T(0);  // a t row that G does not have (F = 2): U_t = 0
            if (bb < F) {
                v = G[(bb * F) * fs + p] * fu[0];
#pragma unroll
                for (int aa = 1; aa < NI; ++aa) v += G[(bb * F + aa) * fs + p] * fu[aa];
            }
            out[bb * fs + p] = v;
        }
    } else {
        T* s_I = reinterpret_cast<T*>(smem_raw);  // I[c][l], M * n (read as a broadcast)
        T* s_IT = s_I + M * n;                      // I[c][l] at [l][c] (lanes walking c: no bank conflicts)
        const int t = threadIdx.x, el = threadIdx.y;
        for (int p = t + el * M2; p < M * n; p += M2 * EPB) {
            s_I[p] = I[p];
            s_IT[(p % n) * M + p / n] = I[p];
        }
        T* su = s_IT + M * n + el * Dm::contravariant_shared;  // one component, n^3
        T* sa = su + n3;                                      // 3 components along i: [k][j][a]

        const index_t e = (index_t)blockIdx.x * EPB + el;
        const bool active = e < E;  // a short last block: idle threads still reach every barrier

        for (int f = 0; f < 3; ++f) {
            __syncthreads();  // su free (and s_I written)
            for (int p = t; p < n3; p += M2) su[p] = active ? u[((index_t)f * E + e) * n3 + p] : T(0);
            __syncthreads();
            for (int p = t; p < M * n2; p += M2) {  // along i: sa[f][k][j][a] = sum_l I[a][l] u[k][j][l]
                const int a = p % M, kj = p / M;
                T s = s_IT[a] * su[kj * n];
#pragma unroll
                for (int l = 1; l < n; ++l) s += s_IT[l * M + a] * su[kj * n + l];
                sa[f * M * n2 + p] = s;
            }
        }
        __syncthreads();

        const int b = t / M, a = t % M;
        T ib[n];  // row b of I, in registers for the whole pass along j
#pragma unroll
        for (int m = 0; m < n; ++m) ib[m] = s_I[b * n + m];
        T col[3][n];  // along j, this thread's column: col[f][k] = sum_m I[b][m] sa[f][k][m][a]
#pragma unroll
        for (int f = 0; f < 3; ++f) {
#pragma unroll
            for (int k = 0; k < n; ++k) {
                const T* x = sa + f * M * n2 + k * n * M + a;
                T s = ib[0] * x[0];
#pragma unroll
                for (int m = 1; m < n; ++m) s += ib[m] * x[m * M];
                col[f][k] = s;
            }
        }
        if (!active) return;  // no barrier below
        const index_t fs = E * M3;  // stride of one component
        const T* g = G + e * M3 + t;
        T* o = out + e * M3 + t;
#pragma unroll 2
        for (int c = 0; c < M; ++c) {  // along k, then the metric products at (c, b, a)
            T fu[3];
#pragma unroll
            for (int f = 0; f < 3; ++f) {
                T s = s_I[c * n] * col[f][0];
#pragma unroll
                for (int l = 1; l < n; ++l) s += s_I[c * n + l] * col[f][l];
                fu[f] = s;
            }
            const index_t p = (index_t)c * M2;
#pragma unroll
            for (int bb = 0; bb < 3; ++bb) {
                const T* gb = g + (index_t)(3 * bb) * fs + p;
                o[bb * fs + p] = gb[0] * fu[0] + gb[fs] * fu[1] + gb[2 * fs] * fu[2];
            }
        }
    }
}

template <int N, int M, typename T, int EPB, int D = 3>
__global__ void __launch_bounds__(M * M * EPB)
advection_apply_kernel(const T* LOBATTO_RESTRICT U, const T* LOBATTO_RESTRICT fields,
                       const T* LOBATTO_RESTRICT I, const T* LOBATTO_RESTRICT ID, T* LOBATTO_RESTRICT out,
                       index_t E, int K) {
    static_assert(D == 2 || D == 3, "D is the mesh dimension, 2 or 3");
    using Dm = FineDims<N, M>;
    constexpr int n = Dm::n, n2 = Dm::n2, n3 = Dm::n3, M2 = Dm::M2, M3 = Dm::M3;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    if constexpr (D == 2) {
        constexpr int S1 = n2 > M * n ? n2 : M * n, S2 = 2 * M * n > M2 ? 2 * M * n : M2;
        T* s_I = reinterpret_cast<T*>(smem_raw);
        T* s_ID = s_I + M * n;
        T* s_IT = s_ID + M * n;
        T* s_IDT = s_IT + M * n;
        const int t = threadIdx.x, el = threadIdx.y;
        for (int p = t + el * M2; p < M * n; p += M2 * EPB) {
            s_I[p] = I[p];
            s_ID[p] = ID[p];
            s_IT[(p % n) * M + p / n] = I[p];
            s_IDT[(p % n) * M + p / n] = ID[p];
        }
        T* s1 = s_IDT + M * n + el * (S1 + S2);  // the field (n^2), later I^T along j [m][a] (n M)
        T* s2 = s1 + S1;                         // along i: I and ID [j][a] (2 M n), later q [b][a] (M^2)
        T* sai = s2;
        T* sad = s2 + M * n;
        const index_t e = (index_t)blockIdx.x * EPB + el;
        const bool active = e < E;
        const int b = t / M, a = t % M;
        const index_t fs = E * M2;
        const T* u0 = U + e * M2 + t;
        for (int f = 0; f < K; ++f) {
            __syncthreads();  // s1 free (and the matrices written)
            const index_t base = ((index_t)f * E + e) * n2;
            for (int p = t; p < n2; p += M2) s1[p] = active ? fields[base + p] : T(0);
            __syncthreads();
            for (int p = t; p < M * n; p += M2) {  // along i with I and ID
                const int aa = p % M, jj = p / M;
                const T x0 = s1[jj * n];
                T si = s_IT[aa] * x0, sd = s_IDT[aa] * x0;
#pragma unroll
                for (int l = 1; l < n; ++l) {
                    const T x = s1[jj * n + l];
                    si += s_IT[l * M + aa] * x;
                    sd += s_IDT[l * M + aa] * x;
                }
                sai[p] = si;
                sad[p] = sd;
            }
            __syncthreads();
            // along j at (b, a): d/dr (ID_i then I_j), d/ds (I_i then ID_j)
            T d0 = s_I[b * n] * sad[a], d1 = s_ID[b * n] * sai[a];
#pragma unroll
            for (int m = 1; m < n; ++m) {
                d0 += s_I[b * n + m] * sad[m * M + a];
                d1 += s_ID[b * n + m] * sai[m * M + a];
            }
            T q = T(0);
            if (active) {
                q = u0[0] * d0;
                q += u0[fs] * d1;
            }
            __syncthreads();  // s2 free
            s2[t] = q;  // [b][a]
            __syncthreads();
            for (int p = t; p < n * M; p += M2) {  // I^T along j: s1[m][a] = sum_b I[b][m] s2[b][a]
                const int aa = p % M, m = p / M;
                T s = s_I[m] * s2[aa];
                for (int bb = 1; bb < M; ++bb) s += s_I[bb * n + m] * s2[bb * M + aa];
                s1[p] = s;
            }
            __syncthreads();
            if (active) {
                for (int p = t; p < n2; p += M2) {  // I^T along i: out[m][q] = sum_a I[a][q] s1[m][a]
                    const int qq = p % n, m = p / n;
                    const T* x = s1 + m * M;
                    T s = s_I[qq] * x[0];
                    for (int aa = 1; aa < M; ++aa) s += s_I[aa * n + qq] * x[aa];
                    out[base + p] = s;
                }
            }
        }
    } else {
        T* s_I = reinterpret_cast<T*>(smem_raw);  // I[c][l]
        T* s_ID = s_I + M * n;                      // ID[c][l]
        T* s_IT = s_ID + M * n;                     // I and ID at [l][c]: lanes walking c hit distinct banks
        T* s_IDT = s_IT + M * n;
        const int t = threadIdx.x, el = threadIdx.y;
        for (int p = t + el * M2; p < M * n; p += M2 * EPB) {
            s_I[p] = I[p];
            s_ID[p] = ID[p];
            s_IT[(p % n) * M + p / n] = I[p];
            s_IDT[(p % n) * M + p / n] = ID[p];
        }
        T* s1 = s_IDT + M * n + el * Dm::apply_shared;  // the field (n^3), later along-j^T [l][m][a] (n^2 M)
        T* s2 = s1 + Dm::apply_s1;                     // along i: I and ID [k][j][a] (2 M n^2), later [l][b][a] (n M^2)
        T* sai = s2;
        T* sad = s2 + M * n2;

        const index_t e = (index_t)blockIdx.x * EPB + el;
        const bool active = e < E;
        const int b = t / M, a = t % M;
        const index_t fs = E * M3;
        const T* u0 = U + e * M3 + t;

        for (int f = 0; f < K; ++f) {
            __syncthreads();  // s1 free (and the matrices written)
            const index_t base = ((index_t)f * E + e) * n3;
            for (int p = t; p < n3; p += M2) s1[p] = active ? fields[base + p] : T(0);
            __syncthreads();
            for (int p = t; p < M * n2; p += M2) {  // along i with I and ID
                const int aa = p % M, kj = p / M;
                const T x0 = s1[kj * n];
                T si = s_IT[aa] * x0, sd = s_IDT[aa] * x0;
#pragma unroll
                for (int l = 1; l < n; ++l) {
                    const T x = s1[kj * n + l];
                    si += s_IT[l * M + aa] * x;
                    sd += s_IDT[l * M + aa] * x;
                }
                sai[p] = si;
                sad[p] = sd;
            }
            __syncthreads();
            // along j, own column: d/dr (ID_i then I_j), d/ds (I_i then ID_j), plain (I_i then I_j)
            T c_dr[n], c_ds[n], c_ii[n];
            {
            T ib[n], idb[n];  // rows b of I and ID, in registers for the pass along j
#pragma unroll
            for (int m = 0; m < n; ++m) {
                ib[m] = s_I[b * n + m];
                idb[m] = s_ID[b * n + m];
            }
#pragma unroll
            for (int k = 0; k < n; ++k) {
                const T* xi = sai + k * n * M + a;
                const T* xd = sad + k * n * M + a;
                T sr = ib[0] * xd[0], ss = idb[0] * xi[0], sp = ib[0] * xi[0];
#pragma unroll
                for (int m = 1; m < n; ++m) {
                    sr += ib[m] * xd[m * M];
                    ss += idb[m] * xi[m * M];
                    sp += ib[m] * xi[m * M];
                }
                c_dr[k] = sr;
                c_ds[k] = ss;
                c_ii[k] = sp;
            }
            }
            __syncthreads();  // s2 free for the transposed pass
            T r[n];
#pragma unroll
            for (int l = 0; l < n; ++l) r[l] = T(0);
#pragma unroll 2
            for (int c = 0; c < M; ++c) {  // along k, product, and I^T along k back, in registers
                T d0 = s_I[c * n] * c_dr[0], d1 = s_I[c * n] * c_ds[0], d2 = s_ID[c * n] * c_ii[0];
#pragma unroll
                for (int l = 1; l < n; ++l) {
                    d0 += s_I[c * n + l] * c_dr[l];
                    d1 += s_I[c * n + l] * c_ds[l];
                    d2 += s_ID[c * n + l] * c_ii[l];
                }
                T q = T(0);
                if (active) {
                    const index_t p = (index_t)c * M2;
                    q = u0[p] * d0;
                    q += u0[fs + p] * d1;
                    q += u0[2 * fs + p] * d2;
                }
#pragma unroll
                for (int l = 0; l < n; ++l) r[l] += s_I[c * n + l] * q;
            }
#pragma unroll
            for (int l = 0; l < n; ++l) s2[l * M2 + t] = r[l];  // [l][b][a]
            __syncthreads();
            for (int p = t; p < n2 * M; p += M2) {  // I^T along j: s1[l][m][a] = sum_b I[b][m] s2[l][b][a]
                const int aa = p % M, lm = p / M;
                const int m = lm % n, l = lm / n;
                const T* x = s2 + l * M2 + aa;
                T s = s_I[m] * x[0];
                for (int bb = 1; bb < M; ++bb) s += s_I[bb * n + m] * x[bb * M];
                s1[p] = s;
            }
            __syncthreads();
            if (active) {
                for (int p = t; p < n3; p += M2) {  // I^T along i: out[l][m][q] = sum_a I[a][q] s1[l][m][a]
                    const int q = p % n, lm = p / n;
                    const T* x = s1 + lm * M;
                    T s = s_I[q] * x[0];
                    for (int aa = 1; aa < M; ++aa) s += s_I[aa * n + q] * x[aa];
                    out[base + p] = s;
                }
            }
        }
    }
}

}  // namespace lobatto

// Explicit instantiation (nvcc compile test); NVRTC instantiates by name expression. The 2-D
// macro takes the contravariant kernel's layout (VC, OC, F: the header says what each means).
#define LOBATTO_ADVECTION_INSTANTIATE(N, M, T, EPB)                                                      \
    template __global__ void lobatto::advection_contravariant_kernel<N, M, T, EPB>(                      \
        const T*, const T*, const T*, T*, lobatto::index_t);                                              \
    template __global__ void lobatto::advection_apply_kernel<N, M, T, EPB>(                              \
        const T*, const T*, const T*, const T*, T*, lobatto::index_t, int);
#define LOBATTO_ADVECTION_CONTRAVARIANT_INSTANTIATE_2D(N, M, T, EPB, VC, OC, F)                         \
    template __global__ void lobatto::advection_contravariant_kernel<N, M, T, EPB, 2, VC, OC, F>(        \
        const T*, const T*, const T*, T*, lobatto::index_t);
#define LOBATTO_ADVECTION_INSTANTIATE_2D(N, M, T, EPB, VC, OC, F)                                        \
    LOBATTO_ADVECTION_CONTRAVARIANT_INSTANTIATE_2D(N, M, T, EPB, VC, OC, F)                              \
    template __global__ void lobatto::advection_apply_kernel<N, M, T, EPB, 2>(                           \
        const T*, const T*, const T*, const T*, T*, lobatto::index_t, int);
