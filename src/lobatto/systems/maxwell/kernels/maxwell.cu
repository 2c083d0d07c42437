// Tuned SEDG Maxwell kernels: face traces, right-hand side, and the fused low-storage RK stage.
//
// Same semantics as lobatto/systems/maxwell/reference.py (the oracle). Layouts (C order):
//   u, residual, out : (6, E, n, n, n)   fields Ex Ey Ez Hx Hy Hz, axes [k, j, i]
//   sums, traces     : (6, E, 6, n, n)   face points [a, b] of faces 0..5
//   metrics          : (3, 3, E, n, n, n) metrics[b, a] = d r_b / d x_a;  jacobian: (E, n, n, n) det(dx/dr)
//   compact          : (E, 9)            metrics of affine elements, [b * 3 + a]
//   normals          : (3, E, 6, n, n);  lift: (E, 6, n, n);  factors: (2, E, 6);  D: (n, n)
// On a 2-D mesh (template parameter DIM = 2; DIM = 3 above) the k axis has one point and there are
// four faces (edges) whose a axis has one point: u (6, E, 1, n, n), sums (6, E, 4, 1, n),
// metrics (3, 3, E, 1, n, n), normals (3, E, 4, 1, n), lift (E, 4, 1, n), factors (2, E, 4).
// The t derivative is skipped (d/dz = 0: metrics[0..1, 2] are 0 and dz/dt = 1), so each of the
// n^2 points of an element does the r and s sums only (reference.py: the same formulas).
//
// maxwell_operator<N, T, MODE>: one block owns `epb` consecutive elements of [first, stop)
// (a stage may run interior elements while the exchange is in flight, the rest after). It copies their six
// fields (each read once from device memory) and D into shared memory, then every thread walks
// its points: 18 reference derivatives from shared memory, the chain rule (per-point metrics,
// or the element's compact metrics when it is affine), the curl, the lifted surface flux at
// face points, and either writes the right-hand side (MODE 0) or does the 2N-storage RK update
// residual = a * residual + dt * rhs; u += b * residual (MODE 1, u updated in place).
// MODE 2 is MODE 1 with the face exchange folded in (conforming mesh): the sums are the
// element's own trace, recomputed from u in shared memory, plus its partner face point's
// trace read from `trace_in`, or from `ghost` where the partner lives on another rank
// (partner[fp] == -1: boundary, own trace only), and the traces of the updated u are written
// to `trace_out` for the next stage (when write_traces).
//
// FP (face phase): when true the block first computes the lifted flux of every face point of
// its elements, one thread per face point (all of their loads independent, coalesced), into
// shared memory; the volume pass then adds it from there. When false (shared memory too
// small) each volume point on a face loads and computes its face terms itself.
//
// SPLIT: the volume curl in split form (reference.py, tensor.split_curl) on the elements that
// are not affine: 1/(2J) sum_b (J a^b x d_b F + d_b(J a^b x F)); each thread forms the products
// J a^b x F at the points of its three lines. SPLIT 1: the block keeps J a^b of its curved
// elements in shared memory (9 values per point, from the metrics and J read once); SPLIT 2
// (orders whose shared memory cannot hold it): J and the metrics at the line points come from
// device memory, through the caches. SPLIT 0: the chain rule alone (a mesh of affine elements,
// where it equals the split form).
//
// Byte and flop model: docs/cuda.md.

#include "common.cuh"

namespace lobatto {

// Face f of the reference element, point (a, b) of its [a, b] grid -> volume (k, j, i).
template <int N>
__device__ __forceinline__ void face_to_kji(int f, int a, int b, int& k, int& j, int& i) {
    switch (f) {
        case 0: k = a; j = b; i = 0; break;
        case 1: k = a; j = b; i = N; break;
        case 2: k = a; j = 0; i = b; break;
        case 3: k = a; j = N; i = b; break;
        case 4: k = 0; j = a; i = b; break;
        default: k = N; j = a; i = b; break;
    }
}

// The same point as a volume index (k * n + j) * n + i.
template <int N>
__device__ __forceinline__ int face_to_volume(int f, int a, int b) {
    constexpr int n = N + 1;
    int k, j, i;
    face_to_kji<N>(f, a, b, k, j, i);
    return (k * n + j) * n + i;
}

// Sizes of an order-N element of a DIM-dimensional mesh (DIM = 2: one point along k and along a
// face's a axis, four faces) and its padded shared-memory image.
template <int N, int DIM>
struct MDims {
    static_assert(DIM == 2 || DIM == 3, "a Maxwell mesh has dimension 2 or 3");
    static constexpr int n = N + 1;
    static constexpr int nz = DIM == 3 ? n : 1;  // points along k (and along a face's a axis)
    static constexpr int NF = 2 * DIM;            // faces per element
    static constexpr int nfp = nz * n;          // points per face
    static constexpr int npe = nz * n * n;      // points per element
    static constexpr int RS = Dims<N>::RS, PS = Dims<N>::PS;
    static constexpr int ES = PS * nz;  // one field of one element in shared memory
};

// Whether kernels read metrics[b][a] (t = 3 b + a): all nine in 3-D; in 2-D b, a < 2 only, the
// others being 0 (dr/dz = ds/dz = 0) or unused (the t row: no t derivative).
template <int DIM>
__device__ __forceinline__ constexpr bool metric_read(int t) {
    return DIM == 3 || (t < 6 && t % 3 != 2);
}

// Lifted upwind/central flux of one face point, added to rhs. se*, sh* are the E and H trace
// sums already scaled by the face factors; L is the point's lift weight. The one copy of this
// arithmetic for both the sums and the folded-exchange paths, so that they round alike. The
// callers keep their own loads and scaling: moving those in here changes the generated code.
template <typename T>
__device__ __forceinline__ void add_lifted_flux(T (&rhs)[6], T se0, T se1, T se2, T sh0, T sh1, T sh2, T nx, T ny, T nz,
                                                T L, T inv_eps, T inv_mu, T ce, T ch) {
    // n x S_E and n x S_H
    const T ce0 = ny * se2 - nz * se1, ce1 = nz * se0 - nx * se2, ce2 = nx * se1 - ny * se0;
    const T ch0 = ny * sh2 - nz * sh1, ch1 = nz * sh0 - nx * sh2, ch2 = nx * sh1 - ny * sh0;
    const T le = T(0.5) * (L * inv_eps);
    const T lh = T(0.5) * (L * inv_mu);
    rhs[0] += (sh0 - ce * ce0) * le;
    rhs[1] += (sh1 - ce * ce1) * le;
    rhs[2] += (sh2 - ce * ce2) * le;
    rhs[3] += (-se0 - ch * ch0) * lh;
    rhs[4] += (-se1 - ch * ch1) * lh;
    rhs[5] += (-se2 - ch * ch2) * lh;
}

// The flux with the trace sums read from `sums` (MODE 0 and 1).
template <int N, int DIM, typename T>
__device__ __forceinline__ void add_face_flux(T (&rhs)[6], const T* LOBATTO_RESTRICT sums,
                                              const T* LOBATTO_RESTRICT normals,
                                              const T* LOBATTO_RESTRICT lift,
                                              const T* LOBATTO_RESTRICT factors, index_t E, index_t e,
                                              int f, int a, int b, T inv_eps, T inv_mu, T ce, T ch) {
    using M = MDims<N, DIM>;
    const index_t fs = E * M::NF * M::nfp;  // component stride of sums and normals
    const index_t fp = ((e * M::NF + f) * M::nz + a) * M::n + b;
    const T fe = factors[e * M::NF + f];
    const T fh = factors[E * M::NF + e * M::NF + f];
    const T se0 = sums[fp] * fe, se1 = sums[fs + fp] * fe, se2 = sums[2 * fs + fp] * fe;
    const T sh0 = sums[3 * fs + fp] * fh, sh1 = sums[4 * fs + fp] * fh, sh2 = sums[5 * fs + fp] * fh;
    const T nx = normals[fp], ny = normals[fs + fp], nz = normals[2 * fs + fp];
    const T L = lift[fp];
    add_lifted_flux<T>(rhs, se0, se1, se2, sh0, sh1, sh2, nx, ny, nz, L, inv_eps, inv_mu, ce, ch);
}

// A medium given per point (materials.py): 1/eps, 1/mu, sigma/eps at the volume points and the
// impedance-weighted flux coefficients a, b, c, d at the face points, (4, E, 6, n, n). A diagonal
// eps, mu (anisotropy.py): the point arrays are (3, E, n, n, n) with component stride cs = E n^3
// and the coefficients (3, 4, E, 6, n, n) with stride fcs = 4 E 6 n^2; both 0 otherwise.
template <typename T>
struct Medium {
    const T* inv_eps;
    const T* inv_mu;
    const T* sigma_eps;  // read only when has_sigma
    const T* flux;
    int has_sigma;
    index_t cs;
    index_t fcs;
};

// The lifted flux of a face point in a medium given per point, before the point's 1/eps, 1/mu
// (se*, sh* the trace sums scaled by the face factors; coeff the a, b, c, d arrays, stride fs;
// fcs the stride of component i's own a, b, c, d, 0 unless eps, mu are diagonal tensors):
// F_E = (a S_H - alpha b n x S_E) L,  F_H = -(c S_E + alpha d n x S_H) L (materials.py).
template <typename T>
__device__ __forceinline__ void add_lifted_flux_medium(T (&rhs)[6], T se0, T se1, T se2, T sh0, T sh1, T sh2, T nx,
                                                       T ny, T nz, T L, const T* LOBATTO_RESTRICT coeff, index_t fs,
                                                       index_t fp, T alpha, index_t fcs = 0) {
    const T ce[3] = {ny * se2 - nz * se1, nz * se0 - nx * se2, nx * se1 - ny * se0};
    const T ch[3] = {ny * sh2 - nz * sh1, nz * sh0 - nx * sh2, nx * sh1 - ny * sh0};
    const T sev[3] = {se0, se1, se2}, shv[3] = {sh0, sh1, sh2};
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const T* k = coeff + i * fcs + fp;
        const T ka = k[0], kb = alpha * k[fs], kc = k[2 * fs], kd = alpha * k[3 * fs];
        rhs[i] += (ka * shv[i] - kb * ce[i]) * L;
        rhs[3 + i] -= (kc * sev[i] + kd * ch[i]) * L;
    }
}

// The flux of a face point in a medium given per point, with the sums read from `sums`.
template <int N, int DIM, typename T>
__device__ __forceinline__ void add_face_flux_medium(T (&rhs)[6], const T* LOBATTO_RESTRICT sums,
                                                     const T* LOBATTO_RESTRICT normals,
                                                     const T* LOBATTO_RESTRICT lift,
                                                     const T* LOBATTO_RESTRICT factors,
                                                     const T* LOBATTO_RESTRICT coeff, index_t E, index_t e, int f,
                                                     int a, int b, T alpha, index_t fcs = 0) {
    using M = MDims<N, DIM>;
    const index_t fs = E * M::NF * M::nfp;
    const index_t fp = ((e * M::NF + f) * M::nz + a) * M::n + b;
    const T fe = factors[e * M::NF + f];
    const T fh = factors[E * M::NF + e * M::NF + f];
    const T se0 = sums[fp] * fe, se1 = sums[fs + fp] * fe, se2 = sums[2 * fs + fp] * fe;
    const T sh0 = sums[3 * fs + fp] * fh, sh1 = sums[4 * fs + fp] * fh, sh2 = sums[5 * fs + fp] * fh;
    const T nx = normals[fp], ny = normals[fs + fp], nz = normals[2 * fs + fp];
    add_lifted_flux_medium<T>(rhs, se0, se1, se2, sh0, sh1, sh2, nx, ny, nz, lift[fp], coeff, fs, fp, alpha, fcs);
}

// -(n x F) for the three components in v[0..2]
template <typename T>
__device__ __forceinline__ void neg_n_cross(T nx, T ny, T nz, T v0, T v1, T v2, T& o0, T& o1, T& o2) {
    o0 = -(ny * v2 - nz * v1);
    o1 = -(nz * v0 - nx * v2);
    o2 = -(nx * v1 - ny * v0);
}

// MODE 2's flux: sums = own trace (from the old u at this point) + the partner's trace:
// partner p >= 0 is a point of this rank (trace_in[c * fs + p]), p == -1 none (boundary),
// and with GHOSTS (MODE 3) p <= -2 a point of another rank whose trace arrived in
// ghost[6 * (-2 - p) + c]. The one-rank kernel is compiled without the ghost case: a second
// branch there cost 20-40 % of the stage's time on an H200 (selects below cost less).
template <int N, int DIM, typename T, bool GHOSTS, bool MAT = false>
__device__ __forceinline__ void add_face_flux_pairs(T (&rhs)[6], const T (&uo)[6], const T* LOBATTO_RESTRICT trace_in,
                                                    const T* LOBATTO_RESTRICT ghost,
                                                    const int* LOBATTO_RESTRICT partner,
                                                    const T* LOBATTO_RESTRICT normals,
                                                    const T* LOBATTO_RESTRICT lift,
                                                    const T* LOBATTO_RESTRICT factors, index_t E, index_t e, int f,
                                                    int a, int b, T inv_eps, T inv_mu, T ce, T ch,
                                                    const T* LOBATTO_RESTRICT coeff = nullptr, index_t fcs = 0) {
    using M = MDims<N, DIM>;
    const index_t fs = E * M::NF * M::nfp;
    const index_t fp = ((e * M::NF + f) * M::nz + a) * M::n + b;
    const T nx = normals[fp], ny = normals[fs + fp], nz = normals[2 * fs + fp];
    T se0, se1, se2, sh0, sh1, sh2;
    neg_n_cross(nx, ny, nz, uo[0], uo[1], uo[2], se0, se1, se2);
    neg_n_cross(nx, ny, nz, uo[3], uo[4], uo[5], sh0, sh1, sh2);
    const int p = partner[fp];
    if (!GHOSTS && p >= 0) {
        se0 += trace_in[p];
        se1 += trace_in[fs + p];
        se2 += trace_in[2 * fs + p];
        sh0 += trace_in[3 * fs + p];
        sh1 += trace_in[4 * fs + p];
        sh2 += trace_in[5 * fs + p];
    } else if (GHOSTS && p != -1) {
        const bool here = p >= 0;
        const T* src = here ? trace_in + p : ghost + 6 * (index_t)(-2 - p);
        const index_t st = here ? fs : 1;
        se0 += src[0];
        se1 += src[st];
        se2 += src[2 * st];
        sh0 += src[3 * st];
        sh1 += src[4 * st];
        sh2 += src[5 * st];
    }
    const T fe = factors[e * M::NF + f];
    const T fh = factors[E * M::NF + e * M::NF + f];
    se0 *= fe; se1 *= fe; se2 *= fe;
    sh0 *= fh; sh1 *= fh; sh2 *= fh;
    const T L = lift[fp];
    if (MAT) {
        add_lifted_flux_medium<T>(rhs, se0, se1, se2, sh0, sh1, sh2, nx, ny, nz, L, coeff, fs, fp, ce, fcs);
    } else {
        add_lifted_flux<T>(rhs, se0, se1, se2, sh0, sh1, sh2, nx, ny, nz, L, inv_eps, inv_mu, ce, ch);
    }
}

// Traces -(n x E), -(n x H) of the values v at face point fp (component stride fs of out and
// normals).
template <typename T>
__device__ __forceinline__ void store_face_trace(T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT normals,
                                                 index_t fs, index_t fp, const T (&v)[6]) {
    const T nx = normals[fp], ny = normals[fs + fp], nz = normals[2 * fs + fp];
    T o0, o1, o2;
    neg_n_cross(nx, ny, nz, v[0], v[1], v[2], o0, o1, o2);
    out[fp] = o0;
    out[fs + fp] = o1;
    out[2 * fs + fp] = o2;
    neg_n_cross(nx, ny, nz, v[3], v[4], v[5], o0, o1, o2);
    out[3 * fs + fp] = o0;
    out[4 * fs + fp] = o1;
    out[5 * fs + fp] = o2;
}

// traces of the values v at face point (e, f, a, b)
template <int N, int DIM, typename T>
__device__ __forceinline__ void write_face_trace(T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT normals,
                                                 index_t E, index_t e, int f, int a, int b, const T (&v)[6]) {
    using M = MDims<N, DIM>;
    const index_t fs = E * M::NF * M::nfp;
    const index_t fp = ((e * M::NF + f) * M::nz + a) * M::n + b;
    store_face_trace<T>(out, normals, fs, fp, v);
}

// d_b(A x F) accumulated at one line point: w the derivative weight, A = J a^b there, f = E
// and H there; cv[0..2] += w A x H, cv[3..5] += w A x E.
template <typename T>
__device__ __forceinline__ void add_conservative(T (&cv)[6], T w, T a0, T a1, T a2, const T (&f)[6]) {
    cv[0] += w * (a1 * f[5] - a2 * f[4]);
    cv[1] += w * (a2 * f[3] - a0 * f[5]);
    cv[2] += w * (a0 * f[4] - a1 * f[3]);
    cv[3] += w * (a1 * f[2] - a2 * f[1]);
    cv[4] += w * (a2 * f[0] - a0 * f[2]);
    cv[5] += w * (a0 * f[1] - a1 * f[0]);
}

// MAT: the medium per point (Medium); inv_eps = inv_mu = 1 and ce = alpha then.
// SPLIT: the split curl on curved elements (see the top of this file).
// DIM: the mesh's dimension (2: the k axis and the t derivative are absent, four faces).
template <int N, int DIM, typename T, int MODE, bool FP, bool MAT = false, int SPLIT = 0>
__device__ __forceinline__ void maxwell_operator_body(
    T* u, T* LOBATTO_RESTRICT res_or_out, const T* LOBATTO_RESTRICT sums,
    const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT jacobian, const T* LOBATTO_RESTRICT compact,
    const signed char* LOBATTO_RESTRICT affine, int use_affine, const T* LOBATTO_RESTRICT normals,
    const T* LOBATTO_RESTRICT lift, const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D,
    index_t E, index_t first, index_t stop, int epb, T inv_eps, T inv_mu, T ce, T ch, T a, T b, T dt,
    const T* LOBATTO_RESTRICT trace_in, const T* LOBATTO_RESTRICT ghost,
    T* LOBATTO_RESTRICT trace_out, const int* LOBATTO_RESTRICT partner, int write_traces,
    Medium<T> med = Medium<T>{nullptr, nullptr, nullptr, nullptr, 0, 0, 0}) {
    using Dm = MDims<N, DIM>;
    constexpr int n = Dm::n, n2 = n * n, n3 = Dm::npe;  // n3: points per element (n^2 in 2-D)
    constexpr int RS = Dm::RS, PS = Dm::PS, ES = Dm::ES;
    constexpr int NF = Dm::NF, NFP = Dm::nfp;  // faces, points per face
    constexpr int FS = NF * NFP;               // one component of one element's face points

    extern __shared__ __align__(16) unsigned char lobatto_smem[];
    T* sD = reinterpret_cast<T*>(lobatto_smem);  // D rows, stride RS
    T* su = sD + n * RS;                          // [el][c][k][j][i], padded
    T* sflux = su + epb * 6 * ES;                 // FP: [el][c][f][a][b] lifted face flux
    T* sA = sflux + (FP ? epb * 6 * FS : 0);      // SPLIT 1: [el][b * 3 + a][k][j][i] J a^b, b < DIM

    const index_t e0 = first + (index_t)blockIdx.x * epb;
    const index_t left = stop - e0;
    const int ne = left < epb ? (int)left : epb;
    const int npts = ne * n3;
    const index_t fstride = E * n3;  // field stride of u, residual, out and metrics rows
    const index_t base = e0 * n3;

    for (int q = threadIdx.x; q < n2; q += blockDim.x) sD[(q / n) * RS + (q % n)] = D[q];
    for (int q = threadIdx.x; q < npts; q += blockDim.x) {
        const int el = q / n3, pt = q - el * n3;
        const int k = pt / n2, rem = pt - k * n2, j = rem / n, i = rem - j * n;
        const int so = el * 6 * ES + k * PS + j * RS + i;
        T v[6];
#pragma unroll
        for (int c = 0; c < 6; ++c) v[c] = u[c * fstride + base + q];
#pragma unroll
        for (int c = 0; c < 6; ++c) su[so + c * ES] = v[c];
        if (SPLIT == 1 && !(use_affine && affine[e0 + el])) {
            const T J = jacobian[base + q];
            T* sa = sA + el * 3 * DIM * ES + k * PS + j * RS + i;
#pragma unroll
            for (int t = 0; t < 3 * DIM; ++t)
                if (metric_read<DIM>(t)) sa[t * ES] = J * metrics[t * fstride + base + q];
        }
    }
    __syncthreads();

    if (FP) {
        const int nfp = ne * FS;
        for (int q = threadIdx.x; q < nfp; q += blockDim.x) {
            const int el = q / FS, r = q - el * FS, f = r / NFP, ab = r - f * NFP;
            const int fa = ab / n, fb = ab - fa * n;
            const index_t e = e0 + el;
            T flux[6];
#pragma unroll
            for (int c = 0; c < 6; ++c) flux[c] = T(0);
            if (MODE >= 2) {
                int k, j, i;
                face_to_kji<N>(f, fa, fb, k, j, i);
                const T* se = su + el * 6 * ES + k * PS + j * RS + i;
                T uo[6];
#pragma unroll
                for (int c = 0; c < 6; ++c) uo[c] = se[c * ES];
                add_face_flux_pairs<N, DIM, T, MODE == 3, MAT>(flux, uo, trace_in, ghost, partner, normals, lift, factors, E, e, f,
                                               fa, fb, inv_eps, inv_mu, ce, ch, med.flux, med.fcs);
            } else if (MAT) {
                add_face_flux_medium<N, DIM, T>(flux, sums, normals, lift, factors, med.flux, E, e, f, fa, fb, ce, med.fcs);
            } else {
                add_face_flux<N, DIM, T>(flux, sums, normals, lift, factors, E, e, f, fa, fb, inv_eps, inv_mu, ce, ch);
            }
            T* sf = sflux + el * 6 * FS + f * NFP + ab;
#pragma unroll
            for (int c = 0; c < 6; ++c) sf[c * FS] = flux[c];
        }
        __syncthreads();
    }

    for (int q = threadIdx.x; q < npts; q += blockDim.x) {
        const int el = q / n3, pt = q - el * n3;
        const int k = pt / n2, rem = pt - k * n2, j = rem / n, i = rem - j * n;
        const index_t e = e0 + el;
        const index_t g = base + q;
        const T* se = su + el * 6 * ES;
        const int so = k * PS + j * RS + i;
        const bool curved = SPLIT != 0 && !(use_affine && affine[e]);
        const T* sa = sA + el * 3 * DIM * ES;  // 3 DIM rows per element (cuda_launch.shared_bytes)
        const index_t eb = e * n3;  // SPLIT 2: the element's first point in device memory

        // Loads from device memory first, so that their latency hides behind the shared work.
        T m[9];  // 2-D: m[0], m[1], m[3], m[4] (metric_read), the others 0 and never read
        T jac = T(1);
        if (curved) {  // J a^b here; the chain rule then gives J curl
            jac = jacobian[g];
            if (SPLIT == 1) {
#pragma unroll
                for (int t = 0; t < 9; ++t) m[t] = metric_read<DIM>(t) ? sa[t * ES + so] : T(0);
            } else {
#pragma unroll
                for (int t = 0; t < 9; ++t) m[t] = metric_read<DIM>(t) ? jac * metrics[t * fstride + g] : T(0);
            }
        } else if (use_affine && affine[e]) {
#pragma unroll
            for (int t = 0; t < 9; ++t) m[t] = metric_read<DIM>(t) ? compact[e * 9 + t] : T(0);
        } else {
#pragma unroll
            for (int t = 0; t < 9; ++t) m[t] = metric_read<DIM>(t) ? metrics[t * fstride + g] : T(0);
        }
        T rold[6];
        if (MODE >= 1) {
            if (a != T(0)) {
#pragma unroll
                for (int c = 0; c < 6; ++c) rold[c] = res_or_out[c * fstride + g];
            } else {
#pragma unroll
                for (int c = 0; c < 6; ++c) rold[c] = T(0);
            }
        }

        // 18 reference derivatives: d/dr along i, d/ds along j, d/dt along k.
        T dr[6], ds[6], dtt[6];
        T cv[6];  // SPLIT: sum_b d_b(J a^b x H) and d_b(J a^b x E)
#pragma unroll
        for (int c = 0; c < 6; ++c) dr[c] = ds[c] = dtt[c] = cv[c] = T(0);
        if (curved) {
#pragma unroll
            for (int l = 0; l < n; ++l) {
                const T di = sD[i * RS + l], dj = sD[j * RS + l];
                const int pr = k * PS + j * RS + l, ps = k * PS + l * RS + i;
                T fr[6], fs[6];
#pragma unroll
                for (int c = 0; c < 6; ++c) {
                    fr[c] = se[c * ES + pr];
                    fs[c] = se[c * ES + ps];
                    dr[c] += di * fr[c];
                    ds[c] += dj * fs[c];
                }
                if (SPLIT == 1) {
                    // (2-D: the z components of J a^r and J a^s are 0, not staged)
                    add_conservative<T>(cv, di, sa[pr], sa[ES + pr], DIM == 3 ? sa[2 * ES + pr] : T(0), fr);
                    add_conservative<T>(cv, dj, sa[3 * ES + ps], sa[4 * ES + ps], DIM == 3 ? sa[5 * ES + ps] : T(0), fs);
                } else {
                    const index_t gr = eb + (k * n + j) * n + l, gs = eb + (k * n + l) * n + i;
                    const T jr = jacobian[gr], js = jacobian[gs];
                    add_conservative<T>(cv, di, jr * metrics[gr], jr * metrics[fstride + gr],
                                        DIM == 3 ? jr * metrics[2 * fstride + gr] : T(0), fr);
                    add_conservative<T>(cv, dj, js * metrics[3 * fstride + gs], js * metrics[4 * fstride + gs],
                                        DIM == 3 ? js * metrics[5 * fstride + gs] : T(0), fs);
                }
                if (DIM == 3) {  // the t line (a 2-D field is constant along z)
                    const T dk = sD[k * RS + l];
                    const int pt = l * PS + j * RS + i;
                    T ft[6];
#pragma unroll
                    for (int c = 0; c < 6; ++c) {
                        ft[c] = se[c * ES + pt];
                        dtt[c] += dk * ft[c];
                    }
                    if (SPLIT == 1) {
                        add_conservative<T>(cv, dk, sa[6 * ES + pt], sa[7 * ES + pt], sa[8 * ES + pt], ft);
                    } else {
                        const index_t gt = eb + (l * n + j) * n + i;
                        const T jt = jacobian[gt];
                        add_conservative<T>(cv, dk, jt * metrics[6 * fstride + gt], jt * metrics[7 * fstride + gt],
                                            jt * metrics[8 * fstride + gt], ft);
                    }
                }
            }
        } else {
#pragma unroll
            for (int l = 0; l < n; ++l) {
                const T di = sD[i * RS + l], dj = sD[j * RS + l];
#pragma unroll
                for (int c = 0; c < 6; ++c) {
                    const T* sc = se + c * ES;
                    dr[c] += di * sc[k * PS + j * RS + l];
                    ds[c] += dj * sc[k * PS + l * RS + i];
                }
                if (DIM == 3) {
                    const T dk = sD[k * RS + l];
#pragma unroll
                    for (int c = 0; c < 6; ++c) dtt[c] += dk * se[c * ES + l * PS + j * RS + i];
                }
            }
        }
        // Chain rule: dF/dx_a = sum_b m[b][a] dF/dr_b; only the 12 derivatives the curl needs.
        // 2-D: sum over b < 2, and d/dz (a = 2) is 0 (m[0][2] = m[1][2] = 0 exactly).
#define LOBATTO_GRAD(c, a_)                                                                  \
    (DIM == 3 ? (m[a_] * dr[c] + m[3 + (a_)] * ds[c] + m[6 + (a_)] * dtt[c])                   \
            : ((a_) == 2 ? T(0) : (m[a_] * dr[c] + m[3 + (a_)] * ds[c])))
        T rhs[6];
        if (curved) {  // (J curl + conservative) / (2 J)
            const T h = T(0.5) / jac;
            rhs[0] = (LOBATTO_GRAD(5, 1) - LOBATTO_GRAD(4, 2) + cv[0]) * h * inv_eps;
            rhs[1] = (LOBATTO_GRAD(3, 2) - LOBATTO_GRAD(5, 0) + cv[1]) * h * inv_eps;
            rhs[2] = (LOBATTO_GRAD(4, 0) - LOBATTO_GRAD(3, 1) + cv[2]) * h * inv_eps;
            rhs[3] = -(LOBATTO_GRAD(2, 1) - LOBATTO_GRAD(1, 2) + cv[3]) * h * inv_mu;
            rhs[4] = -(LOBATTO_GRAD(0, 2) - LOBATTO_GRAD(2, 0) + cv[4]) * h * inv_mu;
            rhs[5] = -(LOBATTO_GRAD(1, 0) - LOBATTO_GRAD(0, 1) + cv[5]) * h * inv_mu;
        } else {
            rhs[0] = (LOBATTO_GRAD(5, 1) - LOBATTO_GRAD(4, 2)) * inv_eps;
            rhs[1] = (LOBATTO_GRAD(3, 2) - LOBATTO_GRAD(5, 0)) * inv_eps;
            rhs[2] = (LOBATTO_GRAD(4, 0) - LOBATTO_GRAD(3, 1)) * inv_eps;
            rhs[3] = -(LOBATTO_GRAD(2, 1) - LOBATTO_GRAD(1, 2)) * inv_mu;
            rhs[4] = -(LOBATTO_GRAD(0, 2) - LOBATTO_GRAD(2, 0)) * inv_mu;
            rhs[5] = -(LOBATTO_GRAD(1, 0) - LOBATTO_GRAD(0, 1)) * inv_mu;
        }
#undef LOBATTO_GRAD

        // Surface terms at the face points this volume point lies on (up to three faces).
        if (FP) {
            const T* sf = sflux + el * 6 * FS;
#define LOBATTO_ADD(f_, ab_)                                                   \
    {                                                                         \
        _Pragma("unroll") for (int c = 0; c < 6; ++c) rhs[c] += sf[c * FS + (f_) * NFP + (ab_)]; \
    }
            // (faces 0..3: [a, b] = [k, j] or [k, i], k = 0 in 2-D; faces 4, 5 in 3-D only)
            if (i == 0) LOBATTO_ADD(0, k * n + j);
            if (i == N) LOBATTO_ADD(1, k * n + j);
            if (j == 0) LOBATTO_ADD(2, k * n + i);
            if (j == N) LOBATTO_ADD(3, k * n + i);
            if (DIM == 3 && k == 0) LOBATTO_ADD(4, j * n + i);
            if (DIM == 3 && k == N) LOBATTO_ADD(5, j * n + i);
#undef LOBATTO_ADD
        } else if (MODE >= 2) {
            T uo[6];
#pragma unroll
            for (int c = 0; c < 6; ++c) uo[c] = se[c * ES + so];
#define LOBATTO_PAIRS(f_, a_, b_) \
    add_face_flux_pairs<N, DIM, T, MODE == 3, MAT>(rhs, uo, trace_in, ghost, partner, normals, lift, factors, E, e, f_, a_, b_, inv_eps, inv_mu, ce, ch, med.flux, med.fcs)
            if (i == 0) LOBATTO_PAIRS(0, k, j);
            if (i == N) LOBATTO_PAIRS(1, k, j);
            if (j == 0) LOBATTO_PAIRS(2, k, i);
            if (j == N) LOBATTO_PAIRS(3, k, i);
            if (DIM == 3 && k == 0) LOBATTO_PAIRS(4, j, i);
            if (DIM == 3 && k == N) LOBATTO_PAIRS(5, j, i);
#undef LOBATTO_PAIRS
        } else if (MAT) {
            if (i == 0) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 0, k, j, ce, med.fcs);
            if (i == N) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 1, k, j, ce, med.fcs);
            if (j == 0) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 2, k, i, ce, med.fcs);
            if (j == N) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 3, k, i, ce, med.fcs);
            if (DIM == 3 && k == 0) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 4, j, i, ce, med.fcs);
            if (DIM == 3 && k == N) add_face_flux_medium<N, DIM, T>(rhs, sums, normals, lift, factors, med.flux, E, e, 5, j, i, ce, med.fcs);
        } else {
            if (i == 0) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 0, k, j, inv_eps, inv_mu, ce, ch);
            if (i == N) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 1, k, j, inv_eps, inv_mu, ce, ch);
            if (j == 0) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 2, k, i, inv_eps, inv_mu, ce, ch);
            if (j == N) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 3, k, i, inv_eps, inv_mu, ce, ch);
            if (DIM == 3 && k == 0) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 4, j, i, inv_eps, inv_mu, ce, ch);
            if (DIM == 3 && k == N) add_face_flux<N, DIM, T>(rhs, sums, normals, lift, factors, E, e, 5, j, i, inv_eps, inv_mu, ce, ch);
        }

        if (MAT) {  // (curl H + F_E) / eps - sigma / eps E, (-curl E + F_H) / mu at this point
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                const T se_ = med.has_sigma ? med.sigma_eps[c * med.cs + g] : T(0);
                rhs[c] = rhs[c] * med.inv_eps[c * med.cs + g] - se_ * se[c * ES + so];
            }
#pragma unroll
            for (int c = 3; c < 6; ++c) rhs[c] *= med.inv_mu[(c - 3) * med.cs + g];
        }
        if (MODE == 0) {
#pragma unroll
            for (int c = 0; c < 6; ++c) res_or_out[c * fstride + g] = rhs[c];
        } else {
            T un[6];
#pragma unroll
            for (int c = 0; c < 6; ++c) {
                const T r = a * rold[c] + dt * rhs[c];
                res_or_out[c * fstride + g] = r;
                un[c] = se[c * ES + so] + b * r;
                u[c * fstride + g] = un[c];
            }
            if (MODE >= 2 && write_traces) {
                if (FP) {
                    // Park the new face values in this point's own flux slots (read above by this
                    // thread only); the last phase turns them into traces, coalesced.
                    T* sf = sflux + el * 6 * FS;
#define LOBATTO_PARK(f_, ab_)                                                           \
    {                                                                                  \
        _Pragma("unroll") for (int c = 0; c < 6; ++c) sf[c * FS + (f_) * NFP + (ab_)] = un[c]; \
    }
                    if (i == 0) LOBATTO_PARK(0, k * n + j);
                    if (i == N) LOBATTO_PARK(1, k * n + j);
                    if (j == 0) LOBATTO_PARK(2, k * n + i);
                    if (j == N) LOBATTO_PARK(3, k * n + i);
                    if (DIM == 3 && k == 0) LOBATTO_PARK(4, j * n + i);
                    if (DIM == 3 && k == N) LOBATTO_PARK(5, j * n + i);
#undef LOBATTO_PARK
                } else {
                    if (i == 0) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 0, k, j, un);
                    if (i == N) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 1, k, j, un);
                    if (j == 0) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 2, k, i, un);
                    if (j == N) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 3, k, i, un);
                    if (DIM == 3 && k == 0) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 4, j, i, un);
                    if (DIM == 3 && k == N) write_face_trace<N, DIM, T>(trace_out, normals, E, e, 5, j, i, un);
                }
            }
        }
    }

    if (MODE >= 2 && FP && write_traces) {
        __syncthreads();
        const int nfp = ne * FS;
        for (int q = threadIdx.x; q < nfp; q += blockDim.x) {
            const int el = q / FS, r = q - el * FS, f = r / NFP, ab = r - f * NFP;
            const int fa = ab / n, fb = ab - fa * n;
            const T* sf = sflux + el * 6 * FS + f * NFP + ab;
            T un[6];
#pragma unroll
            for (int c = 0; c < 6; ++c) un[c] = sf[c * FS];
            write_face_trace<N, DIM, T>(trace_out, normals, E, e0 + el, f, fa, fb, un);
        }
    }
}

// The registered kernels (extern "C"-free templates; NVRTC names them by name expressions, so
// only the (N, DIM) a run asks for is compiled).
template <int N, int DIM, typename T, bool FP, int SPLIT>
__global__ void maxwell_rhs_kernel(const T* u, T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT sums,
                                   const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT jacobian,
                                   const T* LOBATTO_RESTRICT compact,
                                   const signed char* LOBATTO_RESTRICT affine, int use_affine,
                                   const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT lift,
                                   const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D, index_t E,
                                   index_t first, index_t stop, int epb, T inv_eps, T inv_mu, T ce, T ch) {
    maxwell_operator_body<N, DIM, T, 0, FP, false, SPLIT>(
        const_cast<T*>(u), out, sums, metrics, jacobian, compact, affine, use_affine, normals, lift, factors, D, E,
        first, stop, epb, inv_eps, inv_mu, ce, ch, T(0), T(0), T(0), nullptr, nullptr, nullptr, nullptr, 0);
}

// The right-hand side in a medium given per point (materials.py); inv_eps = inv_mu = 1, ce = alpha.
template <int N, int DIM, typename T, bool FP, int SPLIT>
__global__ void maxwell_rhs_medium_kernel(const T* u, T* LOBATTO_RESTRICT out, const T* LOBATTO_RESTRICT sums,
                                          const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT jacobian,
                                          const T* LOBATTO_RESTRICT compact,
                                          const signed char* LOBATTO_RESTRICT affine, int use_affine,
                                          const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT lift,
                                          const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D, index_t E,
                                          index_t first, index_t stop, int epb, T inv_eps, T inv_mu, T ce, T ch,
                                          const T* LOBATTO_RESTRICT med_inv_eps, const T* LOBATTO_RESTRICT med_inv_mu,
                                          const T* LOBATTO_RESTRICT med_sigma_eps, const T* LOBATTO_RESTRICT med_flux,
                                          int has_sigma, index_t med_cs) {
    using M = MDims<N, DIM>;
    maxwell_operator_body<N, DIM, T, 0, FP, true, SPLIT>(
        const_cast<T*>(u), out, sums, metrics, jacobian, compact, affine, use_affine, normals, lift, factors, D, E,
        first, stop, epb, inv_eps, inv_mu, ce, ch, T(0), T(0), T(0), nullptr, nullptr, nullptr, nullptr, 0,
        Medium<T>{med_inv_eps, med_inv_mu, med_sigma_eps, med_flux, has_sigma, med_cs,
                  med_cs ? 4 * E * M::NF * M::nfp : 0});
}

template <int N, int DIM, typename T, bool FP, int SPLIT>
__global__ void maxwell_stage_kernel(T* u, T* LOBATTO_RESTRICT residual, const T* LOBATTO_RESTRICT sums,
                                     const T* LOBATTO_RESTRICT metrics, const T* LOBATTO_RESTRICT jacobian,
                                     const T* LOBATTO_RESTRICT compact,
                                     const signed char* LOBATTO_RESTRICT affine, int use_affine,
                                     const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT lift,
                                     const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D, index_t E,
                                     index_t first, index_t stop, int epb, T inv_eps, T inv_mu, T ce, T ch, T a,
                                     T b, T dt) {
    maxwell_operator_body<N, DIM, T, 1, FP, false, SPLIT>(u, residual, sums, metrics, jacobian, compact, affine,
                                                      use_affine, normals, lift, factors, D, E, first, stop, epb,
                                                      inv_eps, inv_mu, ce, ch, a, b, dt, nullptr, nullptr, nullptr,
                                                      nullptr, 0);
}

// The stage with the face exchange folded in (MODE 2, or 3 with ghosts from other ranks).
template <int N, int DIM, typename T, bool FP, bool GHOSTS, int SPLIT>
__global__ void maxwell_stage_pairs_kernel(T* u, T* LOBATTO_RESTRICT residual, const T* LOBATTO_RESTRICT trace_in,
                                           const T* LOBATTO_RESTRICT ghost, T* LOBATTO_RESTRICT trace_out,
                                           const int* LOBATTO_RESTRICT partner,
                                           int write_traces, const T* LOBATTO_RESTRICT metrics,
                                           const T* LOBATTO_RESTRICT jacobian, const T* LOBATTO_RESTRICT compact,
                                           const signed char* LOBATTO_RESTRICT affine, int use_affine,
                                           const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT lift,
                                           const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D, index_t E,
                                           index_t first, index_t stop, int epb, T inv_eps, T inv_mu, T ce, T ch, T a,
                                           T b, T dt) {
    maxwell_operator_body<N, DIM, T, GHOSTS ? 3 : 2, FP, false, SPLIT>(
        u, residual, nullptr, metrics, jacobian, compact, affine, use_affine, normals, lift, factors, D, E, first,
        stop, epb, inv_eps, inv_mu, ce, ch, a, b, dt, trace_in, ghost, trace_out, partner, write_traces);
}

// The fused stage (MODE 2 / 3) in a medium given per point; inv_eps = inv_mu = 1, ce = alpha.
template <int N, int DIM, typename T, bool FP, bool GHOSTS, int SPLIT>
__global__ void maxwell_stage_pairs_medium_kernel(T* u, T* LOBATTO_RESTRICT residual, const T* LOBATTO_RESTRICT trace_in,
                                                  const T* LOBATTO_RESTRICT ghost, T* LOBATTO_RESTRICT trace_out,
                                                  const int* LOBATTO_RESTRICT partner,
                                                  int write_traces, const T* LOBATTO_RESTRICT metrics,
                                                  const T* LOBATTO_RESTRICT jacobian,
                                                  const T* LOBATTO_RESTRICT compact,
                                                  const signed char* LOBATTO_RESTRICT affine, int use_affine,
                                                  const T* LOBATTO_RESTRICT normals, const T* LOBATTO_RESTRICT lift,
                                                  const T* LOBATTO_RESTRICT factors, const T* LOBATTO_RESTRICT D,
                                                  index_t E, index_t first, index_t stop, int epb, T inv_eps, T inv_mu,
                                                  T ce, T ch, T a, T b, T dt,
                                                  const T* LOBATTO_RESTRICT med_inv_eps,
                                                  const T* LOBATTO_RESTRICT med_inv_mu,
                                                  const T* LOBATTO_RESTRICT med_sigma_eps,
                                                  const T* LOBATTO_RESTRICT med_flux, int has_sigma,
                                                  index_t med_cs) {
    using M = MDims<N, DIM>;
    maxwell_operator_body<N, DIM, T, GHOSTS ? 3 : 2, FP, true, SPLIT>(
        u, residual, nullptr, metrics, jacobian, compact, affine, use_affine, normals, lift, factors, D, E, first,
        stop, epb, inv_eps, inv_mu, ce, ch, a, b, dt, trace_in, ghost, trace_out, partner, write_traces,
        Medium<T>{med_inv_eps, med_inv_mu, med_sigma_eps, med_flux, has_sigma, med_cs,
                  med_cs ? 4 * E * M::NF * M::nfp : 0});
}

// traces[c, e, f, a, b] = -(n x E)_c (c < 3), -(n x H)_{c-3} (c >= 3) at every face point.
// One thread per face point (grid-stride); faces 0 and 1 of an element are neighbours in the
// index, so their strided reads of u share cache lines.
template <int N, int DIM, typename T>
__global__ void maxwell_traces_kernel(const T* LOBATTO_RESTRICT u, const T* LOBATTO_RESTRICT normals,
                                      T* LOBATTO_RESTRICT out, index_t E) {
    using M = MDims<N, DIM>;
    constexpr int n = M::n, nfp = M::nfp, npe = M::npe, NF = M::NF;
    const index_t total = E * NF * nfp;
    const index_t fstride = E * npe;
    for (index_t idx = (index_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (index_t)gridDim.x * blockDim.x) {
        const index_t ef = idx / nfp;
        const int ab = (int)(idx - ef * nfp);
        const int a = ab / n, b = ab - a * n;  // a = 0 in 2-D (k = 0)
        const index_t e = ef / NF;
        const int f = (int)(ef - e * NF);
        const index_t g = e * npe + face_to_volume<N>(f, a, b);
        T v[6];
#pragma unroll
        for (int c = 0; c < 6; ++c) v[c] = u[c * fstride + g];
        store_face_trace<T>(out, normals, total, idx, v);
    }
}

}  // namespace lobatto

// Explicit instantiation for offline compilation checks (tests/unit/test_cuda_compile.py):
// LOBATTO_MAXWELL_INSTANTIATE_DIM(N, DIM, T) for a D-dimensional mesh, LOBATTO_MAXWELL_INSTANTIATE(N, T)
// for DIM = 3.
#define LOBATTO_MAXWELL_INSTANTIATE_PAIRS(N, DIM, T, FP, G, C)                                                   \
    template __global__ void lobatto::maxwell_stage_pairs_kernel<N, DIM, T, FP, G, C>(                           \
        T*, T*, const T*, const T*, T*, const int*, int, const T*, const T*, const T*, const signed char*, int, \
        const T*, const T*, const T*, const T*, lobatto::index_t, lobatto::index_t, lobatto::index_t, int, T, T, \
        T, T, T, T, T);                                                                                        \
    template __global__ void lobatto::maxwell_stage_pairs_medium_kernel<N, DIM, T, FP, G, C>(                    \
        T*, T*, const T*, const T*, T*, const int*, int, const T*, const T*, const T*, const signed char*, int, \
        const T*, const T*, const T*, const T*, lobatto::index_t, lobatto::index_t, lobatto::index_t, int, T, T, \
        T, T, T, T, T, const T*, const T*, const T*, const T*, int, lobatto::index_t);

#define LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, FP, C)                                                         \
    template __global__ void lobatto::maxwell_rhs_kernel<N, DIM, T, FP, C>(                                      \
        const T*, T*, const T*, const T*, const T*, const T*, const signed char*, int, const T*, const T*,    \
        const T*, const T*, lobatto::index_t, lobatto::index_t, lobatto::index_t, int, T, T, T, T);            \
    template __global__ void lobatto::maxwell_rhs_medium_kernel<N, DIM, T, FP, C>(                               \
        const T*, T*, const T*, const T*, const T*, const T*, const signed char*, int, const T*, const T*,    \
        const T*, const T*, lobatto::index_t, lobatto::index_t, lobatto::index_t, int, T, T, T, T, const T*,  \
        const T*, const T*, const T*, int, lobatto::index_t);                                                  \
    template __global__ void lobatto::maxwell_stage_kernel<N, DIM, T, FP, C>(                                    \
        T*, T*, const T*, const T*, const T*, const T*, const signed char*, int, const T*, const T*, const T*, \
        const T*, lobatto::index_t, lobatto::index_t, lobatto::index_t, int, T, T, T, T, T, T, T);             \
    LOBATTO_MAXWELL_INSTANTIATE_PAIRS(N, DIM, T, FP, false, C)                                               \
    LOBATTO_MAXWELL_INSTANTIATE_PAIRS(N, DIM, T, FP, true, C)

#define LOBATTO_MAXWELL_INSTANTIATE_DIM(N, DIM, T)                                                               \
    LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, true, 0)                                                           \
    LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, false, 0)                                                          \
    LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, true, 1)                                                           \
    LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, false, 1)                                                          \
    LOBATTO_MAXWELL_INSTANTIATE_FP(N, DIM, T, false, 2)                                                          \
    template __global__ void lobatto::maxwell_traces_kernel<N, DIM, T>(const T*, const T*, T*, lobatto::index_t);

#define LOBATTO_MAXWELL_INSTANTIATE(N, T) LOBATTO_MAXWELL_INSTANTIATE_DIM(N, 3, T)
