/* Phases of the Galerkin form's compiled rhs (src/lobatto/systems/maxwell/kernels/galerkin.c) on
 * random data, one thread: the whole galerkin_rhs and the general path's volume, face and mass
 * parts alone (at NG = NP the rhs is square_rhs instead, which these parts do not time), each
 * the fewest CPU seconds (CLOCK_THREAD_CPUTIME_ID: others' load on a shared machine does not
 * count) of 15 runs of 10 calls on E = 10 elements.
 *
 *   cc -O3 -march=native -fno-math-errno -ffp-contract=fast -std=gnu99 -DNP=8 -DNG=8 -DREAL=double \
 *      -DGALERKIN_SRC='"../src/lobatto/systems/maxwell/kernels/galerkin.c"' galerkin_c_phases.c -lm \
 *      -o /tmp/phases && /tmp/phases
 * (-DVW=4 or 16 tries another vector width.)
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <time.h>
#include GALERKIN_SRC

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static REAL *random_array(size_t n)
{
    REAL *a = malloc(n * sizeof(REAL));
    for (size_t i = 0; i < n; i++) a[i] = (REAL)(rand() / (double)RAND_MAX - 0.5);
    return a;
}

int main(void)
{
    const idx_t E = 10;
    const int reps = 10, trials = 15;
    REAL *u = random_array(6 * E * NP3), *sums = random_array(6 * E * 6 * NP2), *factors = random_array(2 * E * 6);
    REAL *v = random_array(NG * NP), *cof = random_array(9 * E * NG3), *ijw = random_array(E * NG3);
    REAL *minv = random_array(NP2), *D = random_array(NP2), *normals = random_array(3 * E * 6 * NG2);
    REAL *weights = random_array(E * 6 * NG2), *out = random_array(6 * E * NP3);
    for (int i = 0; i < 2 * E * 6; i++) factors[i] = 1;
    double whole = 1e9, volume = 1e9, face = 1e9, mass = 1e9;
    galerkin_rhs(u, sums, factors, v, cof, ijw, minv, D, normals, weights, NULL, NULL, out, E, 0, E, 1, 1, 1);
    matrices_t *m;
    scratch_t *s;
    if (posix_memalign((void **)&m, 64, sizeof(matrices_t)) || posix_memalign((void **)&s, 64, sizeof(scratch_t)))
        return 1;
    memset(s, 0, sizeof(scratch_t));
    REAL *mm = (REAL *)m;
    for (size_t i = 0; i < sizeof(matrices_t) / sizeof(REAL); i++) mm[i] = (REAL)(rand() / (double)RAND_MAX - 0.5);
    m->inv_eps = m->inv_mu = m->ae = m->ah = 1;
    for (int t = 0; t < trials; t++) {
        double a = now();
        for (int r = 0; r < reps; r++)
            galerkin_rhs(u, sums, factors, v, cof, ijw, minv, D, normals, weights, NULL, NULL, out, E, 0, E, 1, 1, 1);
        double b = now();
        for (int r = 0; r < reps; r++)
            for (idx_t e = 0; e < E; e++) volume_load(m, s, cof, E, e);
        double c = now();
        for (int r = 0; r < reps; r++)
            for (idx_t e = 0; e < E; e++) face_load(m, s, sums, factors, normals, weights, E, e, 0);
        double d = now();
        for (int r = 0; r < reps; r++)
            for (idx_t e = 0; e < E; e++) inverse_mass(m, s, ijw, out, E * NP3, e);
        double f = now();
        whole = (b - a) / reps < whole ? (b - a) / reps : whole;
        volume = (c - b) / reps < volume ? (c - b) / reps : volume;
        face = (d - c) / reps < face ? (d - c) / reps : face;
        mass = (f - d) / reps < mass ? (f - d) / reps : mass;
    }
    printf("NP=%d NG=%d VW=%d, %d elements, ms per call: rhs %.3f  volume %.3f  face %.3f  mass %.3f  [%g]\n", NP, NG,
           VW, (int)E, whole * 1e3, volume * 1e3, face * 1e3, mass * 1e3, out[5]);
    return 0;
}
