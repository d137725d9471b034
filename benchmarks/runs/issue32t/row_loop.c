// The access pattern of the kernel's rows off the lines (benchmarks/runs/issue32t, RESULTS fourteenth round),
// loads and adds only: no weights, no shifts. gcc -O3 -march=native row_loop.c -o row_loop; ./row_loop T H
// (one sentence of T rows of H numbers, x 64-byte aligned). Each pattern over the one-stream read.
// -DFIXED_LINES=5: every row's first 5 lines, whatever its length (no branch on a row's last line).
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#define ACC 8
#ifndef FIXED_LINES
#define FIXED_LINES 0
#endif
static float sink;
// P1: one stream, every line once
static __attribute__((noinline)) void p1(const float *x, long nlines) {
    __m512 a[ACC]; for (int k = 0; k < ACC; k++) a[k] = _mm512_setzero_ps();
    long i = 0;
    for (; i + ACC <= nlines; i += ACC) for (int k = 0; k < ACC; k++) a[k] = _mm512_add_ps(a[k], _mm512_load_ps(x + 16 * (i + k)));
    __m512 s = a[0]; for (int k = 1; k < ACC; k++) s = _mm512_add_ps(s, a[k]); sink += _mm512_reduce_add_ps(s);
}
// P2: stripes of rows, each row's lines (shared line reloaded unless once), K stripes a step;
// accumulators per stripe and line (no chain longer than one add a step)
static inline __attribute__((always_inline)) void p2i(const float *x, long rows, long h, const int K, const int once) {
    __m512 a[4][6];
    for (int k = 0; k < 4; k++) for (int v = 0; v < 6; v++) a[k][v] = _mm512_setzero_ps();
    long st = rows / K;
    for (long i = 0; i < st; i++) {
#pragma GCC unroll 4
        for (int k = 0; k < K; k++) {
            const float *row = x + (k * st + i) * h;
            long m = ((uintptr_t)row & 63) / 4;
            long lines = FIXED_LINES ? FIXED_LINES : (m + h + 15) / 16;
            const float *l0 = row - m;
            const int skip = once && m;
#pragma GCC unroll 6
            for (int v = 0; v < 6; v++) if (v < lines && !(v == 0 && skip)) a[k][v] = _mm512_add_ps(a[k][v], _mm512_load_ps(l0 + 16 * v));
        }
    }
    __m512 s = _mm512_setzero_ps();
    for (int k = 0; k < 4; k++) for (int v = 0; v < 6; v++) s = _mm512_add_ps(s, a[k][v]);
    sink += _mm512_reduce_add_ps(s);
}
static __attribute__((noinline)) void p2(const float *x, long rows, long h, int K, int once) {
    if (K == 4) { if (once) p2i(x, rows, h, 4, 1); else p2i(x, rows, h, 4, 0); }
    else if (K == 2) { if (once) p2i(x, rows, h, 2, 1); else p2i(x, rows, h, 2, 0); }
    else { if (once) p2i(x, rows, h, 1, 1); else p2i(x, rows, h, 1, 0); }
}
int main(int argc, char **argv) {
    long rows = atol(argv[1]), h = atol(argv[2]);
    long n = rows * h, nlines = (n + 15) / 16;
    float *x = aligned_alloc(64, (nlines + 1) * 64);
    for (long i = 0; i < (nlines + 1) * 16; i++) x[i] = 1.0f;
    double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < 3000; r++) {
        double t;
        t = now(); p1(x, nlines); t = now() - t; if (t < best[0]) best[0] = t;
        t = now(); p2(x, rows, h, 4, 0); t = now() - t; if (t < best[1]) best[1] = t;
        t = now(); p2(x, rows, h, 1, 0); t = now() - t; if (t < best[2]) best[2] = t;
        t = now(); p2(x, rows, h, 4, 1); t = now() - t; if (t < best[3]) best[3] = t;
        t = now(); p2(x, rows, h, 1, 1); t = now() - t; if (t < best[4]) best[4] = t;
        t = now(); p2(x, rows, h, 2, 0); t = now() - t; if (t < best[5]) best[5] = t;
    }
    printf("%ldx%ld: one stream %.1f GB/s | rows' lines: 4 stripes %.3f, 2 stripes %.3f, 1 stripe %.3f | shared line once: 4 stripes %.3f, 1 stripe %.3f\n",
           rows, h, n * 4 / best[0] / 1e9, best[0] / best[1], best[0] / best[5], best[0] / best[2], best[0] / best[3], best[0] / best[4]);
    return 0;
}
