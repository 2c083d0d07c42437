// Shared helpers for the lobatto CUDA kernels (compiled by NVRTC at run time and by nvcc in
// the compile test). No standard headers: NVRTC ships none.
#pragma once

#ifndef LOBATTO_RESTRICT
#define LOBATTO_RESTRICT __restrict__
#endif

namespace lobatto {

typedef long long index_t;  // 64-bit offsets: E * n^3 * 9 can pass 2^31 on big meshes

// Compile-time sizes of one order-N element and its padded shared-memory image.
template <int N>
struct Dims {
    static constexpr int n = N + 1;
    static constexpr int n2 = n * n;
    static constexpr int n3 = n * n * n;
    // Rows padded to an odd length so that lanes walking j (stride RS) or the rows of D hit
    // distinct banks; planes are RS * n long.
    static constexpr int RS = (n % 2 == 0) ? n + 1 : n;
    static constexpr int PS = RS * n;
    static constexpr int ES = PS * n;  // one field of one element in shared memory
};

}  // namespace lobatto
