/* Two builds of the fused kernel against the read limit, paired in one process (plain C, no
 * Python in the way): how RESULTS.md's "plain C, paired in one process" numbers are measured.
 * Built and run by benchmarks/pair_kernels.sh, which compiles each tree's weighted_rows.c with
 * its entry point renamed (weighted_rows_f32 -> wr_a, wr_b).
 *
 *   pair_kernels B T H GROUP SPLIT THREADS MODE [AROUND]
 *
 * (the kernel's shape argument, as native.py plans it). With B_PLAN="GROUP SPLIT THREADS MODE" in the
 * environment, B is called with that plan instead (two plans of one tree, built twice). x (B, T, H) and w (B, T) hold fresh random
 * numbers; x starts on a 64-byte line, and the 64 bytes before it and everything after it up to
 * the next line but one hold AROUND, the bits of a float (0 unless given: 0x31, a subnormal, is
 * what a malloc header past a small tensor's end reads as; the kernel reads whole lines). Both builds are first checked against a
 * float64 reference (a build that sums wrongly is reported and not timed, unless TIME_WRONG=1 is in the
 * environment: an experiment that bounds a change, its sums wrong on purpose). Then rounds of one block
 * of 10 calls of each: the read limit's three ways (read_floats modes 0-2), A and B, in that
 * order; the fastest block of each is kept (the least disturbed on a shared machine). Prints the
 * read limit (the fastest way) in GB/s and each build's fastest block over the limit's (with
 * OUT_AT=BYTES in the environment, out lies that many bytes into a 4 KiB page): the
 * same x, in the same place, in the same process, so that where x sits in memory (which moves
 * results by a few % from one process to the next) is the same for both.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double read_floats(const float *x, long n, long unit, int threads, int mode);
void wr_a(const float *x, const float *w, float *out, float *partial, const long *shape);
void wr_b(const float *x, const float *w, float *out, float *partial, const long *shape);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* the largest |out - ref| over the largest |ref| (0 where ref is all 0) */
static double error(const float *out, const double *ref, long n) {
    double err = 0.0, scale = 0.0;
    for (long i = 0; i < n; i++) {
        const double e = fabs(out[i] - ref[i]);
        err = e > err || isnan(e) ? e : err;
        scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
    }
    return scale > 0.0 ? err / scale : err;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: %s B T H GROUP SPLIT THREADS MODE [AROUND]\n", argv[0]);
        return 2;
    }
    const uint32_t around = argc == 9 ? (uint32_t)strtoul(argv[8], NULL, 0) : 0;
    long sh[7];
    for (int i = 0; i < 7; i++) sh[i] = atol(argv[1 + i]);
    const long b = sh[0], t = sh[1], h = sh[2], n = b * t * h;
    if (b <= 0 || t <= 0 || h <= 0 || sh[3] <= 0 || sh[4] <= 0 || sh[5] <= 0) {
        fprintf(stderr, "B, T, H, GROUP, SPLIT and THREADS must be positive\n");
        return 2;
    }
    long shb[7]; /* B's shape: A's, or another plan of the same x (B_PLAN) */
    for (int i = 0; i < 7; i++) shb[i] = sh[i];
    const char *plan_b = getenv("B_PLAN");
    if (plan_b && (sscanf(plan_b, "%ld %ld %ld %ld", &shb[3], &shb[4], &shb[5], &shb[6]) != 4 ||
                   shb[3] <= 0 || shb[4] <= 0 || shb[5] <= 0)) {
        fprintf(stderr, "B_PLAN must be four numbers: GROUP SPLIT THREADS MODE, positive but MODE\n");
        return 2;
    }
    const long unit = ((n + sh[5] - 1) / sh[5] + 255) / 256 * 256; /* one unit per thread */
    float *const buf = aligned_alloc(64, (size_t)(n * 4 + 63) / 64 * 64 + 128);
    float *const x = buf + 16; /* a line of AROUND before x, and up to a line after it */
    /* OUT_AT=BYTES: out that many bytes into a 4 KiB page (0-4032, a multiple of 64), else where
     * malloc puts it: where out lies on its page against x's rows decides whether the kernel's
     * running sums meet 4K aliasing (running_sums in weighted_rows.c) */
    const char *out_at = getenv("OUT_AT");
    const long at = out_at ? atol(out_at) : 0;
    if (out_at && (at < 0 || at > 4032 || at % 64 != 0)) {
        fprintf(stderr, "OUT_AT must be a multiple of 64 from 0 to 4032\n");
        return 2;
    }
    const size_t out_bytes = (size_t)(b * h * 4 + 4096) / 4096 * 4096 + 4096;
    char *const out_page = out_at ? aligned_alloc(4096, out_bytes) : NULL;
    float *w = malloc((size_t)(b * t) * 4);
    float *out = out_at ? (float *)(out_page + at) : malloc((size_t)(b * h) * 4);
    float *partial = malloc((size_t)(b * h * (sh[4] > shb[4] ? sh[4] : shb[4])) * 4);
    double *ref = calloc((size_t)(b * h), sizeof(double));
    if (!buf || !w || (out_at && !out_page) || !out || !partial || !ref) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (long i = 0; i < 16 + (n + 15) / 16 * 16 + 16; i++) memcpy(buf + i, &around, 4);
    srand(1);
    for (long i = 0; i < n; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (long i = 0; i < b * t; i++) w[i] = (float)rand() / RAND_MAX;
    for (long s = 0; s < b; s++)
        for (long r = 0; r < t; r++)
            for (long j = 0; j < h; j++)
                ref[s * h + j] += (double)w[s * t + r] * x[(s * t + r) * h + j];
    void (*const kernel[2])(const float *, const float *, float *, float *, const long *) = {wr_a,
                                                                                          wr_b};
    const double tol = 1e-5 * sqrt((double)t); /* float32 sums of t terms, in any order */
    for (int k = 0; k < 2; k++) {
        kernel[k](x, w, out, partial, k ? shb : sh);
        const double err = error(out, ref, b * h);
        if (!(err <= tol)) {
            printf("%ldx%ldx%ld: %c sums wrongly (error %.3g of the largest sum, tolerance %.3g)\n",
                   b, t, h, "AB"[k], err, tol);
            const char *wrong = getenv("TIME_WRONG");
            if (!(wrong && strcmp(wrong, "1") == 0)) return 1;
        }
    }
    double best[5] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    volatile double sink = 0.0;
    const int rounds = n > 10000000 ? 40 : 600;
    for (int r = 0; r < rounds; r++)
        for (int way = 0; way < 5; way++) {
            const double t0 = now();
            for (int c = 0; c < 10; c++) {
                if (way < 3) /* threaded as the kernel is: its OWN_L2 bit (8), if any */
                    sink += read_floats(x, n, unit, (int)sh[5], way | (int)(sh[6] & 8));
                else
                    kernel[way - 3](x, w, out, partial, way == 4 ? shb : sh);
            }
            const double dt = now() - t0;
            best[way] = dt < best[way] ? dt : best[way];
        }
    double limit = best[0];
    for (int way = 1; way < 3; way++) limit = best[way] < limit ? best[way] : limit;
    printf("%ldx%ldx%ld threads %ld mode %ld: read limit %.1f GB/s  A %.3f  B %.3f", b, t, h, sh[5],
           sh[6], 10.0 * n * 4 / limit / 1e9, limit / best[3], limit / best[4]);
    if (plan_b)
        printf("  (B: group %ld split %ld threads %ld mode %ld)", shb[3], shb[4], shb[5], shb[6]);
    if (out_at)
        printf("  (x at %ld, out at %ld bytes into a page)", (long)((uintptr_t)x & 4095), at);
    printf("\n");
    free(buf), free(w), free(out_at ? (void *)out_page : (void *)out), free(partial), free(ref);
    return 0;
}
