/* The CPU kernel behind method="fused" for float32: weighted sums of rows, one pass over x.
 *
 * x is B*T rows of H numbers (net_output (B, T, H), contiguous), w is B*T weights
 * (att_scores (B, T)).
 * Sentence b owns rows b*T .. b*T + T-1, and its result is
 *
 *     out[b, :] = sum over t of w[b, t] * x[b, t, :]
 *
 * The work is cut into units that OpenMP threads take one at a time (schedule(dynamic)), so a
 * thread that starts late or shares its core with another program simply takes fewer units
 * (where x sits in the threads' L2, each the same units every call: threads.h; in tiles see
 * weighted_rows_f32):
 *   split == 1: a unit is `group` whole sentences, each written to out[b, :];
 *   split > 1:  a unit is one of `split` pieces of a sentence's rows, written to
 *               partial[b, k, :] ((B, split, H)); the thread that finishes a sentence's last
 *               piece adds its pieces into out[b, :].
 * Built with -fopenmp in a process where PyTorch has already loaded its libgomp.so.1, the loader
 * reuses that library, so these loops run on PyTorch's own (already warm) OpenMP threads.
 *
 * Two ways to sum a sentence's rows, chosen per call by the caller (shape[6], ``plan`` in
 * attnviz/native.py), because each is the faster one where the other is slow:
 *   mode 0, stripes (sum_rows): four rows at a time, one from each of four stripes of the
 *     rows, into running sums in L1 (one load and one store of them per four rows read): x is
 *     read as four long sequential streams, which keeps memory busy once x comes from DRAM;
 *   mode 1, tiles (sum_rows_tiled): TILE columns at a time, the running sums in registers, every
 *     row of the sentence in turn: nothing but x is loaded, the fastest from L2, and no use
 *     beyond it (a row's TILE columns are a short run the prefetchers do not follow).
 * (Modes 2 and 3, for several threads in L2, cut a sentence by its columns or its rows and sum
 * each part one of these two ways: see weighted_rows_f32.)
 * Nothing else is read or written. Plain C99 with GCC/Clang vector types: the compiler
 * vectorizes the loops (-O3 -march=native); there is no -ffast-math, so NaN and inf propagate as
 * they do in PyTorch.
 */
#include <stdint.h>
#include <stdlib.h>

#include "threads.h" /* FOR_UNITS, OWN_L2 */
#include "vectors.h"

/* for (int k = 0; k < nv; k++), unrolled: with nv a constant, every a[k] in a register */
#define EACH_VEC(k, nv) _Pragma("GCC unroll 16") for (int k = 0; k < (nv); k++)

#ifndef BLOCK_H
#define BLOCK_H 2048 /* 8 KiB of running sums */
#endif
#define DRAM_BLOCK_H 16384 /* with WHOLE_ROWS: 64 KiB of running sums */

/* shape[6] (the mode) | PREFETCH: stripes ask for each stripe's lines PREFETCH_BYTES ahead of
 * the loads (attnviz/native.py decides where, by timing; see sum_rows_of) */
#define PREFETCH 4
/* shape[6] | TWO_STRIPES: the rows read as two stripes, not four; | WHOLE_ROWS: in blocks of
 * DRAM_BLOCK_H columns, not BLOCK_H (attnviz/native.py sets them by where x sits; see
 * sum_rows_of). Unlike PREFETCH and OWN_L2 they change the order of the adds. */
#define TWO_STRIPES 16
#define WHOLE_ROWS 32
/* shape[6] >> BLOCK_SHIFT: the stripes' block of columns, where the plan gives one (not 0, at most
 * DRAM_BLOCK_H): rows in the last-level cache longer than BLOCK_H, cut into even blocks of 1024
 * or 512 numbers, or read whole as two stripes (attnviz/native.py, stripe_bits; see sum_rows_of).
 * It changes the order of the adds too. */
#define BLOCK_SHIFT 8
/* shape[6] | SENTENCE_STRIPES: short rows from beyond L2, whole sentences read as four stripes
 * (striped_sentences, short_rows.h; and rows up to LONG_STRIPED_H from DRAM in short sentences:
 * striped_long_sentences, long_sentences.h; attnviz/native.py sets it) */
#define SENTENCE_STRIPES 64
/* set by sum_sentences, not by the plan (below BLOCK_SHIFT, unused by the mode): whole sentences'
 * sums from DRAM (WHOLE_ROWS) written to out past the caches (sum_rows_of, stream) */
#define STREAM_OUT 128

#include "rows_off_lines.h" /* rows off the 64-byte lines (AVX-512, GCC) */
#include "short_rows.h"     /* short rows on the lines, their sums in registers */
#include "long_sentences.h" /* short sentences of long rows from DRAM */

/* whole sentences s0 .. s1-1 (rows rows each, of h numbers) in tiles (mode 1): two at a time
 * (short_run_pair) where their rows are whole lines of at most PAIR_VECS vectors, else one at a
 * time (sum_rows_tiled) */
static void sum_rows_tiled(const float *restrict x, const float *restrict w, float *restrict s,
                           long rows, long h, long cols);
static void tiled_sentences(const float *x, const float *w, float *out, long s0, long s1,
                            long rows, long h) {
    long s = s0;
    if (h % 16 == 0 && h % VL == 0 && h <= PAIR_VECS * VL && ((uintptr_t)x & 63) == 0)
        for (; s + 1 < s1; s += 2) {
            const float *xs = x + s * rows * h, *ws = w + s * rows;
            float *os = out + s * h;
            switch (h / VL) {
#define PAIR_CASE(n)                                                                               \
    case n: short_run_pair(xs, ws, os, rows, h, n); break;
                PAIR_CASE(1) PAIR_CASE(2) PAIR_CASE(3) PAIR_CASE(4)
#if PAIR_VECS > 4
                PAIR_CASE(5) PAIR_CASE(6) PAIR_CASE(7) PAIR_CASE(8)
#endif
#undef PAIR_CASE
            }
        }
    for (; s < s1; s++) sum_rows_tiled(x + s * rows * h, w + s * rows, out + s * h, rows, h, h);
}

/* Where the running sums are kept for a block of rows on the lines (sum_rows_of): at acc (the
 * output, or a sentence's partial sums), or in `room` where acc would share its place on a 4 KiB
 * page with the rows read just before it. A core compares a load's address with the stores still
 * waiting to be written by its last 12 bits first; a load whose bits match a store's is held
 * until the whole addresses are known (4K aliasing). Each step loads rows a few vectors ahead of
 * the sums it stores, so where acc lies from 0 to ~1 KiB past a row's place on its page, nearly
 * every load waits: plain C, one thread, the same x with out moved on its page, 8x128x2048 in the
 * last-level cache ran at 0.71 of the read limit with acc 128 bytes past the rows (0.87 at 256,
 * 0.94-0.96 elsewhere), 4x128x4096 at 0.67 (0.82-0.86 elsewhere), 16x128x512 at 0.85 (0.94). Where
 * acc lands is up to the allocator: one process in a dozen, or per sentence, met it. The rows'
 * places on a page are g bytes apart (g the largest power of two, at most 4096, that divides 4 *
 * H; stripes are whole rows apart too); where g >= 2 KiB the sums can sit g / 2 past every one of
 * them: they go to room there (4096-aligned, BLOCK_ROOM bytes past one block), and are copied to
 * acc after the block's steps. Where g is smaller some steps meet it wherever the sums are. */
#define ALIAS_NEAR 1024 /* bytes past a row's place on its page where acc is not kept */
#define BLOCK_ROOM 4096 /* bytes of room past a block, for the sums' place on the page (< g) */
#define ROOM_BYTES (DRAM_BLOCK_H * 4 + BLOCK_ROOM)
static inline float *running_sums(const float *row, float *acc, long h, long n, float *room) {
    const long hb = (h * 4) & 4095, g = hb ? (hb & -hb) : 4096; /* rows' places: g apart */
    const long past = (long)(((uintptr_t)acc - (uintptr_t)row) & 4095) % g;
    const long at = (long)(((uintptr_t)row & 4095) + g / 2) % g; /* room's place: g / 2 past */
    if (g < 2 * ALIAS_NEAR || past >= ALIAS_NEAR || at + 4 * n > ROOM_BYTES)
        return acc;
    return (float *)((char *)room + at);
}

/* room for the running sums where they are written to acc past the caches (sum_rows_of's
 * stream): running_sums' place g / 2 past the rows', wherever acc lies; acc where it does not
 * fit */
static inline float *room_sums(const float *row, float *acc, long h, long n, float *room) {
    const long hb = (h * 4) & 4095, g = hb ? (hb & -hb) : 4096;
    const long at = (long)(((uintptr_t)row & 4095) + g / 2) % g;
    return at + 4 * n > ROOM_BYTES ? acc : (float *)((char *)room + at);
}

/* s[0:cols] = sum over t < rows of w[t] * x[t*h : t*h + cols] (rows h numbers apart)
 *
 * The rows are read as four stripes side by side: stripe k is rows k*st .. k*st + st-1 (st =
 * rows / 4), and each step adds row i of every stripe, so x is read as four sequential streams
 * far apart, as the read limit (read_floats.c) reads it. Neighbouring rows read side by
 * side instead made short streams that restart on every step: measured, 0.63-0.87 of the read
 * limit from DRAM on one thread (0.64 with H = 777) against 0.95-1.06 as stripes. Four stripes,
 * not eight: in the last-level cache eight were 0.81-0.89 of a one-stream read on one thread,
 * 0.76-0.85 on two, four 0.93-1.0 and 0.87-0.96 (8-16 MiB, plain C), and from DRAM as fast.
 * The last rows % 4 rows follow one at a time.
 *
 * ahead = 1: each step also asks for each stripe's line PREFETCH_BYTES further on. On an Intel
 * Xeon (Emerald Rapids) from DRAM the hardware alone kept too few lines in flight: one thread,
 * 1 GiB, plain C, 0.91-0.94 of the read limit, asking ahead 0.97-1.0 (512 B to 2 KiB ahead
 * alike), in the L3 the same (0.98-1.0), in L2 0.83-0.85 against 0.92. Rows on the lines (two
 * vectors a step) ask for one line a step per stripe (every other line with AVX-512's 64-byte
 * vectors, every line with AVX's 32); rows off the lines (rows_realigned) for every line,
 * as every other one gained nothing there (H = 777 from DRAM: 0.93, every line 0.98). Short rows
 * are at the read limit without it. On an AMD EPYC (Zen 4) asking 1 KiB ahead had cost 25-40% in
 * the L3. So the caller times both ways on a shape's first call from beyond L2 and keeps the
 * faster (attnviz/native.py).
 *
 * The running sums of a block are used again after each stripe has read a row of it: K + 1
 * blocks' bytes apart (K stripes). Where that is more than the L1 holds, every step loads the
 * sums from L2 and writes them back (x in the last-level cache, 32 KiB of L1, plain C: H = 2048
 * 0.81-0.83 of the read limit, 1999 off the lines 0.74, against 0.94-0.96 for H <= 1024). So
 * there (two = 1, TWO_STRIPES) the rows are read as two stripes: 0.93-0.94 at H = 2048, 0.95 at
 * 1280 and 1536 (four: 0.88-0.91), though at 1024 0.93 against four's 0.94. Cutting the
 * rows into smaller blocks instead cuts the streams too: each row is then read in runs with gaps
 * between them, and the prefetchers start again at every run (BLOCK_H 512 at H = 2048: 0.72).
 * From DRAM, where the L2 keeps up with the sums, that is what costs: four stripes of whole
 * rows, in blocks of DRAM_BLOCK_H columns (block, WHOLE_ROWS): H = 4096 0.93 of the read limit,
 * 2560 1.0, 2049 0.93, against 0.67-0.68, 0.68-0.69 and 0.87-0.89 in blocks of BLOCK_H (the last
 * block of 2049 one column: a line of each row read again, alone); two stripes there 0.81 at H =
 * 2048, four 1.0. In the cache, rows longer than BLOCK_H read in blocks of BLOCK_H ran at
 * 0.79-0.85 (H = 2304-8192, 6-8 MiB, one thread; a block of 2048 and what is left); there the plan
 * gives the block (BLOCK_SHIFT): the whole row, two stripes, where three rows fit in the L1 (H =
 * 2304 0.91, 2560 0.87-0.89), else even blocks of 1024 or 512 numbers, four stripes (H = 3072,
 * 4096, 5120, 8192: 0.86-0.90; 3584 in blocks of 512: 0.84-0.85).
 *
 * tail given (whole sentences from DRAM, STREAM_OUT): each block's sums are kept in room, the last
 * rows % 4 rows added there too, in the same order, and written to s past the caches (stream_vec,
 * long_sentences.h): a store to a line not in the cache reads it from memory first, and the output
 * is a T-th of x. Plain C, one thread, 128 MiB, medians of paired rounds against the read limit:
 * 2048x16x1024 0.81 -> 0.83, 1024x32x1024 0.88 -> 0.91, 1024x16x2048 0.86 -> 0.89, 4096x8x1024
 * 0.63 -> 0.68, 512x16x4096 0.84 -> 0.88; 2048x16x768 0.75 and 0.73. Rows off the lines
 * (rows_realigned) through stream_sums (vectors.h), one sentence's rows after another's, their
 * lines' ends kept whole across them (benchmarks/runs/issue32ag/per_sentence.txt, 2-4 runs):
 * 4096x4x1500 0.46-0.53 -> 0.55-0.60, 2048x16x1100 0.79-0.83 -> 0.85-0.89, 2048x8x2001
 * 0.51-0.55 -> 0.58-0.62, 1024x32x1000 0.90-0.92 -> 0.91-0.95; 2048x8x1100 0.64-0.67 and
 * 0.64-0.67, but 2048x8x1500 0.70-0.71 -> 0.66-0.68 (two threads 0.71-0.88 -> 0.69-0.88). */
static inline __attribute__((always_inline)) void sum_rows_of(
    const float *restrict x, const float *restrict w, float *restrict s, long rows, long h,
    long cols, long block, const int ahead, const int two, float *restrict room,
    struct line_tail *tail) {
    const int stream = tail != 0;
    if (cols % 16 == 0 && cols <= SHORT_COLUMNS && h % 16 == 0 && ((uintptr_t)x & 63) == 0) {
        short_rows_of(x, w, s, rows, h, cols, 0); /* whole lines, few enough for registers */
        return;
    }
    const int k_st = two ? 2 : 4; /* stripes */
    const long st = rows / k_st;  /* rows per stripe */
    const long d = st * h;        /* numbers from one stripe to the next */
    for (long j0 = 0; j0 < cols; j0 += block) {
        const long n = (cols - j0 < block) ? cols - j0 : block;
        float *restrict acc = s + j0;
#ifdef ALIGNED_STEPS
        if (h % 16 != 0 || ((uintptr_t)(x + j0) & 63) != 0) { /* rows off 64-byte lines */
            if (short_off_lines(x + j0, rows, h, n, ahead))
                short_realigned_of(x + j0, w, acc, 1, rows, h, n); /* the sums in registers */
            else /* acc written, not added to */
                rows_realigned(x + j0, w, acc, rows, h, n, ahead, k_st, tail);
            continue;
        }
#endif
        /* two vectors of each stripe a step, as read_block: from L3 at 16-24 MiB 2-12% faster
         * than the loop below, vectorized a vector a step (plain C) */
        const int pairs = n % (2 * VL) == 0 && d % VL == 0;
        float *const at = !pairs  ? acc
                          : stream ? room_sums(x + j0, acc, h, n, room)
                                   : running_sums(x + j0, acc, h, n, room); /* acc or room */
        for (long j = 0; j < n; j++) at[j] = 0.0f;
        long i = 0;
        if (pairs) {
            vecfu *va = (vecfu *)at;
            for (; i < st; i++) {
                const vecfu *r0 = (const vecfu *)(x + i * h + j0), *r1 = r0 + d / VL;
                const vecfu *r2 = two ? r1 : r1 + d / VL, *r3 = two ? r1 : r2 + d / VL;
                const float w0 = w[i], w1 = w[i + st];
                const float w2 = two ? 0.0f : w[i + 2 * st], w3 = two ? 0.0f : w[i + 3 * st];
                for (long v = 0; v < n / VL; v += 2) {
                    if (ahead) { /* each stripe's line PREFETCH_BYTES ahead (see PREFETCH) */
                        __builtin_prefetch((const char *)(r0 + v) + PREFETCH_BYTES);
                        __builtin_prefetch((const char *)(r1 + v) + PREFETCH_BYTES);
                        if (!two) {
                            __builtin_prefetch((const char *)(r2 + v) + PREFETCH_BYTES);
                            __builtin_prefetch((const char *)(r3 + v) + PREFETCH_BYTES);
                        }
                    }
                    if (two) {
                        va[v] += w0 * r0[v] + w1 * r1[v];
                        va[v + 1] += w0 * r0[v + 1] + w1 * r1[v + 1];
                        continue;
                    }
                    const vecf a0 = (w0 * r0[v] + w1 * r1[v]) + (w2 * r2[v] + w3 * r3[v]);
                    const vecf a1 =
                        (w0 * r0[v + 1] + w1 * r1[v + 1]) + (w2 * r2[v + 1] + w3 * r3[v + 1]);
                    va[v] += a0;
                    va[v + 1] += a1;
                }
            }
            if (stream && at != acc) { /* the last rows in room too, then past the caches */
                for (long t = k_st * st; t < rows; t++) {
                    const float *restrict r = x + t * h + j0;
                    const float w0 = w[t];
                    for (long j = 0; j < n; j++) at[j] += w0 * r[j];
                }
                long j = 0; /* whole vectors on the lines past the caches, the rest as usual */
                const long lo = (long)((4 * VL - (uintptr_t)acc % (4 * VL)) % (4 * VL)) / 4;
                for (; j < lo && j < n; j++) acc[j] = at[j];
                for (; j + VL <= n; j += VL) stream_vec(acc + j, *(const vecfu *)(at + j));
                for (; j < n; j++) acc[j] = at[j];
                continue;
            }
            if (at != acc)
                for (long v = 0; v < n / VL; v++) ((vecfu *)acc)[v] = va[v];
        }
        for (; i < st; i++) {
            const float *restrict r0 = x + i * h + j0, *restrict r1 = r0 + d; /* row i of
                                                                                * stripes 0, 1 */
            const float w0 = w[i], w1 = w[i + st];
            if (two) {
                for (long j = 0; j < n; j++) acc[j] += w0 * r0[j] + w1 * r1[j];
                continue;
            }
            const float *restrict r2 = r1 + d, *restrict r3 = r2 + d; /* and of stripes 2, 3 */
            const float w2 = w[i + 2 * st], w3 = w[i + 3 * st];
            for (long j = 0; j < n; j++)
                acc[j] += (w0 * r0[j] + w1 * r1[j]) + (w2 * r2[j] + w3 * r3[j]);
        }
        for (long t = k_st * st; t < rows; t++) {
            const float *restrict r = x + t * h + j0;
            const float w0 = w[t];
            for (long j = 0; j < n; j++) acc[j] += w0 * r[j];
        }
    }
}

/* s[0:cols] = sum over t < rows of w[t] * x[t*h : t*h + cols] for a sentence of few rows (at most
 * FEW_ROWS) longer than FEW_ROWS_COLUMNS numbers, in the cache (few_rows_apply): each two vectors
 * of columns summed down all the rows at once (two chains, even and odd rows), their sums in
 * registers and stored once; the last cols % VL columns one at a time. As stripes, such a sentence
 * is four stripes of a few rows, their sums loaded and stored every step, and the steps too few to
 * keep many lines in flight (plain C, one thread, medians of paired rounds, x in the L3: 64x16x768
 * 0.77-0.80 of the read limit, 0.83-0.86 so; 64x16x777 0.57-0.58 and 0.71; 128x12x1000 0.61-0.64
 * and 0.75; 64x4x1024 0.51 and 0.73). Not with more rows (64x24x768 0.79 against 0.83, 64x32x512
 * 0.68 against 0.82: too many rows read side by side), nor from DRAM (4096x8x777 0.60 against
 * 0.66). Nor where more than FEW_ROWS_WAYS rows lie at one place on a 4 KiB page (rows 4 KiB
 * apart: 9 or more; 2 KiB: 17 or more): a pair of vectors down all the rows then meets more lines
 * in one set of the L1 than it has ways (8 on Zen 4, 12 on recent Intel cores), and they evict
 * each other (32x16x1024 0.58, stripes 0.82; 16x16x2048 0.57 and 0.76; 64x8x1024 0.74 and 0.68). A
 * call also writes B x H numbers, which the read limit does not: with 16 rows a sentence the
 * output is a sixteenth of x, with 2 a half. */
#define FEW_ROWS 20
#define FEW_ROWS_COLUMNS 256
#define FEW_ROWS_WAYS 8
static inline int few_rows_apply(long rows, long h, long cols, int how) {
    const long hb = (h * 4) & 4095, g = hb ? (hb & -hb) : 4096; /* rows' places: g bytes apart */
    return rows <= FEW_ROWS && cols > FEW_ROWS_COLUMNS && !(how & WHOLE_ROWS) &&
           rows * g <= FEW_ROWS_WAYS * 4096;
}
static __attribute__((noinline)) void few_rows(const float *restrict x, const float *restrict w,
                                                float *restrict s, long rows, long h, long cols) {
    long j = 0;
    for (; j + 2 * VL <= cols; j += 2 * VL) {
        vecf a0 = (vecf){0}, a1 = (vecf){0}, b0 = (vecf){0}, b1 = (vecf){0};
        long t = 0;
        for (; t + 1 < rows; t += 2) {
            const float *p = x + t * h + j;
            const vecfu *r = (const vecfu *)p, *q = (const vecfu *)(p + h);
            a0 += w[t] * r[0];
            a1 += w[t] * r[1];
            b0 += w[t + 1] * q[0];
            b1 += w[t + 1] * q[1];
        }
        if (t < rows) {
            const vecfu *r = (const vecfu *)(x + t * h + j);
            a0 += w[t] * r[0];
            a1 += w[t] * r[1];
        }
        *(vecfu *)(s + j) = a0 + b0;
        *(vecfu *)(s + j + VL) = a1 + b1;
    }
    for (; j < cols; j++) {
        float a = 0.0f;
        for (long t = 0; t < rows; t++) a += w[t] * x[t * h + j];
        s[j] = a;
    }
}

/* sum_rows_of as `how` (the mode's bits PREFETCH, TWO_STRIPES and WHOLE_ROWS, and its block above
 * BLOCK_SHIFT) says: one copy per way to load and number of stripes; few_rows for a sentence of
 * few long rows in the cache (not WHOLE_ROWS: from DRAM) */
static void sum_rows(const float *restrict x, const float *restrict w, float *restrict s,
                     long rows, long h, long cols, int how, struct line_tail *tail) {
    if (few_rows_apply(rows, h, cols, how)) {
        few_rows(x, w, s, rows, h, cols);
        return;
    }
    const long given = how >> BLOCK_SHIFT; /* the plan's block, if any */
    const long block = given > 0 && given <= DRAM_BLOCK_H ? given
                       : (how & WHOLE_ROWS)              ? DRAM_BLOCK_H
                                                         : BLOCK_H;
    /* where running_sums may move a block's sums to */
    float room[ROOM_BYTES / 4] __attribute__((aligned(4096)));
    if (!(how & STREAM_OUT))
        tail = 0; /* stored as usual */
    switch (how & (PREFETCH | TWO_STRIPES)) {
    case PREFETCH | TWO_STRIPES:
        sum_rows_of(x, w, s, rows, h, cols, block, 1, 1, room, tail);
        break;
    case PREFETCH: sum_rows_of(x, w, s, rows, h, cols, block, 1, 0, room, tail); break;
    case TWO_STRIPES: sum_rows_of(x, w, s, rows, h, cols, block, 0, 1, room, tail); break;
    default: sum_rows_of(x, w, s, rows, h, cols, block, 0, 0, room, tail);
    }
}

/* s[0:cols] = sum over t < rows of w[t] * x[t*h : t*h + cols] (rows h numbers apart), TILE
 * columns at a time with the sums in registers (mode 1; the columns past the last whole tile in
 * registers too where ALIGNED_STEPS reads whole lines, else row by row as in sum_rows' tail:
 * there each row's update waited on the last one's through memory, and at 3x61x777 in L2 the
 * kernel ran at 0.58 of the read limit, 0.75 with the sums in registers; with H = 784 0.92 and
 * 0.95, with H = 768, no rest, 0.99. Rows off the lines were also tried read as whole lines and
 * permuted, as in rows_realigned: 0.54, slower than the straddling loads here). Measured on
 * one thread in L2: 0.98-1.03 of a one-stream read, against 0.96 for sum_rows, whose running
 * sums cost a load and a store per four rows; at twice L2 0.86 (stripes 0.96), from L3
 * 0.59-0.72 and from DRAM 0.41 (the rows' short runs), where sum_rows is the one to use. */
static void sum_rows_tiled(const float *restrict x, const float *restrict w, float *restrict s,
                           long rows, long h, long cols) {
    long j0 = 0;
    for (; j0 + TILE <= cols; j0 += TILE) {
        vecf a[TILE_VECS];
        for (int k = 0; k < TILE_VECS; k++) a[k] = (vecf){0};
        const float *p = x + j0;
        for (long t = 0; t < rows; t++, p += h) {
            const float u = w[t];
            for (int k = 0; k < TILE_VECS; k++) a[k] += u * *(const vecfu *)(p + VL * k);
        }
        for (int k = 0; k < TILE_VECS; k++) *(vecfu *)(s + j0 + VL * k) = a[k];
    }
    if (j0 < cols && (cols - j0) % VL == 0 && h % VL == 0 && ((uintptr_t)(x + j0) & 63) == 0) {
        short_rows_of(x + j0, w, s + j0, rows, h, cols - j0, 1); /* whole lines, in registers */
        return;
    }
#ifdef ALIGNED_STEPS
    if (j0 < cols) { /* the last columns (fewer than a tile), in registers too */
        const long n = cols - j0, nv = (n + 15) / 16;
        vec16 a[TILE_VECS];
        for (int k = 0; k < TILE_VECS; k++) a[k] = (vec16){0};
        const float *p = x + j0;
        for (long t = 0; t < rows; t++, p += h) {
            const float u = w[t];
            const long m = (long)(((uintptr_t)p & 63) / 4); /* numbers before p on its line */
            const vec16u *line = (const vec16u *)(p - m);
            ivec16 pick;
            for (int k = 0; k < 16; k++) pick[k] = (int)m + k;
            vec16 lo = line[0];
            for (int k = 0; k < TILE_VECS; k++) {
                if (k < nv) { /* lines that hold numbers of the row only, as rows_realigned */
                    const vec16 hi = 16 * (k + 1) - m < n ? (vec16)line[k + 1] : lo;
                    a[k] += u * (m ? __builtin_shuffle(lo, hi, pick) : lo);
                    lo = hi;
                }
            }
        }
        for (long j = 0; j < n; j++) s[j0 + j] = a[j / 16][j % 16]; /* lanes past the row: never */
        return;
    }
#endif
    if (j0 < cols) {
        float *restrict acc = s + j0;
        const long n = cols - j0;
        for (long j = 0; j < n; j++) acc[j] = 0.0f;
        for (long t = 0; t < rows; t++) {
            const float *restrict r = x + t * h + j0;
            const float u = w[t];
            for (long j = 0; j < n; j++) acc[j] += u * r[j];
        }
    }
}

/* The number of columns of a tile (attnviz/native.py plans tiles only where H has at least one). */
long weighted_rows_tile(void) { return TILE; }

/* Floats per vector register (VL): attnviz/native.py plans tiles for whole sentences in L2 only
 * with AVX-512's 32 registers of 16 (with AVX2 the 8 running sums of a tile, one add each per
 * row, ran at 0.68-0.80 of the read limit in L2, stripes at 0.92-0.95). */
int weighted_rows_lanes(void) { return VL; }

/* 1 where rows off the 64-byte lines are read as whole lines (ALIGNED_STEPS): stripes are then
 * the faster for them even in L2 (3x61x777: 0.91 of the read limit against tiles' 0.75), and
 * attnviz/native.py plans tiles only for rows on the lines (H a multiple of 16). */
int weighted_rows_realigns(void) {
#ifdef ALIGNED_STEPS
    return 1;
#else
    return 0;
#endif
}

/* out[s, c0:c1] for sentences s0 .. s1-1 (t rows each), in stripes (sum_rows); with
 * SENTENCE_STRIPES whole sentences as stripes of sentences where their rows allow; short rows off
 * the lines by one call of short_realigned_of for them all, not one a sentence (see there) */
static void sum_sentences(const float *x, const float *w, float *out, long s0, long s1, long t,
                          long h, long c0, long c1, int how, int threads) {
    if ((how & SENTENCE_STRIPES) && c0 == 0 && c1 == h &&
        stripes_sentences(x + s0 * t * h, t, h)) {
        /* from DRAM, short sentences: their sums past the caches (STREAM_SHORT_ROWS; rows off
         * the lines on one thread, STREAM_OFF_ROWS) */
        float *o = out + s0 * h;
        const long most =
            threads > 1 || on_lines(x + s0 * t * h, h) ? STREAM_SHORT_ROWS : STREAM_OFF_ROWS;
        const int stream = (how & WHOLE_ROWS) && t <= most;
        striped_sentences(x + s0 * t * h, w + s0 * t, o, s1 - s0, t, h, stream);
        if (stream)
            stream_fence();
        return;
    }
    if ((how & SENTENCE_STRIPES) && c0 == 0 && c1 == h && stripes_long_sentences(t, h)) {
        striped_long_sentences(x + s0 * t * h, w + s0 * t, out + s0 * h, s1 - s0, t, h,
                               (how & WHOLE_ROWS) != 0); /* from DRAM: out past the caches */
        return;
    }
#ifdef ALIGNED_STEPS
    const float *xs = x + s0 * t * h + c0;
    if (short_off_lines(xs, t, h, c1 - c0, (how & PREFETCH) != 0)) {
        short_realigned_of(xs, w + s0 * t, out + s0 * h + c0, s1 - s0, t, h, c1 - c0);
        return;
    }
#endif
    const int to_out = (how & WHOLE_ROWS) ? how | STREAM_OUT : how; /* from DRAM: past the caches */
    struct line_tail kept = {{0}, out, 0}; /* off the lines, a row's last line (stream_sums) */
    for (long s = s0; s < s1; s++)
        sum_rows(x + s * t * h + c0, w + s * t, out + s * h + c0, t, h, c1 - c0, to_out, &kept);
    if (to_out & STREAM_OUT) {
        flush_tail(&kept);
        stream_fence();
    }
}

/* s[0:h] = the weighted sum of `rows` whole rows: in tiles (mode 3) or in stripes */
static void sum_whole_rows(const float *x, const float *w, float *s, long rows, long h, int tiled,
                           int how) {
    if (tiled)
        sum_rows_tiled(x, w, s, rows, h, h);
    else
        sum_rows(x, w, s, rows, h, h, how, 0);
}

/* partial[s, k, :] = the weighted sum of piece k (of `split`, t_per rows each) of sentence s */
static void sum_piece(const float *x, const float *w, float *partial, long s, long k, long t,
                      long h, long t_per, long split, int tiled, int how) {
    const long lo = k * t_per, hi = (lo + t_per < t) ? lo + t_per : t;
    float *dst = partial + (s * split + k) * h;
    if (lo < hi)
        sum_whole_rows(x + (s * t + lo) * h, w + s * t + lo, dst, hi - lo, h, tiled, how);
    else
        for (long j = 0; j < h; j++) dst[j] = 0.0f; /* an empty last piece */
}

/* o[0:h] = the sum of the split pieces p[k*h : k*h + h], in order of k */
static void add_pieces(float *restrict o, const float *restrict p, long h, long split) {
    for (long j = 0; j < h; j++) o[j] = p[j];
    for (long k = 1; k < split; k++)
        for (long j = 0; j < h; j++) o[j] += p[k * h + j];
}

/* sentence s's pieces on `threads` threads, then their sum (the kernel's way without counts) */
static void sum_pieces(const float *x, const float *w, float *out, float *partial, long s, long t,
                       long h, long t_per, long split, int threads, int own, int tiled,
                       int how) {
    FOR_UNITS(k, split, threads, own,
              sum_piece(x, w, partial, s, k, t, h, t_per, split, tiled, how););
    add_pieces(out + s * h, partial + s * split * h, h, split);
}

/* shape = {B, T, H, group, split, threads, mode}: one array, so that a call from Python
 * converts five arguments, not eleven (each costs ~0.1 us, against ~10 us for a call on 1 MiB
 * in L2).
 *   mode 0 (stripes, sum_rows): as described at the top; `split` cuts a sentence's rows.
 *   mode 1 (tiles, sum_rows_tiled): a unit is `group` sentences times one of `split` chunks of
 *     whole tiles of columns (the last chunk takes the columns past them): the threads share a
 *     sentence by its columns, so there are no partial sums to add (partial is not used). Whole
 *     short rows go two sentences at a time (tiled_sentences).
 *   mode 2 (columns, sum_rows): as mode 1, chunks of columns a multiple of 16 wide, each summed
 *     in stripes: for rows off the 64-byte lines in L2 on several threads, where cutting a
 *     sentence's rows left pieces too short to stripe (1x250x777 on two threads, plain C: 0.67
 *     of the read limit with its rows cut in two, 0.90 with its columns). Not beyond L2: there
 *     half rows are short runs (0.63-0.65 from L3 against 0.94-0.97 with the rows cut).
 *   mode 3 (pieces, sum_rows_tiled): as mode 0, each unit's rows summed in tiles: for one
 *     sentence (or a few) on several threads in L2, rows on the lines too short to cut by whole
 *     tiles of columns (H under 2 * TILE). A piece is then one stream, as a whole sentence is in
 *     mode 1 (two threads, plain C, paired: 1x2048x128 0.92-0.95 of the read limit, stripes
 *     0.86-0.92; 1x1024x384 0.85-0.90, stripes 0.34-0.39, their sums in memory there).
 *   mode | PREFETCH: the stripes ask for their lines ahead (sum_rows_of); the sums are the same
 *     to the bit either way.
 *   mode | OWN_L2: x sits in the threads' L2, each thread takes the same units every call
 *     (threads.h); the sums are the same to the bit either way. */
void weighted_rows_f32(const float *x, const float *w, float *out, float *partial,
                       const long *shape) {
    const long b = shape[0], t = shape[1], h = shape[2], group = shape[3], split = shape[4];
    const int threads = (int)shape[5];
    const long kind = shape[6] & 3; /* 0-3: stripes to pieces */
    const int how = (int)(shape[6] & ~(3L | OWN_L2)), tiled = kind == 3; /* bits and block */
    const int own = (shape[6] & OWN_L2) != 0; /* each thread the same units every call */
    if (b <= 0 || h <= 0 || group <= 0 || split <= 0 || threads <= 0) return;
    if (t <= 0) {
        for (long i = 0; i < b * h; i++) out[i] = 0.0f;
        return;
    }
#ifdef ALIGNED_STEPS
    float pad[EDGE_COPY_NUMEL + 32] __attribute__((aligned(64))); /* see subnormal_edges */
    if (b * t * h <= EDGE_COPY_NUMEL && subnormal_edges(x, b * t * h))
        x = padded(x, b * t * h, pad); /* a small x beside subnormal numbers: summed in pad */
#endif
    if (kind == 1 || kind == 2) { /* the threads share sentences by their columns */
        const int tiles = kind == 1;
        const long per = tiles ? (h / TILE + split - 1) / split * TILE /* columns per chunk */
                               : ((h + split - 1) / split + 15) / 16 * 16;
        const long n_units = (b + group - 1) / group * split;
        FOR_UNITS(u, n_units, threads, own, {
            const long g = u / split, k = u % split;
            const long c0 = k * per < h ? k * per : h;
            const long c1 = (k == split - 1 || c0 + per > h) ? h : c0 + per;
            const long end = (g + 1) * group < b ? (g + 1) * group : b;
            if (tiles && c0 == 0 && c1 == h) /* whole rows: two sentences at a time where short */
                tiled_sentences(x, w, out, g * group, end, t, h);
            else if (tiles)
                for (long s = g * group; s < end && c0 < c1; s++)
                    sum_rows_tiled(x + s * t * h + c0, w + s * t, out + s * h + c0, t, h, c1 - c0);
            else if (c0 < c1)
                sum_sentences(x, w, out, g * group, end, t, h, c0, c1, how, threads);
        });
        return;
    }
    if (split == 1) {
        const long n_units = (b + group - 1) / group;
        FOR_UNITS(u, n_units, threads, own, {
            const long end = (u + 1) * group < b ? (u + 1) * group : b;
            if (tiled) /* whole sentences as tiles sum them (mode 1) */
                tiled_sentences(x, w, out, u * group, end, t, h);
            else
                sum_sentences(x, w, out, u * group, end, t, h, 0, h, how, threads);
        });
        return;
    }
    const long t_per = (t + split - 1) / split; /* rows per piece */
    /* pieces of each sentence finished so far: the thread that finishes a sentence's last piece
     * adds its pieces into out[s, :] (the acquire of its count sees every other piece's stores).
     * There is then no barrier between the pieces and their sum: an earlier version waited for
     * every piece, then shared the adding out; on two threads in L2 (1x256x1024) that second
     * barrier and the second loop cost ~1 us of ~10 (kernel and read called through ctypes).
     * The adding is split / T of the sentence's reads at most (pieces have at least
     * MIN_PIECE_ROWS rows: under 1/32). */
    long few[64] = {0};
    long *done = b <= 64 ? few : (long *)calloc((size_t)b, sizeof(long));
    if (done == NULL) { /* no memory for the counts: add after a barrier, as before */
        for (long s = 0; s < b; s++)
            sum_pieces(x, w, out, partial, s, t, h, t_per, split, threads, own, tiled, how);
        return;
    }
    FOR_UNITS(u, b * split, threads, own, {
        const long s = u / split, k = u % split; /* sentence s, piece k */
        sum_piece(x, w, partial, s, k, t, h, t_per, split, tiled, how);
        if (__atomic_add_fetch(&done[s], 1, __ATOMIC_ACQ_REL) == split)
            add_pieces(out + s * h, partial + s * split * h, h, split);
    });
    if (done != few) free(done);
}

/* The version of this interface, checked on load: bump it when a signature changes. */
int weighted_rows_abi(void) { return 10; }
