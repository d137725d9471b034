/* The fused kernel against the read limit in plain C, one thread, no Python in the way.
 *
 *   so=$(python -c "from attnviz import native; print(native.build().path)")
 *   cc -O2 benchmarks/read_limit_check.c "$so" -o /tmp/read_limit_check -Wl,-rpath,"$(dirname "$so")"
 *   /tmp/read_limit_check 65536 2097152 33554432     # numbers of x: 256 KiB, 8 MiB, 128 MiB
 *
 * For each n: x is n floats (T = n / 1024 rows of H = 1024), read again and again (so a small x
 * stays in cache); 300 rounds of 10 calls of read_floats and 10 of weighted_rows_f32, the fastest
 * round of each kept (the least disturbed on a shared machine). Prints GB/s of x read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double read_floats(const float *x, long n, long unit, int threads);
void weighted_rows_f32(const float *x, const float *w, float *out, float *partial,
                       const long *shape); /* {B, T, H, group, split, threads} */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        const long h = 1024, n = atol(argv[a]) / h * h, t = n / h;
        float *x = aligned_alloc(64, n * sizeof(float)), *w = aligned_alloc(64, t * sizeof(float));
        float out[1024];
        if (!x || !w || t < 1) return 1;
        for (long i = 0; i < n; i++) x[i] = (float)(i % 7);
        for (long i = 0; i < t; i++) w[i] = 0.5f;
        const long shape[6] = {1, t, h, 1, 1, 1};
        double best_read = 1e9, best_fused = 1e9;
        volatile double sink = 0;
        for (int round = 0; round < 300; round++) {
            const double t0 = now();
            for (int k = 0; k < 10; k++) sink += read_floats(x, n, n, 1);
            const double t1 = now();
            for (int k = 0; k < 10; k++) weighted_rows_f32(x, w, out, out, shape);
            const double t2 = now();
            if (t1 - t0 < best_read) best_read = t1 - t0;
            if (t2 - t1 < best_fused) best_fused = t2 - t1;
        }
        printf("%.3g MiB: read limit %.3g GB/s, fused %.3g GB/s, fused / limit %.3g\n",
               n * 4 / 1048576.0, 10 * n * 4 / best_read / 1e9, 10 * n * 4 / best_fused / 1e9,
               best_read / best_fused);
        free(x);
        free(w);
    }
    return 0;
}
