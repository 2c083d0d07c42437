/* CPU STREAM kernels of `lobatto sysbench` (lobatto/bench/sysbench_cpu.py), McCalpin's four:
 *     copy  c = a          scale b = q c          add  c = a + b          triad a = b + q c
 * Built by lobatto.jit.c with -fopenmp when the compiler has it. Every loop, stream_init's
 * included, is a `parallel for` with the static schedule, so each thread first touches (and on
 * a NUMA host places) the pages it later streams through.
 */
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef int64_t idx_t;

void lobatto_set_num_threads(int n)
{
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

int lobatto_get_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int lobatto_has_openmp(void)
{
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

void stream_init(double *restrict a, double *restrict b, double *restrict c, idx_t n, double va, double vb,
                 double vc)
{
#pragma omp parallel for schedule(static)
    for (idx_t i = 0; i < n; ++i) {
        a[i] = va;
        b[i] = vb;
        c[i] = vc;
    }
}

void stream_copy(const double *restrict a, double *restrict c, idx_t n)
{
#pragma omp parallel for schedule(static)
    for (idx_t i = 0; i < n; ++i) c[i] = a[i];
}

void stream_scale(double *restrict b, const double *restrict c, double q, idx_t n)
{
#pragma omp parallel for schedule(static)
    for (idx_t i = 0; i < n; ++i) b[i] = q * c[i];
}

void stream_add(const double *restrict a, const double *restrict b, double *restrict c, idx_t n)
{
#pragma omp parallel for schedule(static)
    for (idx_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void stream_triad(double *restrict a, const double *restrict b, const double *restrict c, double q, idx_t n)
{
#pragma omp parallel for schedule(static)
    for (idx_t i = 0; i < n; ++i) a[i] = b[i] + q * c[i];
}
