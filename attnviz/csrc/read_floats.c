/* The machine's read limit, built and threaded like the fused kernel (weighted_rows.c, in the same
 * library, with the same flags and vectors: vectors.h): the sum of n numbers of x.
 *
 * Three ways, each the faster where the others are slower (mode, chosen by the caller as for the
 * kernel: ``read_plan`` in attnviz/native_read.py; attnviz.bench times them all on x):
 *   mode 0 (read_block): READ_STREAMS parts of a unit side by side, as the kernel's stripes read
 *     rows (one stream alone leaves memory idle between the prefetcher's requests: measured, a
 *     single stream read 15-30% slower than the kernel from DRAM; four streams read as fast as
 *     eight, and the four stripes' kernel was up to 7% faster than eight streams);
 *   mode 1 (read_run): one stream, TILE numbers a step, as the kernel's tiles read a row: from
 *     the caches 3-8% faster than mode 0 (measured at 256 KiB-16 MiB on one thread);
 *   mode 2 (read_block_ahead): mode 0 asking for each stream's lines ahead, as the kernel's
 *     stripes may (sum_rows_of): where that makes the kernel faster, the read too, or the kernel
 *     would seem to beat the machine's limit.
 * Each into vectors of running sums of their own (GCC/Clang vector types): each add waits on
 * none of the adds just before it, so the loop is bound by how fast the bytes arrive, not by the
 * latency of a chain of adds. Units of `unit` numbers go to the threads as they come free, or
 * with mode | OWN_L2 each thread the same units every call, as in weighted_rows_f32 (threads.h).
 * The result (a double, summed over units in order of completion) is returned so that the
 * compiler cannot drop the reads; its last bits are not meant to be compared.
 */

#include "threads.h" /* OWN_L2 */
#include "vectors.h"

#define READ_STREAMS 4
static inline __attribute__((always_inline)) double read_block_of(const float *restrict x, long n,
                                                                 const int ahead) {
    const long len = n / (READ_STREAMS * 2 * VL) * (2 * VL); /* numbers per stream */
    vecf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    for (long i = 0; i < len; i += 2 * VL) {
        const float *p = x + i;
        if (ahead) /* every line, as the kernel's stripes ask at most (sum_rows_of) */
            for (int k = 0; k < READ_STREAMS; k++)
                for (int v = 0; v < 2; v++)
                    __builtin_prefetch((const char *)(p + k * len + v * VL) + PREFETCH_BYTES);
        a0 += *(const vecfu *)(p);
        a1 += *(const vecfu *)(p + VL);
        a2 += *(const vecfu *)(p + len);
        a3 += *(const vecfu *)(p + len + VL);
        a4 += *(const vecfu *)(p + 2 * len);
        a5 += *(const vecfu *)(p + 2 * len + VL);
        a6 += *(const vecfu *)(p + 3 * len);
        a7 += *(const vecfu *)(p + 3 * len + VL);
    }
    const vecf sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    double s = 0.0;
    for (long i = READ_STREAMS * len; i < n; i++) s += x[i];
    for (int j = 0; j < VL; j++) s += sum[j];
    return s;
}

static double read_block(const float *restrict x, long n) { return read_block_of(x, n, 0); }

static double read_block_ahead(const float *restrict x, long n) {
    return read_block_of(x, n, 1);
}

static double read_run(const float *restrict x, long n) {
    vecf a[TILE_VECS];
    for (int k = 0; k < TILE_VECS; k++) a[k] = (vecf){0};
    long i = 0;
    for (; i + TILE <= n; i += TILE)
        for (int k = 0; k < TILE_VECS; k++) a[k] += *(const vecfu *)(x + i + VL * k);
    double s = 0.0;
    for (; i < n; i++) s += x[i];
    for (int k = 1; k < TILE_VECS; k++) a[0] += a[k];
    for (int j = 0; j < VL; j++) s += a[0][j];
    return s;
}

double read_floats(const float *x, long n, long unit, int threads, int mode) {
    if (n <= 0 || unit <= 0 || threads <= 0) return 0.0;
    const int how = mode & ~OWN_L2, own = (mode & OWN_L2) != 0;
    double (*const read)(const float *restrict, long) =
        how == 1 ? read_run : how == 2 ? read_block_ahead : read_block;
    const long n_units = (n + unit - 1) / unit;
    double total = 0.0;
    if (threads == 1) { /* no OpenMP region: see FOR_UNITS (weighted_rows.c) */
        for (long lo = 0; lo < n; lo += unit)
            total += read(x + lo, (n - lo < unit) ? n - lo : unit);
        return total;
    }
    if (own) { /* x in the threads' L2: each the same units every call, as the kernel (threads.h) */
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : total)
        for (long u = 0; u < n_units; u++) {
            const long lo = u * unit, len = (n - lo < unit) ? n - lo : unit;
            total += read(x + lo, len);
        }
        return total;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+ : total)
    for (long u = 0; u < n_units; u++) {
        const long lo = u * unit, len = (n - lo < unit) ? n - lo : unit;
        total += read(x + lo, len);
    }
    return total;
}
