// Maxwell's weight-adjusted Galerkin form, skew-symmetric volume term ([discretization]
// volume_form = "galerkin"): the rhs of systems/maxwell/galerkin.py (WeightAdjustedOperator.rhs
// with its default volume = "skew"), one thread block per (element, field triple).
//
// Q = N + 1 (the default rule) takes galerkin_square_kernel below (the whole rhs at the Gauss
// points, as kernels/galerkin.c's square_rhs); galerkin_rhs_kernel, described here, any Q >= N + 1.
//
// A per-point medium (galerkin_media.py) takes the same bodies' MEDIUM instantiations
// (galerkin_rhs_media_kernel, galerkin_square_media_kernel; LOSS with a conductor): w / (J eps_c),
// w / (J mu_c) per component instead of w / J and 1/eps, 1/mu; materials.py's fluxes with a, b, c, d
// per Gauss face point, the source triple's jumps and own traces interpolated apart (9 components:
// its flux weight a or c is not the 1/2 into which the uniform kernels fold B_w's face part); E's
// load less V^T (w J sigma) V E. The template flags keep the uniform instantiations' code as it was.
//
// Block b computes the three components of element e = b / 2 that group g = b % 2 owns: g = 0
// E's rate from H (scale 1/eps), g = 1 H's rate from E (scale -1/mu). Both groups of an element
// run side by side (adjacent blocks), so the second read of the element's cofactors mostly hits
// L2; a group needs 3 components' buffers, not 6.
//
// Per group, with P = N + 1 GLL nodes and Q >= P Gauss points per direction, all sum-factorised:
//  1. volume: the skew form (B + B_w) / 2 of the source triple f. For each Gauss plane k (t
//     direction), f interpolated to the plane (V and V D along t), then along s (V, V D) and r:
//     the nine derivatives d_b f_c and the plain interpolant f_G at the plane's Q x Q points.
//     With w J a^b (read once, coalesced: a plane is contiguous) the strong products
//     A = sum_b w J a^b x d_b f and the weak half's G_b = w J a^b x f_G, scaled; back to the
//     nodes, (1/2) V^T V^T V^T A - (1/2) [(VD)^T V^T V^T G_r + V^T (VD)^T V^T G_s + V^T V^T (VD)^T G_t]
//     (along r, s, t), accumulated into registers over the planes with two weights per plane
//     (V[k][.] and VD[k][.]: G_t's (VD)^T along t). No Q^3 array is ever held.
//  2. faces: per face the jumps at the P x P face nodes -> V along both face axes -> the flux
//     of galerkin.face_load times w sJ at the Q x Q Gauss points -> V^T back, added to the load
//     (KP opposite faces per pass). B_w's face part (1/2) w sJ (n x f_own) at the same points
//     (f_own: the element's own face values of the source triple) is linear in f_own like the
//     flux's term in the source triple's jump, which the flux alone takes (its central part):
//     that jump less f_own carries both, at no cost.
//  3. M_W^-1 = M^-1 V^T diag(w/J) V M^-1 as W diag(w/J) W^T with W = M^-1 V^T (P x Q) along
//     each axis, plane by plane again (W^T = V M^-1 along t, s, r; times w/J; W along r, s, t
//     into registers).
// Shared memory: the six 1D matrices, the triple's P^3 load and plane buffers of O(Q P) values
// for KP planes, processed together between two barriers (GalerkinLayout); a pass writes into
// buffers whose values were all read before its barrier, so two plane regions serve all passes.
// Matrices are kept in both orientations so that the lanes of a warp, which walk the fastest
// index, read consecutive addresses; each pass reads a matrix entry once for the three
// components (galerkin_contract3), the derivative pass its operands in pairs. The stored w J a^b
// is read rather than recomputed from the geometry nodes: by galerkin_cuda_speed.py's models the
// kernel does about 13 flops per byte it must move at N = 7 (Q = 8; float64), so its passes'
// shared loads rather than device memory should bound it, and recomputing (more passes per
// group) would cost more than the reads it saves. Estimated, not measured: that script prints
// the rhs kernel's GB/s to check.
#include "common.cuh"

#ifndef LOBATTO_DYNAMIC_SHARED
#define LOBATTO_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

namespace lobatto {

// Two values in one 8- or 16-byte shared-memory load (aligned as CUDA's double2 and float2).
template <typename T>
struct alignas(2 * sizeof(T)) GalerkinPair {
    T x, y;
};

// Offsets (in values) of the shared-memory regions; galerkin_cuda.shared_values mirrors SIZE.
// Every region starts at an even offset, so that pairs of values load as one vector. The plane
// buffers hold KP planes (S2, S3 values each): KP planes are processed per pass. Per plane, R2
// takes the second pass's output (9 Q PS) and then the pass along r back to the nodes (9 Q P);
// R3 the first pass's output (r1: 6 P^2, at R1 = R3), then the Gauss-point values (12 Q^2), then
// the pass along s back (6 P^2) at offset R5 = 6 P^2, clear of r1, which the next plane's first
// pass writes while threads still read it. A buffer is rewritten only after the barrier that
// ends the pass reading it.
template <int P, int Q, int KP = 1>
struct GalerkinLayout {
    static constexpr int P2 = P * P, P3 = P * P * P, Q2 = Q * Q, QP = Q * P;
    static constexpr int PS = P + (P & 1);  // the row stride of R2's volume rows: even
    // matrices: V (Q x P), VD = V D (Q x P), VTD (P x Q pairs (V^T, (V D)^T)), WT = V M^-1 (Q x P),
    // W = M^-1 V^T (P x Q), in the order of the `matrices` argument
    static constexpr int V = 0, VD = QP, VTD = 2 * QP, WT = 4 * QP, W = 5 * QP;
    static constexpr int LOAD = 6 * QP;                       // 3 P^3: the source triple, then the load
    static constexpr int S2 = 9 * Q * PS, S3 = 12 * Q2;
    static constexpr int R5 = 6 * P2;  // in R3's plane blocks: 6 P^2 of r1 below, 6 P^2 above
    static_assert(Q >= P, "a Gauss rule of at least N + 1 points (M_W positive definite)");
    static constexpr int R2 = LOAD + 3 * P3 + ((3 * P3) & 1);
    static constexpr int R3 = R2 + KP * S2;
    static constexpr int R1 = R3;
    static constexpr int SIZE = R3 + KP * S3;
};

// Offset in a [k][j][i] P^3 array of point (x, y) of face f's [a, b] grid (mesh/topology.py).
template <int P>
__device__ __forceinline__ int galerkin_face_node(int f, int x, int y) {
    const int side = (f & 1) ? P - 1 : 0;
    const int axis = f >> 1;
    if (axis == 0) return (x * P + y) * P + side;  // [k, j], i fixed
    if (axis == 1) return (x * P + side) * P + y;  // [k, i], j fixed
    return (side * P + x) * P + y;                 // [j, i], k fixed
}

// out[a * OS] = scale * sum_l m[l * MS] in[a * IS + l * LS] for the three components a: one
// read of the matrix entry for three products (the passes' shared loads bound the kernel).
template <int L, int MS, int IS, int LS, int OS, typename T>
__device__ __forceinline__ void galerkin_contract3(const T* m, const T* in, T* out, T scale = T(1)) {
    T s0 = T(0), s1 = T(0), s2 = T(0);
#pragma unroll
    for (int l = 0; l < L; ++l) {
        const T v = m[l * MS];
        s0 += v * in[l * LS];
        s1 += v * in[IS + l * LS];
        s2 += v * in[2 * IS + l * LS];
    }
    out[0] = scale * s0;
    out[OS] = scale * s1;
    out[2 * OS] = scale * s2;
}

// KP Gauss planes' values from plane k0 (r3 [kk][a][j][i]) taken back to the nodes by the
// transpose of a Q x P matrix M (WT = V M^-1 for the mass's last factor): along r into r2, along
// s into r3 + R5 (both already read; clear of r1), then along t added into acc, the values of
// the nodes this thread owns (q = t + m NT). Every thread of the block calls it (it holds
// barriers); r3 + R5 is rewritten only after the next pass's barriers.
template <int P, int Q, int KP, int NT, int PER, typename T>
__device__ __forceinline__ void galerkin_back_to_nodes(const T* M, T* r2, T* r3, int k0, int t, T (&acc)[PER][3]) {
    using L = GalerkinLayout<P, Q, KP>;
    constexpr int P2 = L::P2, P3 = L::P3, Q2 = L::Q2, QP = L::QP, S2 = L::S2, S3 = L::S3, R5 = L::R5;
    // r2 [kk][a][j][i']: M^T along r
    for (int qk = t; qk < KP * QP; qk += NT) {
        const int kk = qk / QP, q = qk - kk * QP, j = q / P, i = q - j * P;
        galerkin_contract3<Q, P, Q2, 1, QP>(M + i, r3 + kk * S3 + j * Q, r2 + kk * S2 + q);
    }
    __syncthreads();
    // r3 + R5 [kk][a][j'][i']: M^T along s
    for (int qk = t; qk < KP * P2; qk += NT) {
        const int kk = qk / P2, q = qk - kk * P2, j = q / P, i = q - j * P;
        galerkin_contract3<Q, P, QP, P, P2>(M + j, r2 + kk * S2 + i, r3 + kk * S3 + R5 + q);
    }
    __syncthreads();
    // M^T along t into the registers
#pragma unroll
    for (int m = 0; m < PER; ++m) {
        const int q = t + m * NT;
        if (q < P3) {
            const int kn = q / P2, ji = q - kn * P2;
#pragma unroll
            for (int kk = 0; kk < KP; ++kk) {
                const T v = M[(k0 + kk) * P + kn];
#pragma unroll
                for (int a = 0; a < 3; ++a) acc[m][a] += v * r3[kk * S3 + R5 + a * P2 + ji];
            }
        }
    }
}

// The volume's way back (galerkin_back_to_nodes with the weak half): r3 [kk][w][a][j][i] holds
// per Gauss point w = 0 (1/2) A, the strong products, and w = 1, 2, 3 -(1/2) G_r, G_s, G_t. Along
// r: X1 = V^T A + (VD)^T G_r, X2 = V^T G_s, X3 = V^T G_t into r2; along s: Y1 = V^T X1 + (VD)^T X2,
// Y2 = V^T X3 into r3 + R5; along t: acc += V[k][.] Y1 + VD[k][.] Y2.
template <int P, int Q, int KP, int NT, int PER, typename T>
__device__ __forceinline__ void galerkin_skew_back_to_nodes(const T* sV, const T* sVD, T* r2, T* r3, int k0, int t,
                                                            T (&acc)[PER][3]) {
    using L = GalerkinLayout<P, Q, KP>;
    constexpr int P2 = L::P2, P3 = L::P3, Q2 = L::Q2, QP = L::QP, S2 = L::S2, S3 = L::S3, R5 = L::R5;
    // r2 [kk][X][a][j][i']: along r
    for (int qk = t; qk < KP * QP; qk += NT) {
        const int kk = qk / QP, q = qk - kk * QP, j = q / P, i = q - j * P;
        const T* in = r3 + kk * S3 + j * Q;
        T x1[3] = {T(0), T(0), T(0)}, x2[3] = {T(0), T(0), T(0)}, x3[3] = {T(0), T(0), T(0)};
#pragma unroll
        for (int l = 0; l < Q; ++l) {
            const T v = sV[l * P + i], dv = sVD[l * P + i];
#pragma unroll
            for (int a = 0; a < 3; ++a) {
                x1[a] += v * in[a * Q2 + l] + dv * in[(3 + a) * Q2 + l];
                x2[a] += v * in[(6 + a) * Q2 + l];
                x3[a] += v * in[(9 + a) * Q2 + l];
            }
        }
        T* out = r2 + kk * S2 + q;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            out[a * QP] = x1[a];
            out[(3 + a) * QP] = x2[a];
            out[(6 + a) * QP] = x3[a];
        }
    }
    __syncthreads();
    // r3 + R5 [kk][Y][a][j'][i']: along s
    for (int qk = t; qk < KP * P2; qk += NT) {
        const int kk = qk / P2, q = qk - kk * P2, j = q / P, i = q - j * P;
        const T* in = r2 + kk * S2 + i;
        T y1[3] = {T(0), T(0), T(0)}, y2[3] = {T(0), T(0), T(0)};
#pragma unroll
        for (int l = 0; l < Q; ++l) {
            const T v = sV[l * P + j], dv = sVD[l * P + j];
#pragma unroll
            for (int a = 0; a < 3; ++a) {
                y1[a] += v * in[a * QP + l * P] + dv * in[(3 + a) * QP + l * P];
                y2[a] += v * in[(6 + a) * QP + l * P];
            }
        }
        T* out = r3 + kk * S3 + R5 + q;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            out[a * P2] = y1[a];
            out[(3 + a) * P2] = y2[a];
        }
    }
    __syncthreads();
    // along t into the registers: V^T for Y1, (VD)^T for Y2
#pragma unroll
    for (int m = 0; m < PER; ++m) {
        const int q = t + m * NT;
        if (q < P3) {
            const int kn = q / P2, ji = q - kn * P2;
#pragma unroll
            for (int kk = 0; kk < KP; ++kk) {
                const T v = sV[(k0 + kk) * P + kn], dv = sVD[(k0 + kk) * P + kn];
                const T* y = r3 + kk * S3 + R5 + ji;
#pragma unroll
                for (int a = 0; a < 3; ++a) acc[m][a] += v * y[a * P2] + dv * y[(3 + a) * P2];
            }
        }
    }
}

// galerkin.face_load's medium branch times w sJ at one Gauss face point, with B_w's own-trace
// part: jump[0..5] E's and H's jumps, jump[6..8] the source triple's own values (g = 0: H's,
// g = 1: E's) there. F_E = w (a S_H - alpha b n x S_E), F_H = -w (c S_E + alpha d n x S_H), the
// source triple's S = -n x (coefficient jump - own / 2): B_w's face part (1/2) w sJ n x own rides
// along (the uniform kernels fold it into the jump as jump - own, their coefficient being 1/2).
template <typename T>
__device__ __forceinline__ void galerkin_media_face_flux(const T* LOBATTO_RESTRICT flux, index_t fp, index_t nstride,
                                                         int g, const T (&jump)[9], T n0, T n1, T n2, T w, T alpha,
                                                         T (&o)[3]) {
    if (g == 0) {
        const T a = flux[fp], b = alpha * flux[nstride + fp];
        const T h0 = a * jump[3] - T(0.5) * jump[6], h1 = a * jump[4] - T(0.5) * jump[7];
        const T h2 = a * jump[5] - T(0.5) * jump[8];
        const T se0 = n2 * jump[1] - n1 * jump[2], se1 = n0 * jump[2] - n2 * jump[0], se2 = n1 * jump[0] - n0 * jump[1];
        const T sh0 = n2 * h1 - n1 * h2, sh1 = n0 * h2 - n2 * h0, sh2 = n1 * h0 - n0 * h1;
        o[0] = w * (sh0 - b * (n1 * se2 - n2 * se1));
        o[1] = w * (sh1 - b * (n2 * se0 - n0 * se2));
        o[2] = w * (sh2 - b * (n0 * se1 - n1 * se0));
    } else {
        const T c = flux[2 * nstride + fp], d = alpha * flux[3 * nstride + fp];
        const T e0 = c * jump[0] - T(0.5) * jump[6], e1 = c * jump[1] - T(0.5) * jump[7];
        const T e2 = c * jump[2] - T(0.5) * jump[8];
        const T se0 = n2 * e1 - n1 * e2, se1 = n0 * e2 - n2 * e0, se2 = n1 * e0 - n0 * e1;
        const T sh0 = n2 * jump[4] - n1 * jump[5], sh1 = n0 * jump[5] - n2 * jump[3], sh2 = n1 * jump[3] - n0 * jump[4];
        o[0] = -w * (se0 + d * (n1 * sh2 - n2 * sh1));
        o[1] = -w * (se1 + d * (n2 * sh0 - n0 * sh2));
        o[2] = -w * (se2 + d * (n0 * sh1 - n1 * sh0));
    }
}

// u, out: (6, E, P, P, P); sums: (6, E, 6, P, P) summed face values; factors: (2, E, 6);
// elements: the element of each block pair (blocks 2 m and 2 m + 1 compute elements[m]: the
// curved ones where affine elements take galerkin_affine_kernel); cofactors: (3, 3, E, Q, Q, Q)
// w (J a^b)_a; wj: (E, Q, Q, Q) w / J; normals: (3, E, 6, Q, Q);
// face_weights: (E, 6, Q, Q) w sJ; matrices: V, VD, VTD, WT, W (6 Q P values).
// inv_eps = 1/eps, inv_mu = 1/mu, ce = alpha / Z, ch = alpha Z with Z = sqrt(mu / eps).
// MINB: blocks per SM the registers must allow (galerkin_cuda.default_min_blocks); KP: Gauss
// planes per pass (Q % KP == 0): KP = 2 halves the barriers and doubles each pass's work items.
// MEDIUM (galerkin_rhs_media_kernel, galerkin_media.py): wj is (6, E, Q, Q, Q) w / (J eps_c),
// w / (J mu_c), a row per component of the rate; flux (4, E, 6, Q, Q) a, b, c, d at the Gauss
// face points; the scalars inv_eps = inv_mu = 1 and ce = ch = alpha. LOSS: loss (E, Q, Q, Q)
// w J sigma, E's load less V^T (w J sigma) V E. Both off: the uniform kernel, unchanged.
template <int P, int Q, typename T, int NT, int KP, bool MEDIUM, bool LOSS>
__device__ __forceinline__ void
galerkin_rhs_body(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums, const T* LOBATTO_RESTRICT factors,
                  const index_t* LOBATTO_RESTRICT elements, const T* LOBATTO_RESTRICT cofactors,
                  const T* LOBATTO_RESTRICT wj,
                  const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT face_weights,
                  const T* LOBATTO_RESTRICT matrices, T* LOBATTO_RESTRICT out, T inv_eps, T inv_mu, T ce, T ch,
                  index_t E, const T* LOBATTO_RESTRICT flux, const T* LOBATTO_RESTRICT loss) {
    static_assert(MEDIUM || !LOSS, "a conductor comes with a medium");
    using L = GalerkinLayout<P, Q, KP>;
    using Pair = GalerkinPair<T>;
    constexpr int P2 = L::P2, P3 = L::P3, Q2 = L::Q2, QP = L::QP, PS = L::PS;
    constexpr int S2 = L::S2, S3 = L::S3;
    static_assert(Q % KP == 0, "the planes per pass must divide Q");
    constexpr int PER = (P3 + NT - 1) / NT;  // node positions a thread accumulates (3 components each)
    LOBATTO_DYNAMIC_SHARED(galerkin_smem);
    T* s = reinterpret_cast<T*>(galerkin_smem);
    const T* sV = s + L::V;
    const T* sVD = s + L::VD;
    const T* sVTD = s + L::VTD;
    const T* sWT = s + L::WT;
    const T* sW = s + L::W;
    T* load = s + L::LOAD;
    T* r1 = s + L::R1;
    T* r2 = s + L::R2;
    T* r3 = s + L::R3;

    const int t = threadIdx.x;
    const index_t e = elements[blockIdx.x >> 1];
    const int g = blockIdx.x & 1;
    const int target = 3 * g, source = 3 - target;
    const T scale = g == 0 ? inv_eps : -inv_mu;
    const T half = T(0.5) * scale;  // the skew form's (B + B_w) / 2
    const index_t field = E * P3;  // component stride of u and out
    const index_t cstride = E * (index_t)(Q2 * Q);  // (b, a) stride of the cofactors

    for (int q = t; q < 6 * QP; q += NT) s[q] = matrices[q];
    const int first = LOSS && g == 0 ? target : source;  // a conductor's E block first takes E for its loss
    for (int q = t; q < 3 * P3; q += NT) {
        const int c = q / P3;
        load[q] = u[(first + c) * field + e * P3 + (q - c * P3)];
    }
    __syncthreads();

    T acc[PER][3];
#pragma unroll
    for (int m = 0; m < PER; ++m) acc[m][0] = acc[m][1] = acc[m][2] = T(0);
    if constexpr (LOSS) {
        if (g == 0) {  // 0. the loss -V^T (w J sigma) V E into acc, plane by plane as the mass's (3.) with V
#pragma unroll 1
            for (int k0 = 0; k0 < Q; k0 += KP) {
                for (int qk = t; qk < KP * P2; qk += NT) {  // r1 [kk][a][j'][i']: V along t
                    const int kk = qk / P2, q = qk - kk * P2;
                    galerkin_contract3<P, 1, P3, P2, P2>(sV + (k0 + kk) * P, load + q, r1 + kk * S3 + q);
                }
                __syncthreads();
                for (int qk = t; qk < KP * QP; qk += NT) {  // r2 [kk][a][j][i']: V along s
                    const int kk = qk / QP, q = qk - kk * QP, j = q / P, i = q - j * P;
                    galerkin_contract3<P, 1, P2, P, QP>(sV + j * P, r1 + kk * S3 + i, r2 + kk * S2 + q);
                }
                __syncthreads();
                for (int qk = t; qk < KP * Q2; qk += NT) {  // r3 [kk][a][j][i]: V along r, times -w J sigma
                    const int kk = qk / Q2, q = qk - kk * Q2, j = q / Q, i = q - j * Q;
                    const T weight = -loss[e * (index_t)(Q2 * Q) + (k0 + kk) * Q2 + q];
                    galerkin_contract3<P, 2 * Q, QP, 1, Q2>(sVTD + 2 * i, r2 + kk * S2 + j * P, r3 + kk * S3 + q,
                                                           weight);
                }
                __syncthreads();
                galerkin_back_to_nodes<P, Q, KP, NT, PER>(sV, r2, r3, k0, t, acc);  // V^T
            }
            __syncthreads();  // every thread is done reading E
            for (int q = t; q < 3 * P3; q += NT) {
                const int c = q / P3;
                load[q] = u[(source + c) * field + e * P3 + (q - c * P3)];
            }
            __syncthreads();
        }
    }

    // 1. volume: (B(., f) + B_w(., f)) / 2 plane by plane (B_w's face part joins the flux) ------
#pragma unroll 1
    for (int k0 = 0; k0 < Q; k0 += KP) {
        // r1 [kk][which][c][j'][i']: (V f_c, V D f_c) along t at plane k0 + kk (one read of f for both)
        for (int qk = t; qk < KP * 3 * P2; qk += NT) {
            const int kk = qk / (3 * P2), q = qk - kk * 3 * P2;
            T* out1 = r1 + kk * S3;
            const T* in = load + (q / P2) * P3 + (q % P2);
            const T* row = sV + (k0 + kk) * P;
            const T* drow = sVD + (k0 + kk) * P;
            T sum = T(0), dsum = T(0);
#pragma unroll
            for (int l = 0; l < P; ++l) {
                const T x = in[l * P2];
                sum += row[l] * x;
                dsum += drow[l] * x;
            }
            out1[q] = sum;
            out1[3 * P2 + q] = dsum;
        }
        __syncthreads();
        // r2 [kk][which][c][j][i'] (rows of PS): V_s (V_t f), V D_s (V_t f), V_s (V D_t f), the three together
        for (int qk = t; qk < KP * 3 * QP; qk += NT) {
            const int kk = qk / (3 * QP), q = qk - kk * 3 * QP;
            const T* in1 = r1 + kk * S3;
            T* out2 = r2 + kk * S2;
            const int c = q / QP, r = q - c * QP, j = r / P, i = r - j * P;
            const T* row = sV + j * P;
            const T* drow = sVD + j * P;
            const T* a = in1 + c * P2 + i;
            const T* b = in1 + 3 * P2 + c * P2 + i;
            T aa = T(0), ab = T(0), ba = T(0);
#pragma unroll
            for (int l = 0; l < P; ++l) {
                const T v = row[l], x = a[l * P];
                aa += v * x;
                ab += drow[l] * x;
                ba += v * b[l * P];
            }
            const int o = c * Q * PS + j * PS + i;
            out2[o] = aa;
            out2[3 * Q * PS + o] = ab;
            out2[6 * Q * PS + o] = ba;
        }
        __syncthreads();
        // r3 [kk][w][a][j][i] at the plane's Gauss points: w = 0 (scale / 2) sum_b (w J a^b x d_b f)_a,
        // w = 1 + b -(scale / 2) (w J a^b x f_G)_a (f_G = V V V f, the weak half's)
        for (int qk = t; qk < KP * Q2; qk += NT) {
            const int kk = qk / Q2, q = qk - kk * Q2, k = k0 + kk;
            const T* in2 = r2 + kk * S2;
            T* out3 = r3 + kk * S3;
            const int j = q / Q, i = q - j * Q;
            T d[3][3];  // d[b][c] = d_b f_c
            T fg[3];    // f_c at the point
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                fg[c] = T(0);
#pragma unroll
                for (int b = 0; b < 3; ++b) d[b][c] = T(0);
            }
            // r2 [which][c][j][.]: V_s V_t f (then V D along r, and V for f_G), V D_s V_t f and
            // V_s V D_t f (then V); the row values in pairs (l, l + 1) and the two matrix entries
            // of (l, i) in one load each
            const T* row = in2 + j * PS;
            const Pair* mp = reinterpret_cast<const Pair*>(sVTD) + i;
#pragma unroll
            for (int l = 0; l + 1 < P; l += 2) {
                const Pair m0 = mp[l * Q], m1 = mp[(l + 1) * Q];  // (V[i][l], VD[i][l])
#pragma unroll
                for (int c = 0; c < 3; ++c) {
                    const Pair x = reinterpret_cast<const Pair*>(row + c * Q * PS)[l >> 1];
                    const Pair y = reinterpret_cast<const Pair*>(row + (3 + c) * Q * PS)[l >> 1];
                    const Pair z = reinterpret_cast<const Pair*>(row + (6 + c) * Q * PS)[l >> 1];
                    d[0][c] += m0.y * x.x + m1.y * x.y;
                    fg[c] += m0.x * x.x + m1.x * x.y;
                    d[1][c] += m0.x * y.x + m1.x * y.y;
                    d[2][c] += m0.x * z.x + m1.x * z.y;
                }
            }
            if (P & 1) {  // the last column of an odd row
                const Pair m0 = mp[(P - 1) * Q];
#pragma unroll
                for (int c = 0; c < 3; ++c) {
                    const T x = row[c * Q * PS + P - 1];
                    d[0][c] += m0.y * x;
                    fg[c] += m0.x * x;
                    d[1][c] += m0.x * row[(3 + c) * Q * PS + P - 1];
                    d[2][c] += m0.x * row[(6 + c) * Q * PS + P - 1];
                }
            }
            const index_t p = e * (index_t)(Q2 * Q) + k * Q2 + q;
            T x = T(0), y = T(0), z = T(0);
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                const T c0 = cofactors[(3 * b + 0) * cstride + p];
                const T c1 = cofactors[(3 * b + 1) * cstride + p];
                const T c2 = cofactors[(3 * b + 2) * cstride + p];
                x += c1 * d[b][2] - c2 * d[b][1];
                y += c2 * d[b][0] - c0 * d[b][2];
                z += c0 * d[b][1] - c1 * d[b][0];
                T* gb = out3 + 3 * (1 + b) * Q2 + q;
                gb[0] = -half * (c1 * fg[2] - c2 * fg[1]);
                gb[Q2] = -half * (c2 * fg[0] - c0 * fg[2]);
                gb[2 * Q2] = -half * (c0 * fg[1] - c1 * fg[0]);
            }
            out3[q] = half * x;
            out3[Q2 + q] = half * y;
            out3[2 * Q2 + q] = half * z;
        }
        __syncthreads();
        galerkin_skew_back_to_nodes<P, Q, KP, NT, PER>(sV, sVD, r2, r3, k0, t, acc);
    }
    __syncthreads();  // every thread is done reading the source triple
#pragma unroll
    for (int m = 0; m < PER; ++m) {
        const int q = t + m * NT;
        if (q < P3) {
#pragma unroll
            for (int a = 0; a < 3; ++a) load[a * P3 + q] = acc[m][a];
        }
    }
    __syncthreads();

    // 2. faces: Q x Q Gauss quadrature of the flux; KP faces per pass (KP = 2: the opposite faces
    // f0, f0 + 1, which share no node), each in its plane buffers ----------------------------
    // With a medium the source triple's flux weight (a or c) is not 1/2: its jumps and own values
    // travel apart (NJ = 9 components), combined at the Gauss points as a J - own / 2
    constexpr int NJ = MEDIUM ? 9 : 6;
#pragma unroll 1
    for (int f0 = 0; f0 < 6; f0 += KP) {
        // r1 [ff][comp][x][y]: the jumps own - neighbour (f * own on a boundary: its ghost state),
        // the source triple's less its own value: the flux's central term (1/2) w sJ (-n x jump)
        // scaled then includes B_w's face part (1/2) w sJ (n x own)
        if constexpr (MEDIUM) {  // [ff][comp][x][y]: the six jumps, then the source triple's own values
            for (int qf = t; qf < KP * NJ * P2; qf += NT) {
                const int ff = qf / (NJ * P2), q = qf - ff * NJ * P2, f = f0 + ff;
                const int comp = q / P2, xy = q - comp * P2, x = xy / P, y = xy - x * P;
                const int node = e * P3 + galerkin_face_node<P>(f, x, y);
                if (comp < 6) {
                    const T fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
                    const bool interior = fe == T(1) && fh == T(1);
                    const T own = u[comp * field + node];
                    const T summed = sums[((comp * E + e) * 6 + f) * P2 + xy];
                    r1[ff * S3 + q] = interior ? T(2) * own - summed : (comp < 3 ? fe : fh) * own;
                } else {
                    r1[ff * S3 + q] = u[(source + comp - 6) * field + node];
                }
            }
        } else
        for (int qf = t; qf < KP * 6 * P2; qf += NT) {
            const int ff = qf / (6 * P2), q = qf - ff * 6 * P2, f = f0 + ff;
            const T fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
            const bool interior = fe == T(1) && fh == T(1);
            const int comp = q / P2, xy = q - comp * P2, x = xy / P, y = xy - x * P;
            const T own = u[comp * field + e * P3 + galerkin_face_node<P>(f, x, y)];
            const T summed = sums[((comp * E + e) * 6 + f) * P2 + xy];
            const T jump = interior ? T(2) * own - summed : (comp < 3 ? fe : fh) * own;
            r1[ff * S3 + q] = comp >= source && comp < source + 3 ? jump - own : jump;
        }
        __syncthreads();
        // r2 [ff][comp][x][qb]: V along b (one matrix read for the six components)
        for (int qf = t; qf < KP * QP; qf += NT) {
            const int ff = qf / QP, q = qf - ff * QP, x = q / Q, qb = q - x * Q;
            const T* in = r1 + ff * S3 + x * P;
            T sum[NJ];
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) sum[comp] = T(0);
#pragma unroll
            for (int l = 0; l < P; ++l) {
                const T v = sVTD[2 * (l * Q + qb)];
#pragma unroll
                for (int comp = 0; comp < NJ; ++comp) sum[comp] += v * in[comp * P2 + l];
            }
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) r2[ff * S2 + comp * QP + q] = sum[comp];
        }
        __syncthreads();
        // r3 [ff][a][qa][qb]: V along a, then the flux of the target triple times w sJ
        for (int qf = t; qf < KP * Q2; qf += NT) {
            const int ff = qf / Q2, q = qf - ff * Q2, f = f0 + ff, qa = q / Q, qb = q - qa * Q;
            T jump[NJ];
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) {
                const T* in = r2 + ff * S2 + comp * QP + qb;
                T sum = T(0);
#pragma unroll
                for (int l = 0; l < P; ++l) sum += sV[qa * P + l] * in[l * Q];
                jump[comp] = sum;
            }
            const index_t fp = (e * 6 + f) * Q2 + q;
            const index_t nstride = E * 6 * Q2;
            const T n0 = normals[fp], n1 = normals[nstride + fp], n2 = normals[2 * nstride + fp];
            const T w = face_weights[fp];
            T* out3 = r3 + ff * S3;
            if constexpr (MEDIUM) {
                T o[3];
                galerkin_media_face_flux(flux, fp, nstride, g, jump, n0, n1, n2, w, ce, o);
                out3[q] = o[0];
                out3[Q2 + q] = o[1];
                out3[2 * Q2 + q] = o[2];
                continue;
            }
            // sum_E = -n x jump_E, sum_H = -n x jump_H (galerkin.face_load)
            const T se0 = n2 * jump[1] - n1 * jump[2], se1 = n0 * jump[2] - n2 * jump[0], se2 = n1 * jump[0] - n0 * jump[1];
            const T sh0 = n2 * jump[4] - n1 * jump[5], sh1 = n0 * jump[5] - n2 * jump[3], sh2 = n1 * jump[3] - n0 * jump[4];
            T f0v, f1v, f2v;
            if (g == 0) {  // 0.5 (sum_H - ce n x sum_E) / eps
                const T c = T(0.5) * inv_eps * w;
                f0v = c * (sh0 - ce * (n1 * se2 - n2 * se1));
                f1v = c * (sh1 - ce * (n2 * se0 - n0 * se2));
                f2v = c * (sh2 - ce * (n0 * se1 - n1 * se0));
            } else {  // 0.5 (-sum_E - ch n x sum_H) / mu
                const T c = T(0.5) * inv_mu * w;
                f0v = -c * (se0 + ch * (n1 * sh2 - n2 * sh1));
                f1v = -c * (se1 + ch * (n2 * sh0 - n0 * sh2));
                f2v = -c * (se2 + ch * (n0 * sh1 - n1 * sh0));
            }
            out3[q] = f0v;
            out3[Q2 + q] = f1v;
            out3[2 * Q2 + q] = f2v;
        }
        __syncthreads();
        // r2 [ff][a][qa][y]: V^T along b (r2 read)
        for (int qf = t; qf < KP * QP; qf += NT) {
            const int ff = qf / QP, q = qf - ff * QP, qa = q / P, y = q - qa * P;
            galerkin_contract3<Q, P, Q2, 1, QP>(sV + y, r3 + ff * S3 + qa * Q, r2 + ff * S2 + q);
        }
        __syncthreads();
        // V^T along a, added to the load at the face nodes (passes in turn: edges get each face's share)
        for (int qf = t; qf < KP * P2; qf += NT) {
            const int ff = qf / P2, q = qf - ff * P2, x = q / P, y = q - x * P;
            T sum[3];
            galerkin_contract3<Q, P, QP, P, 1>(sV + x, r2 + ff * S2 + y, sum);
            const int node = galerkin_face_node<P>(f0 + ff, x, y);
#pragma unroll
            for (int a = 0; a < 3; ++a) load[a * P3 + node] += sum[a];
        }
        __syncthreads();
    }

    // 3. M_W^-1 = W diag(w/J) W^T, plane by plane --------------------------------------------
#pragma unroll
    for (int m = 0; m < PER; ++m) acc[m][0] = acc[m][1] = acc[m][2] = T(0);
#pragma unroll 1
    for (int k0 = 0; k0 < Q; k0 += KP) {
        // r1 [kk][a][j'][i']: W^T along t
        for (int qk = t; qk < KP * P2; qk += NT) {
            const int kk = qk / P2, q = qk - kk * P2;
            galerkin_contract3<P, 1, P3, P2, P2>(sWT + (k0 + kk) * P, load + q, r1 + kk * S3 + q);
        }
        __syncthreads();
        // r2 [kk][a][j][i']: W^T along s
        for (int qk = t; qk < KP * QP; qk += NT) {
            const int kk = qk / QP, q = qk - kk * QP, j = q / P, i = q - j * P;
            galerkin_contract3<P, 1, P2, P, QP>(sWT + j * P, r1 + kk * S3 + i, r2 + kk * S2 + q);
        }
        __syncthreads();
        // r3 [kk][a][j][i]: W^T along r (W[l][i] = WT[i][l]), times w/J
        for (int qk = t; qk < KP * Q2; qk += NT) {
            const int kk = qk / Q2, q = qk - kk * Q2, j = q / Q, i = q - j * Q;
            if constexpr (MEDIUM) {  // w / (J eps_c) (w / (J mu_c)): component c's row
                const index_t p = e * (index_t)(Q2 * Q) + (k0 + kk) * Q2 + q, cs = E * (index_t)(Q2 * Q);
                T* o = r3 + kk * S3 + q;
                galerkin_contract3<P, Q, QP, 1, Q2>(sW + i, r2 + kk * S2 + j * P, o);
#pragma unroll
                for (int a = 0; a < 3; ++a) o[a * Q2] *= wj[(target + a) * cs + p];
            } else {
                const T weight = wj[e * (index_t)(Q2 * Q) + (k0 + kk) * Q2 + q];
                galerkin_contract3<P, Q, QP, 1, Q2>(sW + i, r2 + kk * S2 + j * P, r3 + kk * S3 + q, weight);
            }
        }
        __syncthreads();
        galerkin_back_to_nodes<P, Q, KP, NT, PER>(sWT, r2, r3, k0, t, acc);  // W = (V M^-1)^T
    }
#pragma unroll
    for (int m = 0; m < PER; ++m) {
        const int q = t + m * NT;
        if (q < P3) {
#pragma unroll
            for (int a = 0; a < 3; ++a) out[(target + a) * field + e * P3 + q] = acc[m][a];
        }
    }
}

template <int P, int Q, typename T, int NT, int MINB, int KP>
__global__ void __launch_bounds__(NT, MINB)
galerkin_rhs_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums, const T* LOBATTO_RESTRICT factors,
                    const index_t* LOBATTO_RESTRICT elements, const T* LOBATTO_RESTRICT cofactors, const T* LOBATTO_RESTRICT wj,
                    const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT face_weights,
                    const T* LOBATTO_RESTRICT matrices, T* LOBATTO_RESTRICT out, T inv_eps, T inv_mu, T ce, T ch,
                    index_t E) {
    galerkin_rhs_body<P, Q, T, NT, KP, false, false>(u, sums, factors, elements, cofactors, wj, normals, face_weights,
                                                     matrices, out, inv_eps, inv_mu, ce, ch, E, nullptr, nullptr);
}

// With a per-point medium (galerkin_rhs_body's MEDIUM; LOSS: with a conductor): wj the medium's
// inverse_weights (6, E, Q, Q, Q), flux its (4, E, 6, Q, Q) a, b, c, d, loss its loss_weights
// (E, Q, Q, Q) (not read without LOSS), alpha the flux's upwind weight.
template <int P, int Q, typename T, int NT, int MINB, int KP, bool LOSS>
__global__ void __launch_bounds__(NT, MINB)
galerkin_rhs_media_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums,
                          const T* LOBATTO_RESTRICT factors, const index_t* LOBATTO_RESTRICT elements,
                          const T* LOBATTO_RESTRICT cofactors, const T* LOBATTO_RESTRICT wj,
                          const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT face_weights,
                          const T* LOBATTO_RESTRICT matrices, T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT flux,
                          const T* LOBATTO_RESTRICT loss, T alpha, index_t E) {
    galerkin_rhs_body<P, Q, T, NT, KP, true, LOSS>(u, sums, factors, elements, cofactors, wj, normals, face_weights,
                                                   matrices, out, T(1), T(1), alpha, alpha, E, flux, loss);
}

// Q = N + 1 (the default rule; V square): galerkin_square_kernel, the whole rhs at the Gauss
// points (the C kernel's square_rhs). With V invertible, (V D)^T = V^T D_G^T (D_G = V D V^-1,
// the Gauss points' own derivative) and A V^T = W^-1 (A = V M^-1, M = V^T W V), so
//     out = A^T [ (Y + faces) w/J / w_i w_j w_k ],  Y = (scale / 2) (S - sum_b D_G^T_b G_b)
// with S = sum_b w J a^b x D_G_b f_G, G_b = w J a^b x f_G, f_G = V V V f; a face's V^T_2 F at its
// end of the normal axis is V^T of w_q A[q][end] F along that normal line. Per group (the same
// blocks as galerkin_rhs_kernel): f_G (V along i, j, k: 3 passes), then per axis b one pass over
// the Q^2 lines along b, a thread a line: at each point of the line S's share cof_b x D_G_b f
// (D_G along the line from shared memory; each cofactor read once per group) added to Y and
// G_b kept in registers (3 Q values), then less D_G^T G_b along the line (no Q^3 buffer of
// products: S and the weak half split by axis, each on its own lines); faces as
// galerkin_rhs_kernel's (jumps less the own trace for the source triple, V along b, V along a,
// the flux times w sJ) into F (6 faces x 3 x Q^2), then one pass over the points:
// Y + the six faces' F along their normals, times w/J / (w_i w_j w_k); A^T along i, j, k, the
// last straight to out. 2 buffers of 3 Q^3 values (rows padded to an odd length: a line along i
// is a thread's, so the threads of a warp read rows Q + 1 apart, conflict-free) and the 1D
// matrices (galerkin_cuda.square_shared_values): float64 30.7 KiB at N = 7, 166 KiB at N = 14,
// 212 KiB at N = 15. A line pass keeps a thread's line of f_G and G_b (6 Q values) in registers:
// 160 a thread at N = 7 (float64), hence 6 blocks per SM (galerkin_cuda.square_min_blocks).
// MEDIUM: the faces' scratch holds 9 components (galerkin_media_face_flux) instead of 6.
template <int P, bool MEDIUM = false>
struct GalerkinSquareLayout {
    static constexpr int Q = P, Q2 = Q * Q;
    static constexpr int QR = Q | 1;          // row stride of the Q^3 buffers: odd
    static constexpr int CS = Q * Q * QR;     // component stride of a buffer
    // matrices: V (Q x P), VT = V^T (P x Q), DG (Q x Q), AT = (V M^-1)^T (P x Q), WA (Q x 2) w_q A[q][0, P-1], WINV (Q) 1/w
    static constexpr int V = 0, VT = Q2, DG = 2 * Q2, AT = 3 * Q2, WA = 4 * Q2, WINV = 4 * Q2 + 2 * Q;
    static constexpr int MATS = 4 * Q2 + 3 * Q;
    static constexpr int Y = MATS + (MATS & 1);
    static constexpr int X = Y + 3 * CS;      // f_G; then the faces' scratch: J1 (6 P^2), J2 (6 P Q), F (18 Q^2)
    static constexpr int NJ = MEDIUM ? 9 : 6;  // the components of J1 and J2
    static constexpr int J1 = 0, J2 = NJ * Q2, F = 2 * NJ * Q2;
    static constexpr int XS = 3 * CS > F + 18 * Q2 ? 3 * CS : F + 18 * Q2;
    static constexpr int SIZE = X + XS;
};

// u, sums, factors, elements, cofactors, wj, normals, face_weights, out, scalars, MEDIUM, LOSS,
// flux, loss: as galerkin_rhs_body's; matrices: GalerkinSquareLayout's (galerkin_cuda.square_matrices).
// With LOSS the E block's r_G starts at -w J sigma E_G (r_G = the load's Gauss values, load = V^T r_G).
template <int P, typename T, int NT, bool MEDIUM, bool LOSS>
__device__ __forceinline__ void
galerkin_square_body(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums, const T* LOBATTO_RESTRICT factors,
                     const index_t* LOBATTO_RESTRICT elements, const T* LOBATTO_RESTRICT cofactors,
                     const T* LOBATTO_RESTRICT wj, const T* LOBATTO_RESTRICT normals,
                     const T* LOBATTO_RESTRICT face_weights, const T* LOBATTO_RESTRICT matrices,
                     T* LOBATTO_RESTRICT out, T inv_eps, T inv_mu, T ce, T ch, index_t E,
                     const T* LOBATTO_RESTRICT flux, const T* LOBATTO_RESTRICT loss) {
    static_assert(MEDIUM || !LOSS, "a conductor comes with a medium");
    using L = GalerkinSquareLayout<P, MEDIUM>;
    constexpr int Q = P, P2 = P * P, P3 = P2 * P, Q2 = Q * Q, Q3 = Q2 * Q, QR = L::QR, CS = L::CS;
    LOBATTO_DYNAMIC_SHARED(galerkin_smem);
    T* s = reinterpret_cast<T*>(galerkin_smem);
    const T* sV = s + L::V;
    const T* sVT = s + L::VT;
    const T* sDG = s + L::DG;
    const T* sAT = s + L::AT;
    const T* sWA = s + L::WA;
    const T* sWI = s + L::WINV;
    T* Y = s + L::Y;
    T* X = s + L::X;

    const int t = threadIdx.x;
    const index_t e = elements[blockIdx.x >> 1];
    const int g = blockIdx.x & 1;
    const int target = 3 * g, source = 3 - target;
    const T half = T(0.5) * (g == 0 ? inv_eps : -inv_mu);  // the skew form's (B + B_w) / 2, scaled
    const index_t field = E * P3;
    const index_t cstride = E * (index_t)Q3;
    const T* cof = cofactors + e * (index_t)Q3;

    for (int q = t; q < L::MATS; q += NT) s[q] = matrices[q];
    if constexpr (LOSS) {
        // f_G into X and (E's block) -w J sigma E_G into Y: both triples interpolated in place, a
        // line a thread (Q = P), as Y must keep E_G while f_G is made
        const int nc = g == 0 ? 6 : 3;  // components 0-2 the source triple (X), 3-5 the target (Y)
        for (int q = t; q < nc * P3; q += NT) {
            const int c = q / P3, r = q - c * P3, k = r / P2, j = (r / P) % P, i = r % P;
            T* buffer = c < 3 ? X + c * CS : Y + (c - 3) * CS;
            buffer[(k * Q + j) * QR + i] = u[(c < 3 ? source + c : target + c - 3) * field + e * P3 + r];
        }
        __syncthreads();
#pragma unroll 1
        for (int axis = 0; axis < 3; ++axis) {  // V along i, j, k
            const int st = axis == 0 ? 1 : axis == 1 ? QR : Q * QR;
            for (int line = t; line < nc * Q2; line += NT) {
                const int c = line / Q2, ab = line - c * Q2, la = ab / Q, lb = ab - la * Q;  // (k, j), (k, i), (j, i)
                const int base = axis == 0 ? (la * Q + lb) * QR : axis == 1 ? la * Q * QR + lb : la * QR + lb;
                T* x = (c < 3 ? X + c * CS : Y + (c - 3) * CS) + base;
                T in[P];
#pragma unroll
                for (int l = 0; l < P; ++l) in[l] = x[l * st];
#pragma unroll
                for (int m = 0; m < Q; ++m) {
                    T sum = T(0);
#pragma unroll
                    for (int l = 0; l < P; ++l) sum += sV[m * P + l] * in[l];
                    if (axis == 2 && c >= 3) {  // point (m, j, i) of the element's w J sigma
                        sum *= -loss[e * (index_t)Q3 + (m * Q + la) * Q + lb];
                    }
                    x[m * st] = sum;
                }
            }
            __syncthreads();
        }
    } else {
    for (int q = t; q < 3 * P3; q += NT) {  // the source triple into Y [c][k][j][i] (rows of QR)
        const int c = q / P3, r = q - c * P3, k = r / P2, j = (r / P) % P, i = r % P;
        Y[c * CS + (k * Q + j) * QR + i] = u[(source + c) * field + e * P3 + r];
    }
    __syncthreads();
    // f_G = V along i (Y -> X), j (X -> Y), k (Y -> X)
    for (int q = t; q < 3 * Q3; q += NT) {
        const int c = q / Q3, r = q - c * Q3, kj = r / Q, i = r - kj * Q;
        const T* in = Y + c * CS + kj * QR;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < P; ++l) sum += sVT[l * Q + i] * in[l];
        X[c * CS + kj * QR + i] = sum;
    }
    __syncthreads();
    for (int q = t; q < 3 * Q3; q += NT) {
        const int c = q / Q3, r = q - c * Q3, k = r / Q2, j = (r / Q) % Q, i = r % Q;
        const T* in = X + c * CS + k * Q * QR + i;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < P; ++l) sum += sV[j * P + l] * in[l * QR];
        Y[c * CS + (k * Q + j) * QR + i] = sum;
    }
    __syncthreads();
    for (int q = t; q < 3 * Q3; q += NT) {
        const int c = q / Q3, r = q - c * Q3, k = r / Q2, ji = r - k * Q2, j = ji / Q, i = ji - j * Q;
        const T* in = Y + c * CS + j * QR + i;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < P; ++l) sum += sV[k * P + l] * in[l * Q * QR];
        X[c * CS + (k * Q + j) * QR + i] = sum;
    }
    __syncthreads();
    }

    // 1. volume: per axis b, Y (=, then +=) (scale / 2) (w J a^b x D_G f - D_G^T (w J a^b x f)) along b's lines
#pragma unroll
    for (int b = 0; b < 3; ++b) {
        const int st = b == 0 ? 1 : b == 1 ? QR : Q * QR;  // along the line in X and Y
        const int gst = b == 0 ? 1 : b == 1 ? Q : Q2;      // along the line in the cofactors
        const T* cb = cof + 3 * b * cstride;
        for (int line = t; line < Q2; line += NT) {
            const int la = line / Q, lb = line - la * Q;  // (k, j), (k, i), (j, i)
            const int base = b == 0 ? (la * Q + lb) * QR : b == 1 ? la * Q * QR + lb : la * QR + lb;
            const int gbase = b == 0 ? (la * Q + lb) * Q : b == 1 ? la * Q2 + lb : la * Q + lb;
            // at each point l of the line: G_b (kept for the second loop) and S's share with D_G f
            // along the line from shared memory (each cofactor read once per group)
            T G[3][Q];
#pragma unroll
            for (int l = 0; l < Q; ++l) {
                const int o = base + l * st, p = gbase + l * gst;
                const T c0 = cb[p], c1 = cb[cstride + p], c2 = cb[2 * cstride + p];
                const T f0 = X[o], f1 = X[CS + o], f2 = X[2 * CS + o];
                G[0][l] = c1 * f2 - c2 * f1;
                G[1][l] = c2 * f0 - c0 * f2;
                G[2][l] = c0 * f1 - c1 * f0;
                T d0 = T(0), d1 = T(0), d2 = T(0);
#pragma unroll
                for (int m = 0; m < Q; ++m) {
                    const T dg = sDG[l * Q + m];
                    const int om = base + m * st;
                    d0 += dg * X[om];
                    d1 += dg * X[CS + om];
                    d2 += dg * X[2 * CS + om];
                }
                T* y = Y + o;
                const T y0 = half * (c1 * d2 - c2 * d1), y1 = half * (c2 * d0 - c0 * d2), y2 = half * (c0 * d1 - c1 * d0);
                if (b == 0 && !(LOSS && g == 0)) {  // (with a conductor E's Y holds its loss)
                    y[0] = y0, y[CS] = y1, y[2 * CS] = y2;
                } else {
                    y[0] += y0, y[CS] += y1, y[2 * CS] += y2;
                }
            }
            // less D_G^T G_b along the line (the thread's own points: no barrier)
#pragma unroll 1
            for (int q = 0; q < Q; ++q) {
                T w0 = T(0), w1 = T(0), w2 = T(0);
#pragma unroll
                for (int l = 0; l < Q; ++l) {
                    const T dt = sDG[l * Q + q];
                    w0 += dt * G[0][l];
                    w1 += dt * G[1][l];
                    w2 += dt * G[2][l];
                }
                T* y = Y + base + q * st;
                y[0] -= half * w0, y[CS] -= half * w1, y[2 * CS] -= half * w2;
            }
        }
        __syncthreads();  // the next axis's lines cross these
    }

    // 2. faces: F [f][a][qa][qb] = the flux (with B_w's own-trace part) times w sJ at the Gauss
    // face points, as galerkin_rhs_kernel's (X is free now)
    T* J1 = X + L::J1;
    T* J2 = X + L::J2;
    T* F = X + L::F;
#pragma unroll 1
    for (int f = 0; f < 6; ++f) {
        const T fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
        const bool interior = fe == T(1) && fh == T(1);
        constexpr int NJ = L::NJ;  // with a medium: the six jumps, then the source triple's own values
        if constexpr (MEDIUM) {
            for (int q = t; q < NJ * P2; q += NT) {  // J1 [comp][x][y]
                const int comp = q / P2, xy = q - comp * P2, x = xy / P, y = xy - x * P;
                const int node = e * P3 + galerkin_face_node<P>(f, x, y);
                if (comp < 6) {
                    const T own = u[comp * field + node];
                    const T summed = sums[((comp * E + e) * 6 + f) * P2 + xy];
                    J1[q] = interior ? T(2) * own - summed : (comp < 3 ? fe : fh) * own;
                } else {
                    J1[q] = u[(source + comp - 6) * field + node];
                }
            }
        } else
        for (int q = t; q < 6 * P2; q += NT) {  // J1 [comp][x][y]: the jumps, the source's less its own value
            const int comp = q / P2, xy = q - comp * P2, x = xy / P, y = xy - x * P;
            const T own = u[comp * field + e * P3 + galerkin_face_node<P>(f, x, y)];
            const T jump = interior ? T(2) * own - sums[((comp * E + e) * 6 + f) * P2 + xy] : (comp < 3 ? fe : fh) * own;
            J1[q] = comp >= source && comp < source + 3 ? jump - own : jump;
        }
        __syncthreads();
        for (int q = t; q < P * Q; q += NT) {  // J2 [comp][x][qb]: V along b
            const int x = q / Q, qb = q - x * Q;
            const T* in = J1 + x * P;
            T sum[NJ];
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) sum[comp] = T(0);
#pragma unroll
            for (int l = 0; l < P; ++l) {
                const T v = sVT[l * Q + qb];
#pragma unroll
                for (int comp = 0; comp < NJ; ++comp) sum[comp] += v * in[comp * P2 + l];
            }
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) J2[comp * P * Q + q] = sum[comp];
        }
        __syncthreads();
        for (int q = t; q < Q2; q += NT) {  // V along a, the flux (J1 and J2 are rewritten after barriers)
            const int qa = q / Q, qb = q - qa * Q;
            T jump[NJ];
#pragma unroll
            for (int comp = 0; comp < NJ; ++comp) {
                const T* in = J2 + comp * P * Q + qb;
                T sum = T(0);
#pragma unroll
                for (int l = 0; l < P; ++l) sum += sV[qa * P + l] * in[l * Q];
                jump[comp] = sum;
            }
            const index_t fp = (e * 6 + f) * Q2 + q;
            const index_t nstride = E * 6 * Q2;
            const T n0 = normals[fp], n1 = normals[nstride + fp], n2 = normals[2 * nstride + fp];
            const T w = face_weights[fp];
            if constexpr (MEDIUM) {
                T o[3];
                galerkin_media_face_flux(flux, fp, nstride, g, jump, n0, n1, n2, w, ce, o);
                T* fo = F + f * 3 * Q2 + q;
                fo[0] = o[0], fo[Q2] = o[1], fo[2 * Q2] = o[2];
                continue;
            }
            const T se0 = n2 * jump[1] - n1 * jump[2], se1 = n0 * jump[2] - n2 * jump[0], se2 = n1 * jump[0] - n0 * jump[1];
            const T sh0 = n2 * jump[4] - n1 * jump[5], sh1 = n0 * jump[5] - n2 * jump[3], sh2 = n1 * jump[3] - n0 * jump[4];
            T* o = F + f * 3 * Q2 + q;
            if (g == 0) {
                const T c = T(0.5) * inv_eps * w;
                o[0] = c * (sh0 - ce * (n1 * se2 - n2 * se1));
                o[Q2] = c * (sh1 - ce * (n2 * se0 - n0 * se2));
                o[2 * Q2] = c * (sh2 - ce * (n0 * se1 - n1 * se0));
            } else {
                const T c = T(0.5) * inv_mu * w;
                o[0] = -c * (se0 + ch * (n1 * sh2 - n2 * sh1));
                o[Q2] = -c * (se1 + ch * (n2 * sh0 - n0 * sh2));
                o[2 * Q2] = -c * (se2 + ch * (n0 * sh1 - n1 * sh0));
            }
        }
    }
    __syncthreads();

    // 3. Y + the faces along their normals, times w/J / (w_i w_j w_k) (= w/J . W^-1), in place
    for (int q = t; q < Q3; q += NT) {
        const int k = q / Q2, ji = q - k * Q2, j = ji / Q, i = ji - j * Q;
        // with a medium w / (J eps_c) (w / (J mu_c)), component c's row, times the same W^-1
        const T weight = MEDIUM ? sWI[i] * sWI[j] * sWI[k] : wj[e * (index_t)Q3 + q] * sWI[i] * sWI[j] * sWI[k];
        const T a0 = sWA[2 * i], a1 = sWA[2 * i + 1], b0 = sWA[2 * j], b1 = sWA[2 * j + 1];
        const T k0 = sWA[2 * k], k1 = sWA[2 * k + 1];
        const int kj = k * Q + j, ki = k * Q + i;
        T* y = Y + kj * QR + i;
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            const T* Fc = F + c * Q2;
            const T faces = a0 * Fc[kj] + a1 * Fc[3 * Q2 + kj] + b0 * Fc[6 * Q2 + ki] + b1 * Fc[9 * Q2 + ki]
                            + k0 * Fc[12 * Q2 + ji] + k1 * Fc[15 * Q2 + ji];
            y[c * CS] = (y[c * CS] + faces) * (MEDIUM ? wj[((target + c) * E + e) * (index_t)Q3 + q] * weight : weight);
        }
    }
    __syncthreads();
    // A^T along i (Y -> X), j (X -> Y), k (Y -> out)
    for (int q = t; q < 3 * P3; q += NT) {
        const int c = q / P3, r = q - c * P3, kj = r / P, i = r - kj * P;
        const T* in = Y + c * CS + kj * QR;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < Q; ++l) sum += sAT[i * Q + l] * in[l];
        X[c * CS + kj * QR + i] = sum;
    }
    __syncthreads();
    for (int q = t; q < 3 * P3; q += NT) {
        const int c = q / P3, r = q - c * P3, k = r / P2, j = (r / P) % P, i = r % P;
        const T* in = X + c * CS + k * Q * QR + i;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < Q; ++l) sum += sAT[j * Q + l] * in[l * QR];
        Y[c * CS + (k * Q + j) * QR + i] = sum;
    }
    __syncthreads();
    for (int q = t; q < 3 * P3; q += NT) {
        const int c = q / P3, r = q - c * P3, k = r / P2, ji = r - k * P2, j = ji / P, i = ji - j * P;
        const T* in = Y + c * CS + j * QR + i;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < Q; ++l) sum += sAT[k * Q + l] * in[l * Q * QR];
        out[(target + c) * field + e * P3 + r] = sum;
    }
}

template <int P, typename T, int NT, int MINB>
__global__ void __launch_bounds__(NT, MINB)
galerkin_square_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums, const T* LOBATTO_RESTRICT factors,
                       const index_t* LOBATTO_RESTRICT elements, const T* LOBATTO_RESTRICT cofactors,
                       const T* LOBATTO_RESTRICT wj, const T* LOBATTO_RESTRICT normals,
                       const T* LOBATTO_RESTRICT face_weights, const T* LOBATTO_RESTRICT matrices,
                       T* LOBATTO_RESTRICT out, T inv_eps, T inv_mu, T ce, T ch, index_t E) {
    galerkin_square_body<P, T, NT, false, false>(u, sums, factors, elements, cofactors, wj, normals, face_weights,
                                                 matrices, out, inv_eps, inv_mu, ce, ch, E, nullptr, nullptr);
}

// With a per-point medium: the arguments of galerkin_rhs_media_kernel, shared memory
// GalerkinSquareLayout<P, true>::SIZE (galerkin_cuda.square_shared_values(P, medium=True)).
template <int P, typename T, int NT, int MINB, bool LOSS>
__global__ void __launch_bounds__(NT, MINB)
galerkin_square_media_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums,
                             const T* LOBATTO_RESTRICT factors, const index_t* LOBATTO_RESTRICT elements,
                             const T* LOBATTO_RESTRICT cofactors, const T* LOBATTO_RESTRICT wj,
                             const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT face_weights,
                             const T* LOBATTO_RESTRICT matrices, T* LOBATTO_RESTRICT out,
                             const T* LOBATTO_RESTRICT flux, const T* LOBATTO_RESTRICT loss, T alpha, index_t E) {
    galerkin_square_body<P, T, NT, true, LOSS>(u, sums, factors, elements, cofactors, wj, normals, face_weights,
                                               matrices, out, T(1), T(1), alpha, alpha, E, flux, loss);
}

// An affine element's rhs in closed form (kernels/galerkin.c affine_rhs, galerkin_cpu.affine_constants):
// with J a^b, J, n and sJ constant every Gauss rule is exact, so M_W^-1 = M^-1 / J, the volume
// part is the collocated chain rule (1/J) sum_b J a^b x D_b f and a face's part
// (1/J) M^-1 e_end (x) sJ flux at its GLL points. One thread per (listed element, node), both
// field triples: the node's volume part and, per face, the flux at its projection onto the face
// times the inverse mass's column entry at its distance along the normal (the face's flux is
// recomputed by the P nodes of its normal line: no shared memory, no barrier).
// elements: the count affine elements; constants (E, 34): J a^b [b][a] (9), 1/J, n per face (18),
// sJ per face (6); am: D (P x P), then the columns 0 and P - 1 of M^-1 (P each).
template <int P, typename T>
__global__ void galerkin_affine_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT sums,
                                       const T* LOBATTO_RESTRICT factors, const index_t* LOBATTO_RESTRICT elements,
                                       index_t count, const T* LOBATTO_RESTRICT constants,
                                       const T* LOBATTO_RESTRICT am, T* LOBATTO_RESTRICT out, T inv_eps, T inv_mu,
                                       T ce, T ch, index_t E) {
    constexpr int P2 = P * P, P3 = P2 * P;
    const index_t field = E * P3, n = count * P3;
    const index_t stride = (index_t)gridDim.x * blockDim.x;
    for (index_t q = (index_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += stride) {
        const index_t e = elements[q / P3];
        const int p = (int)(q % P3), k = p / P2, j = (p / P) % P, i = p % P;
        const T* kc = constants + e * 34;
        const T* ue = u + e * P3;
        T g[6][3];  // g[c][b] = d_b u_c
#pragma unroll
        for (int c = 0; c < 6; ++c) {
            const T* uc = ue + c * field;
            T gr = T(0), gs = T(0), gt = T(0);
#pragma unroll
            for (int l = 0; l < P; ++l) {
                gr += am[i * P + l] * uc[(k * P + j) * P + l];
                gs += am[j * P + l] * uc[(k * P + l) * P + i];
                gt += am[k * P + l] * uc[(l * P + j) * P + i];
            }
            g[c][0] = gr, g[c][1] = gs, g[c][2] = gt;
        }
        T o[6] = {T(0), T(0), T(0), T(0), T(0), T(0)};
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            const T w0 = kc[b * 3], w1 = kc[b * 3 + 1], w2 = kc[b * 3 + 2];
            o[0] += w1 * g[5][b] - w2 * g[4][b];
            o[1] += w2 * g[3][b] - w0 * g[5][b];
            o[2] += w0 * g[4][b] - w1 * g[3][b];
            o[3] += w1 * g[2][b] - w2 * g[1][b];
            o[4] += w2 * g[0][b] - w0 * g[2][b];
            o[5] += w0 * g[1][b] - w1 * g[0][b];
        }
        const T ie = inv_eps * kc[9], im = inv_mu * kc[9];
#pragma unroll
        for (int a = 0; a < 3; ++a) o[a] *= ie, o[3 + a] *= -im;
#pragma unroll 1
        for (int f = 0; f < 6; ++f) {
            const int axis = f >> 1;
            const int l = axis == 0 ? i : axis == 1 ? j : k;  // the node's place along the face's normal
            const int x = axis == 2 ? j : k, y = axis == 0 ? j : i;  // its projection's face point
            const int node = galerkin_face_node<P>(f, x, y);
            const T fe = factors[e * 6 + f], fh = factors[(E + e) * 6 + f];
            const bool interior = fe == T(1) && fh == T(1);
            T jmp[6];
#pragma unroll
            for (int c = 0; c < 6; ++c) {
                const T own = ue[c * field + node];
                jmp[c] = interior ? T(2) * own - sums[((c * E + e) * 6 + f) * P2 + x * P + y] : (c < 3 ? fe : fh) * own;
            }
            const T n0 = kc[10 + 3 * f], n1 = kc[11 + 3 * f], n2 = kc[12 + 3 * f];
            const T column = am[P2 + ((f & 1) ? P : 0) + l];
            const T he = T(0.5) * inv_eps * kc[28 + f] * kc[9] * column;
            const T hm = T(0.5) * inv_mu * kc[28 + f] * kc[9] * column;
            const T se0 = n2 * jmp[1] - n1 * jmp[2], se1 = n0 * jmp[2] - n2 * jmp[0], se2 = n1 * jmp[0] - n0 * jmp[1];
            const T sh0 = n2 * jmp[4] - n1 * jmp[5], sh1 = n0 * jmp[5] - n2 * jmp[3], sh2 = n1 * jmp[3] - n0 * jmp[4];
            o[0] += he * (sh0 - ce * (n1 * se2 - n2 * se1));
            o[1] += he * (sh1 - ce * (n2 * se0 - n0 * se2));
            o[2] += he * (sh2 - ce * (n0 * se1 - n1 * se0));
            o[3] -= hm * (se0 + ch * (n1 * sh2 - n2 * sh1));
            o[4] -= hm * (se1 + ch * (n2 * sh0 - n0 * sh2));
            o[5] -= hm * (se2 + ch * (n0 * sh1 - n1 * sh0));
        }
#pragma unroll
        for (int c = 0; c < 6; ++c) out[c * field + e * P3 + p] = o[c];
    }
}

// The low-storage Runge-Kutta stage update from a stage's rhs du (n values):
// residual = a residual + dt du (a = 0 discards the residual, which may be uninitialised),
// u += b residual. One pass instead of the array code's five.
template <typename T>
__global__ void galerkin_stage_update_kernel(T* LOBATTO_RESTRICT u, T* LOBATTO_RESTRICT residual,
                                             const T* LOBATTO_RESTRICT du, T a, T b, T dt, index_t n) {
    const index_t stride = (index_t)gridDim.x * blockDim.x;
    for (index_t q = (index_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += stride) {
        const T r = a == T(0) ? dt * du[q] : a * residual[q] + dt * du[q];
        residual[q] = r;
        u[q] += b * r;
    }
}

// The element's own values at its face points, out (6, E, 6, P, P) from u (6, E, P, P, P), face
// f's [a, b] as galerkin_face_node (mesh/topology.py) orders them: what systems/dg.face_values
// computes by six strided slices, a stack and a copy, here in one pass writing in order (the
// traces the exchange sums before every stage).
template <int P, typename T>
__global__ void galerkin_face_values_kernel(const T* LOBATTO_RESTRICT u, T* LOBATTO_RESTRICT out, index_t E) {
    constexpr int P2 = P * P, P3 = P2 * P;
    const index_t n = 36 * E * P2;  // 6 fields x E elements x 6 faces x P^2 points
    const index_t stride = (index_t)gridDim.x * blockDim.x;
    for (index_t q = (index_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += stride) {
        const int ab = (int)(q % P2);
        const index_t cef = q / P2;
        const int f = (int)(cef % 6);
        out[q] = u[(cef / 6) * P3 + galerkin_face_node<P>(f, ab / P, ab % P)];
    }
}

}  // namespace lobatto

// (order + 1, Gauss points, dtype, threads per block, blocks per SM, planes per pass): what
// galerkin_cuda.py names
#define LOBATTO_GALERKIN_INSTANTIATE(P, Q, T, NT, MINB, KP)                                                    \
    template __global__ void lobatto::galerkin_rhs_kernel<P, Q, T, NT, MINB, KP>(                              \
        const T*, const T*, const T*, const lobatto::index_t*, const T*, const T*, const T*, const T*, const T*, \
        T*, T, T, T, T, lobatto::index_t);
#define LOBATTO_GALERKIN_SQUARE_INSTANTIATE(P, T, NT, MINB)                                                   \
    template __global__ void lobatto::galerkin_square_kernel<P, T, NT, MINB>(                                  \
        const T*, const T*, const T*, const lobatto::index_t*, const T*, const T*, const T*, const T*, const T*, \
        T*, T, T, T, T, lobatto::index_t);
// with a per-point medium (LOSS: true with a conductor)
#define LOBATTO_GALERKIN_MEDIA_INSTANTIATE(P, Q, T, NT, MINB, KP, LOSS)                                        \
    template __global__ void lobatto::galerkin_rhs_media_kernel<P, Q, T, NT, MINB, KP, LOSS>(                  \
        const T*, const T*, const T*, const lobatto::index_t*, const T*, const T*, const T*, const T*, const T*, \
        T*, const T*, const T*, T, lobatto::index_t);
#define LOBATTO_GALERKIN_SQUARE_MEDIA_INSTANTIATE(P, T, NT, MINB, LOSS)                                        \
    template __global__ void lobatto::galerkin_square_media_kernel<P, T, NT, MINB, LOSS>(                      \
        const T*, const T*, const T*, const lobatto::index_t*, const T*, const T*, const T*, const T*, const T*, \
        T*, const T*, const T*, T, lobatto::index_t);
#define LOBATTO_GALERKIN_AFFINE_INSTANTIATE(P, T)                                                              \
    template __global__ void lobatto::galerkin_affine_kernel<P, T>(                                            \
        const T*, const T*, const T*, const lobatto::index_t*, lobatto::index_t, const T*, const T*, T*, T, T, T, T, \
        lobatto::index_t);
#define LOBATTO_GALERKIN_FACES_INSTANTIATE(P, T) \
    template __global__ void lobatto::galerkin_face_values_kernel<P, T>(const T*, T*, lobatto::index_t);
#define LOBATTO_GALERKIN_UPDATE_INSTANTIATE(T) \
    template __global__ void lobatto::galerkin_stage_update_kernel<T>(T*, T*, const T*, T, T, T, lobatto::index_t);
