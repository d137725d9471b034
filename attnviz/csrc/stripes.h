/* Stripes of a sentence's rows (mode 0): sum_rows_of reads a block of columns of the rows as four
 * (or two) stripes side by side, its running sums in the L1, at the output or in `room`
 * (running_sums, room_sums) where the output would share its place on a 4 KiB page with the rows.
 * Part of the fused kernel, included by weighted_rows.c after what it uses: vectors.h, the mode's
 * numbers (BLOCK_H, DRAM_BLOCK_H), rows_off_lines.h and short_rows.h (a header of it, not a
 * library of its own, so that sum_rows_of is inlined into each of sum_rows' copies). */
#ifndef ATTNVIZ_STRIPES_H
#define ATTNVIZ_STRIPES_H

#include <stdint.h>

#include "vectors.h"

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

#endif
