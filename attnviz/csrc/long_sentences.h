/* Short sentences of longer rows from DRAM: four stripes of whole sentences, their sums in the L1.
 * Part of the fused kernel, included by weighted_rows.c after what it uses: vectors.h, QUAD_VECS
 * and STRIPED_NUMEL (short_rows.h; a header of it, not a library of its own).
 *
 * sum_rows reads a sentence's rows as four stripes, each a quarter of the sentence: a sentence of
 * 16 rows of 384 numbers is four streams of 6 KiB that end where the next sentence's start, too
 * short for memory to keep enough lines in flight. As striped_sentences does for rows of at most
 * 2 * QUAD_VECS vectors (short_rows.h), a group of up to STRIPED_NUMEL numbers is cut here into
 * four stripes of whole sentences, and each step reads row t of one sentence of every stripe:
 * four streams each a quarter of the group long, as the read limit reads x. Rows this long do not
 * fit in registers, so each sentence's running sums stay in the L1, a load and a store of them per
 * row read. Each sentence is summed one row after another, so it gets the same bits whatever its
 * group or stripe (the sentences past a group's equal stripes are summed alone, the same way).
 *
 * Measured (plain C, one thread, x of 128 MiB, medians of paired rounds against the read limit,
 * each sentence's own stripes -> stripes of sentences): 7710x16x272 0.59 -> 0.75, 6553x16x320
 * 0.64 -> 0.80, 3276x32x320 0.73 -> 0.87, 5461x16x384 0.69 -> 0.83, 2048x32x512 0.84 -> 0.89; two
 * threads 7710x16x272 0.60 -> 0.76, 6553x16x320 0.64 -> 0.78, 5461x16x384 0.70 -> 0.80,
 * 4096x16x512 0.83 -> 0.92. Rows of 513-1024 with the lines asked for ahead as non-temporal (see
 * LONG_NTA_H), past 768 in sentences of at most 16 rows (LONG_WIDE_H). Not for more rows of
 * them: at H = 1024 the four sentences' sums (16 KiB) and the rows' lines do not stay in a 32 KiB
 * L1 together, 1024x32x1024 0.89 (the sums of each sentence's own stripes streamed,
 * weighted_rows.c) -> 0.82; nor for longer rows (1024x16x2048 0.86 -> 0.70), nor more rows (T =
 * 64-128 alike either way), nor in the cache (32x256x512 in the L3, 0.78-0.90 -> 0.53-0.74).
 * Asking for the lines ahead as usual (prefetcht0) cost 20-30% here. From DRAM the sums are
 * written to out past the caches (stream_vec). */
#ifndef ATTNVIZ_LONG_SENTENCES_H
#define ATTNVIZ_LONG_SENTENCES_H

#include <stdint.h>

#include "vectors.h"

#define LONG_STRIPED_H 1024 /* the longest rows (numbers) read so ... */
/* ... in sentences of at most LONG_WIDE_ROWS rows where they are longer than LONG_WIDE_H (plain C,
 * one thread, 128 MiB, each sentence's own stripes, their sums streamed -> so: 10485x4x800 0.48 ->
 * 0.70, 5242x8x800 0.62 -> 0.77, 2621x16x800 0.76 -> 0.90, 4681x8x896 0.59 -> 0.78, 4194x8x1000
 * 0.62 -> 0.76, 2097x16x1000 0.78 -> 0.84, 8192x4x1024 0.58 -> 0.70, 2048x16x1024 0.80 and 0.79;
 * but 1024x32x1024 0.89 -> 0.82) */
#define LONG_WIDE_H 768
#define LONG_WIDE_ROWS 16
/* Rows longer than LONG_NTA_H: each stripe's line LONG_NTA_BYTES ahead is asked for as non-temporal
 * (prefetchnta), so that the lines read once crowd out less of the L1 the four sentences' sums
 * share with them. Plain C, one thread, 128 MiB, each sentence's own stripes -> stripes of
 * sentences without it -> with it: 2048x16x640 0.66 -> 0.69 -> 0.82, 3276x16x640 0.71 -> 0.90,
 * 6553x8x640 0.56 -> 0.84, 2730x16x768 0.77 -> 0.90, 5461x8x768 0.63 -> 0.86, 1820x32x576 0.81 ->
 * 0.95, 13107x4x640 0.45 -> 0.72; two threads 6553x8x640 0.59 -> 0.82, 2730x16x768 0.78 -> 0.90,
 * 1365x32x768 0.91 and 0.89. For rows of at most 512 it cost 4-7% (4096x16x512 1.0 -> 0.93);
 * 1024 bytes ahead, 10-30%. */
#define LONG_NTA_H 512
#define LONG_NTA_BYTES 256

/* Stripe k's sums: room + k * LONG_ROOM_STEP + a place on the page (k + 1) fifths of g past the
 * rows' (the rows' places are g bytes apart: see running_sums, stripes.h), away from the
 * rows and from the other stripes' sums, as a load whose address matches a waiting store's in its
 * last 12 bits waits for that store. */
#define LONG_ROOM_STEP (LONG_STRIPED_H * 4 + 4096)
static inline float *long_sums(const float *x, long h, float *room, int k) {
    const long hb = (h * 4) & 4095, g = hb ? (hb & -hb) : 4096;
    const long at = ((long)((uintptr_t)x & 4095) + (k + 1) * g / 5) % g / 64 * 64;
    return (float *)((char *)room + k * LONG_ROOM_STEP + at);
}

/* The sums are stored past the caches from DRAM (stream_vec, vectors.h). Plain C, one thread,
 * 128 MiB, medians of paired rounds, stored so against as usual: 4096x16x512 0.77-0.87 ->
 * 0.85-0.97 of the read limit, 5461x16x384 0.73-0.86 -> 0.80-0.99, 8192x8x512 0.70 -> 0.82,
 * 10922x8x384 0.72 -> 0.92-0.96; rows off the lines, their whole lines so and the rest as
 * usual: 7710x16x300 0.83 -> 0.86, 4194x16x500 0.81 -> 0.91; and since each stripe's rows share
 * their lines' ends (line_tail, vectors.h; benchmarks/runs/issue32ag/long_pair.txt, two runs):
 * 16384x4x300 0.46-0.48 -> 0.61-0.68, 16384x4x301 0.47 -> 0.60-0.62, 7710x16x300 0.80-0.86 ->
 * 0.90-0.98, 4194x16x500 0.84 -> 0.88-0.89, 4194x8x1000 0.71-0.77 -> 0.74-0.79; two threads
 * 16384x4x300 0.44-0.60 -> 0.60-0.74, 4096x8x999 0.57-0.58 -> 0.62-0.63. (striped_sentences,
 * whose sums are in registers, streams them for sentences of at most STREAM_SHORT_ROWS rows:
 * short_rows.h.) */

/* row t of sentences 0, q, 2q and 3q from x (k_st of them: four, or one for a sentence alone) in
 * each step, each into its sums in room, then copied to s, s + q * h, ... (past the caches where
 * `tails`, one a stripe: see stream_sums) */
static inline __attribute__((always_inline)) void long_run(const float *restrict x,
                                                          const float *restrict w, float *s,
                                                          long q, long rows, long h, float *room,
                                                          const int k_st,
                                                          struct line_tail *tails,
                                                          const int nta) {
    const long dx = q * rows * h, dw = q * rows, nv = h / VL; /* from one stripe to the next */
    float *a[4];
    for (int k = 0; k < k_st; k++) {
        a[k] = long_sums(x, h, room, k);
        for (long j = 0; j < h; j++) a[k][j] = 0.0f;
    }
    for (long t = 0; t < rows; t++) {
        const float *r = x + t * h;
        float u[4];
        for (int k = 0; k < k_st; k++) u[k] = w[k * dw + t];
        long v = 0;
        for (; v + 2 <= nv; v += 2) /* two vectors of each stripe a step, as sum_rows_of */
            _Pragma("GCC unroll 4") for (int k = 0; k < k_st; k++) {
                const vecfu *p = (const vecfu *)(r + k * dx) + v;
                if (nta) /* see LONG_NTA_H */
                    __builtin_prefetch((const char *)p + LONG_NTA_BYTES, 0, 0);
                vecfu *c = (vecfu *)a[k] + v;
                c[0] += u[k] * p[0];
                c[1] += u[k] * p[1];
            }
        for (; v < nv; v++)
            for (int k = 0; k < k_st; k++)
                ((vecfu *)a[k])[v] += u[k] * ((const vecfu *)(r + k * dx))[v];
        for (long j = nv * VL; j < h; j++) /* rows off the vectors: the last numbers */
            for (int k = 0; k < k_st; k++) a[k][j] += u[k] * r[k * dx + j];
    }
    for (int k = 0; k < k_st; k++) {
        float *d = s + k * q * h;
        if (!tails)
            for (long j = 0; j < h; j++) d[j] = a[k][j];
        else if (h % 16 == 0 && (uintptr_t)d % 64 == 0) /* every line whole: as stream_sums */
            for (long j = 0; j < h; j += VL) stream_vec(d + j, *(const vecfu *)(a[k] + j));
        else /* (its bookkeeping cost 2-4% at 4096x8x1024: long_pair.txt, on_lines.txt) */
            stream_sums(d, a[k], h, tails + k);
    }
}

/* Sentences of at most BLOCK_ROWS rows from DRAM: each sentence alone, its columns in blocks of
 * BLOCK_VECS vectors whose sums stay in registers over its rows, and, as each line is read, the
 * same line of the next sentence asked for into the L2 (prefetcht1: one sentence, rows * h
 * numbers, ahead, which a block reads again a sentence's time later). A sentence's rows are read
 * side by side in runs of BLOCK_VECS lines, which the hardware alone keeps too few of in flight
 * (without asking: 4096x8x1024 0.79, 2730x16x768 0.64); asked for so, its lines are in the L2 when
 * they are read. Stripes of four sentences (long_run) keep four sentences' sums in the L1, a load
 * and a store of them for every vector read, beside the four streams' lines: plain C, one thread,
 * x of 128 MiB, medians of paired rounds against the read limit, long_run -> blocks (and asking
 * into the L3, prefetcht2; into the L1, prefetcht0, lost 10-45%): 4096x8x1024 0.67-0.68 -> 0.87-0.99
 * (0.74 -> 0.95), 8192x4x1024 0.64 -> 0.87 (0.67 -> 0.89), 4096x8x768 0.73 -> 0.89 (0.87 ->
 * 0.96), 4681x8x896 0.78 -> 0.87 (0.83 -> 0.89), 6553x8x640 0.80 -> 0.85 (0.88 -> 0.87); for 16
 * rows, mixed: 2048x16x1024 0.74-0.79 -> 0.83-0.91, 2730x16x768 0.84-0.86 -> 0.76-0.77
 * (benchmarks/runs/issue32ai). The sums of each column are added row after row, as long_run adds
 * them: the same bits. */
#define BLOCK_ROWS 8
#define BLOCK_VECS 8
/* ... and so for rows of up to BLOCK_MAX_H numbers, past LONG_STRIPED_H too, where stripes of
 * sentences do not reach (their sums would not fit in the L1), rather than four stripes of each
 * sentence's rows (sum_rows_of, stripes.h): plain C, one thread, 128 MiB, B_PLAN mode 96 against
 * the library's plan (mode 32): 2048x8x1500 0.69-0.75 -> 0.89-0.91, 2048x8x2001 0.66-0.71 ->
 * 0.93-1.0, 2048x8x2048 0.68-0.72 -> 0.94-1.0, 1024x8x4096 0.77-0.80 -> 1.03-1.05, 4096x4x1500
 * 0.57-0.61 -> 0.71-0.72; two threads 2048x8x1500 0.78 -> 1.0, 2048x8x2001 0.67 -> 0.92,
 * 1024x8x4096 0.95 -> 0.98, 4096x4x1500 0.50 -> 0.71 (benchmarks/runs/issue32ai/wide.txt) */
#define BLOCK_MAX_H 4096

/* a[v*VL : (v+n)*VL] = the sums of those columns of the sentence at x (n <= BLOCK_VECS vectors),
 * stored past the caches where `lines` (a on the lines: out itself), each line of its rows asked
 * for `ahead` numbers on as it is read */
static inline __attribute__((always_inline)) void block_sums(const float *restrict x,
                                                            const float *restrict w,
                                                            float *restrict a, long rows,
                                                            long h, long v, const int n,
                                                            long ahead, const int lines) {
    vecf acc[BLOCK_VECS];
    _Pragma("GCC unroll 8") for (int k = 0; k < n; k++) acc[k] = (vecf){0};
    for (long t = 0; t < rows; t++) {
        const vecfu *p = (const vecfu *)(x + t * h) + v;
        const char *next = (const char *)(p) + 4 * ahead;
        _Pragma("GCC unroll 8") for (int b = 0; b < n * VL * 4; b += 64)
            __builtin_prefetch(next + b, 0, 2);
        const float u = w[t];
        _Pragma("GCC unroll 8") for (int k = 0; k < n; k++) acc[k] += u * p[k];
    }
    if (lines) /* as each block is done: all of a row's lines at once wait on one another */
        _Pragma("GCC unroll 8") for (int k = 0; k < n; k++) stream_vec(a + (v + k) * VL, acc[k]);
    else
        _Pragma("GCC unroll 8") for (int k = 0; k < n; k++) ((vecfu *)a)[v + k] = acc[k];
}

/* out[s, :] for `count` whole sentences of at most BLOCK_ROWS rows from x, stored past the
 * caches (stream_sums; each line whole where the rows are on the lines) */
static void block_sentences(const float *x, const float *w, float *out, long count, long rows,
                            long h) {
    float a[BLOCK_MAX_H] __attribute__((aligned(64))); /* the sums of rows off the lines */
    struct line_tail tail = {{0}, out, 0};
    const long per = rows * h, nv = h / VL;
    const int lines = h % 16 == 0 && (uintptr_t)out % 64 == 0;
    for (long s = 0; s < count; s++) {
        const float *xs = x + s * per, *ws = w + s * rows;
        float *d = out + s * h, *sums = lines ? d : a;
        long v = 0;
        for (; v + BLOCK_VECS <= nv; v += BLOCK_VECS)
            block_sums(xs, ws, sums, rows, h, v, BLOCK_VECS, per, lines);
        for (; v < nv; v++)
            block_sums(xs, ws, sums, rows, h, v, 1, per, lines);
        if (lines)
            continue;
        for (long j = nv * VL; j < h; j++) { /* rows off the vectors: the last numbers */
            float sum = 0.0f;
            for (long t = 0; t < rows; t++) sum += ws[t] * xs[t * h + j];
            a[j] = sum;
        }
        stream_sums(d, a, h, &tail);
    }
    flush_tail(&tail);
    stream_fence();
}

/* whether whole sentences of `rows` rows of h numbers are summed by striped_long_sentences (with
 * the mode's SENTENCE_STRIPES): rows longer than striped_sentences takes, at most LONG_STRIPED_H
 * (and at most LONG_WIDE_ROWS of them past LONG_WIDE_H), or at most BLOCK_ROWS rows of up to
 * BLOCK_MAX_H (block_sentences), sentences of at most a quarter of STRIPED_NUMEL */
static inline int stripes_long_sentences(long rows, long h) {
    if (h > LONG_STRIPED_H) /* block_sentences only */
        return h <= BLOCK_MAX_H && rows <= BLOCK_ROWS && 4 * rows * h <= STRIPED_NUMEL;
    return h > 2 * QUAD_VECS * VL && 4 * rows * h <= STRIPED_NUMEL &&
           (h <= LONG_WIDE_H || rows <= LONG_WIDE_ROWS);
}

/* out[s, :] for `count` whole sentences from x, in groups of four stripes of STRIPED_NUMEL
 * numbers at most; the sentences past a group's equal stripes one at a time, with the same bits;
 * out stored past the caches where `stream` (x from DRAM: see stream_vec) */
static void striped_long_sentences(const float *x, const float *w, float *out, long count,
                                   long rows, long h, int stream) {
    if ((stream || h > LONG_STRIPED_H) && rows <= BLOCK_ROWS) { /* see block_sentences */
        block_sentences(x, w, out, count, rows, h);
        return;
    }
    float room[4 * LONG_ROOM_STEP / 4] __attribute__((aligned(4096)));
    struct line_tail kept[4] = {{{0}, out, 0}, {{0}, out, 0}, {{0}, out, 0}, {{0}, out, 0}};
    struct line_tail *tails = stream ? kept : 0; /* each stripe's row's last line (stream_sums) */
    const long per = rows * h, group = STRIPED_NUMEL / per / 4 * 4; /* sentences a group */
    for (long g0 = 0; g0 < count; g0 += group) {
        const long n = count - g0 < group ? count - g0 : group, q = n / 4;
        const float *xg = x + g0 * per, *wg = w + g0 * rows;
        float *og = out + g0 * h;
        for (long j = 0; j < q; j++) {
            const float *xj = xg + j * per, *wj = wg + j * rows;
            if (h > LONG_NTA_H)
                long_run(xj, wj, og + j * h, q, rows, h, room, 4, tails, 1);
            else
                long_run(xj, wj, og + j * h, q, rows, h, room, 4, tails, 0);
        }
        for (long s = 4 * q; s < n; s++)
            long_run(xg + s * per, wg + s * rows, og + s * h, 0, rows, h, room, 1, tails, 0);
    }
    if (stream) {
        for (int k = 0; k < 4; k++) flush_tail(kept + k);
        stream_fence();
    }
}

#endif
