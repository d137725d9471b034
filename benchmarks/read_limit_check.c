/* The fused kernel against the read limit in plain C, one thread, no Python in the way.
 *
 *   so=$(python -c "from attnviz import native; print(native.build().path)")
 *   cc -O2 benchmarks/read_limit_check.c "$so" -o /tmp/read_limit_check -Wl,-rpath,"$(dirname "$so")"
 *   /tmp/read_limit_check 65536 262144 2097152 33554432  # numbers of x: 256 KiB, 1, 8, 128 MiB
 *
 * For each n: x is n floats (T = n / 1024 rows of H = 1024), read again and again (so a small x
 * stays in cache); 300 rounds of 10 calls of each way to read (read_floats: four streams side
 * by side, mode 0, and one stream, mode 1) and each way to sum (weighted_rows_f32: stripes, mode
 * 0, and tiles, mode 1), the fastest round of each kept (the least disturbed on a shared
 * machine). Prints GB/s of x read by each, and the faster kernel over the faster read: the read
 * limit is the faster read (attnviz.native picks one stream where x fits in the last-level cache,
 * tiles where a thread's share fits in its L2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double read_floats(const float *x, long n, long unit, int threads, int mode);
void weighted_rows_f32(const float *x, const float *w, float *out, float *partial,
                       const long *shape); /* {B, T, H, group, split, threads, mode} */

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
        const long stripes[7] = {1, t, h, 1, 1, 1, 0}, tiles[7] = {1, t, h, 1, 1, 1, 1};
        double best[4] = {1e9, 1e9, 1e9, 1e9}; /* read8, read1, stripes, tiles */
        volatile double sink = 0;
        for (int round = 0; round < 300; round++) {
            for (int way = 0; way < 4; way++) {
                const double t0 = now();
                for (int k = 0; k < 10; k++) {
                    if (way < 2)
                        sink += read_floats(x, n, n, 1, way);
                    else
                        weighted_rows_f32(x, w, out, out, way == 2 ? stripes : tiles);
                }
                const double dt = now() - t0;
                if (dt < best[way]) best[way] = dt;
            }
        }
        const double gb = 10 * n * 4 / 1e9;
        const double limit = best[0] < best[1] ? best[0] : best[1];
        const double fused = best[2] < best[3] ? best[2] : best[3];
        printf("%.3g MiB: read %.3g GB/s (4 streams) %.3g GB/s (1 stream), fused %.3g GB/s "
               "(stripes) %.3g GB/s (tiles), fused / limit %.3g\n",
               n * 4 / 1048576.0, gb / best[0], gb / best[1], gb / best[2], gb / best[3],
               limit / fused);
        free(x);
        free(w);
    }
    return 0;
}
