/* Short rows, their running sums in registers: on the 64-byte lines (whole vectors, at most
 * SHORT_COLUMNS numbers) short_rows (four stripes of a sentence's rows), short_run (one row after
 * another), short_run_pair (two sentences at once); and from beyond L2 (the last-level cache,
 * DRAM) striped_sentences (four stripes of whole sentences, rows off the lines too).
 * Part of the fused kernel, included by weighted_rows.c after what it uses: vectors.h, EACH_VEC
 * and rows_off_lines.h (a header of it, not a library of its own, so that every loop here is
 * inlined into the kernel's). */
#ifndef ATTNVIZ_SHORT_ROWS_H
#define ATTNVIZ_SHORT_ROWS_H

#include "vectors.h"

/* short_rows(..., nv): sum_rows for rows of nv * VL <= SHORT_COLUMNS numbers, the running sums
 * in registers: the same four stripes read side by side, and nothing else loaded or stored (in
 * sum_rows the sums are in memory, a load and a store of them per four rows: for rows of 128
 * numbers, 8 vectors a step, that cost 0.79-0.86 of the read limit in L2). nv is a constant in
 * each copy (short_rows_of), and every loop over it unrolled (EACH_VEC), so a[] lives in
 * registers only: left as loops, GCC 12 zeroed a[] on the stack (rep stos), stored the sums
 * there and copied them out, ~20 ns a sentence (in L2, one thread, plain C, short_run: 16x128x128
 * 0.885 of the read limit with them, 0.91 without; 64x32x128 0.76-0.78 and 0.87). */
#define SHORT_COLUMNS (VL * TILE_VECS)
static inline __attribute__((always_inline)) void short_rows(const float *restrict x,
                                                            const float *restrict w,
                                                            float *restrict s, long rows, long h,
                                                            const int nv) {
    const long st = rows / 4, d = st * h;
    vecf a[TILE_VECS];
    EACH_VEC(k, nv) a[k] = (vecf){0};
    for (long i = 0; i < st; i++) {
        const float *r0 = x + i * h, *r1 = r0 + d, *r2 = r1 + d, *r3 = r2 + d;
        const float w0 = w[i], w1 = w[i + st], w2 = w[i + 2 * st], w3 = w[i + 3 * st];
        EACH_VEC(k, nv)
            a[k] += (w0 * *(const vecfu *)(r0 + VL * k) + w1 * *(const vecfu *)(r1 + VL * k)) +
                    (w2 * *(const vecfu *)(r2 + VL * k) + w3 * *(const vecfu *)(r3 + VL * k));
    }
    for (long t = 4 * st; t < rows; t++) {
        const float *r = x + t * h;
        EACH_VEC(k, nv) a[k] += w[t] * *(const vecfu *)(r + VL * k);
    }
    EACH_VEC(k, nv) *(vecfu *)(s + VL * k) = a[k];
}

/* short_run(..., nv): the same rows one after another, one add of each row into each sum: in
 * L2 (mode 1, tiles; and a tile's last columns) x is then read as one stream, and nothing waits
 * on more than one add per row. 16x128x128 in L2, one thread, plain C, in the same processes:
 * 0.91 of the read limit, short_rows 0.90 (4x64x384: 0.91, the stripes 0.86); from beyond L2
 * the four stripes keep memory busier. */
static inline __attribute__((always_inline)) void short_run(const float *restrict x,
                                                           const float *restrict w,
                                                           float *restrict s, long rows, long h,
                                                           const int nv) {
    vecf a[TILE_VECS];
    EACH_VEC(k, nv) a[k] = (vecf){0};
    for (long t = 0; t < rows; t++) {
        const float *r = x + t * h, u = w[t];
        EACH_VEC(k, nv) a[k] += u * *(const vecfu *)(r + VL * k);
    }
    EACH_VEC(k, nv) *(vecfu *)(s + VL * k) = a[k];
}

/* short_run_pair(..., nv): short_run on two neighbouring sentences at once (x and the next
 * rows * h numbers), row t of each in the same step: two independent chains of adds and one loop
 * for both, where a sentence alone is a loop of its own and a chain that waits on each row's add.
 * Each sentence's sums are added in the same order as short_run's, so they are the same to the
 * bit. Up to PAIR_VECS vectors a row: twice as many running sums, half the registers (AVX-512:
 * 16 of 32; tiles, and so this, run only there: attnviz/native.py). In L2, one thread, plain C,
 * medians of 400 paired blocks (benchmarks/RESULTS.md, twentieth round): 8x32x64 0.84-0.88 of
 * the read limit one sentence at a time, 0.92-0.93 two at a time (1x256x64, the same bytes as
 * one sentence: 0.93); 8x64x128 0.91-0.92 and 0.96-0.97; 64x16x64 0.72-0.82 and 0.90-0.91;
 * 4x16x32, 8 KiB, 0.45 and 0.66-0.69. Four at a time (H <= 64) was no better (64x16x64
 * 0.83-0.91). */
#define PAIR_VECS (TILE_VECS / 2)
static inline __attribute__((always_inline)) void short_run_pair(const float *restrict x,
                                                                const float *restrict w,
                                                                float *restrict s, long rows,
                                                                long h, const int nv) {
    const float *restrict y = x + rows * h; /* the next sentence; its sums at s + h */
    vecf a[PAIR_VECS], c[PAIR_VECS];
    EACH_VEC(k, nv) a[k] = c[k] = (vecf){0};
    for (long t = 0; t < rows; t++) {
        const float *r = x + t * h, *q = y + t * h, u = w[t], v = w[rows + t];
        EACH_VEC(k, nv) a[k] += u * *(const vecfu *)(r + VL * k);
        EACH_VEC(k, nv) c[k] += v * *(const vecfu *)(q + VL * k);
    }
    EACH_VEC(k, nv) *(vecfu *)(s + VL * k) = a[k];
    EACH_VEC(k, nv) *(vecfu *)(s + h + VL * k) = c[k];
}

/* short_rows (one_run = 0) or short_run (1), one copy per number of vectors */
static void short_rows_of(const float *restrict x, const float *restrict w, float *restrict s,
                          long rows, long h, long cols, int one_run) {
    switch (cols / VL) {
#define SHORT_CASE(n)                                                                              \
    case n:                                                                                        \
        if (one_run)                                                                               \
            short_run(x, w, s, rows, h, n);                                                        \
        else                                                                                       \
            short_rows(x, w, s, rows, h, n);                                                       \
        break;
        SHORT_CASE(1) SHORT_CASE(2) SHORT_CASE(3) SHORT_CASE(4) SHORT_CASE(5) SHORT_CASE(6)
        SHORT_CASE(7) SHORT_CASE(8)
#if TILE_VECS > 8
        SHORT_CASE(9) SHORT_CASE(10)
        SHORT_CASE(11) SHORT_CASE(12) SHORT_CASE(13) SHORT_CASE(14) SHORT_CASE(15) SHORT_CASE(16)
#endif
#undef SHORT_CASE
    }
}

/* Short rows from beyond L2 (mode 0 with SENTENCE_STRIPES, sum_sentences; attnviz/native.py):
 * whole sentences as four stripes. short_rows reads a sentence's rows as four stripes, each a
 * quarter of a sentence long: a sentence of 64 rows of 128 numbers is four streams of 8 KiB that
 * end where the next sentence's start, which memory serves at 0.72-0.86 of the read limit (a plain
 * read cut the same way, four streams a sentence, as slow: 0.74-0.88), as it serves one stream
 * (tiles: 0.73-0.84). Here a group of sentences is cut into four stripes of whole sentences, and
 * each step reads row t of one sentence of every stripe: four streams each as long as a quarter
 * of the group, as the read limit reads x. Each sentence is summed one row after another into
 * sums of its own, so it gets the same bits whatever its group (on the lines, those short_run
 * gives it). Rows off the lines too (AVX-512, GCC: quad_straddled), where each sentence's own
 * stripes, a few rows each, had been slower still (16384x32x61 from DRAM: 0.46 of the read
 * limit, as stripes of sentences 0.93; 32768x32x24 0.34 and 0.95).
 * STRIPED_NUMEL numbers a group at most (x's first sentences first): the read limit's unit from
 * DRAM (attnviz/native_read.py), whose streams a few MiB apart read faster than a quarter of x
 * apart. Where a sentence is longer than a quarter of that, short_rows' stripes are as long. */
#define STRIPED_NUMEL 1048576 /* 4 MiB of floats */
/* vectors a row at most for four stripes of sentences, their sums in registers (4 * QUAD_VECS of
 * them; with AVX-512's 32 registers, 8 a row ran faster than sums kept in memory: 2048x64x128 from
 * DRAM, one thread, 0.89-0.92 of the read limit against 0.81-0.85; two threads, 0.87-0.88 and
 * 0.75-0.79). Rows of up to twice as many vectors are read as two stripes of sentences (2 *
 * QUAD_VECS sums each; medians, one thread: 2048x32x192 from DRAM 0.62 of the read limit as
 * each sentence's own four stripes, 0.87 so, 1024x96x160 0.82 and 0.89, 256x64x256 in the L3 0.84
 * and 0.94; four stripes of them with their sums in memory: 0.43-0.80). */
#if VL == 16
#define QUAD_VECS 8
#else
#define QUAD_VECS 2
#endif
/* the stripes of sentences for rows of nv vectors */
#define STRIPES_OF(nv) ((nv) <= QUAD_VECS ? 4 : 2)
/* From DRAM, sentences of at most STREAM_SHORT_ROWS rows on the lines have their sums stored past
 * the caches (stream_vec, vectors.h): the output is then a half to an eighth of x, and each line
 * of it stored as usual is read first. Plain C, paired in one process, x of 64-128 MiB, two runs,
 * stored so against as usual (benchmarks/runs/issue32af/stream_pair.txt): one thread 32768x2x256
 * 0.54-0.58 -> 0.64-0.67, 65536x2x128 0.60-0.67 -> 0.76-0.77, 16384x4x256 0.64-0.68 -> 0.67-0.71,
 * 32768x4x128 0.71-0.72 -> 0.78-0.81, 8192x8x256 0.70-0.84 -> 0.71-0.88, 16384x8x128 0.74-0.75 ->
 * 0.76-0.77; two threads 32768x2x256 0.40-0.44 -> 0.55-0.67, 16384x4x256 0.61-0.64 -> 0.71-0.75,
 * 32768x4x128 0.65-0.66 -> 0.78-0.79, 16384x8x128 0.73-0.79 -> 0.80-0.85. Not for more rows, where
 * the output is smaller still: 16384x16x128 0.88 -> 0.85, 8192x16x256 0.88 -> 0.84, 2048x64x128
 * 1.00 -> 0.96 (measured before). */
#define STREAM_SHORT_ROWS 8
/* Rows off the lines (quad_straddled) too, their lines kept whole across a stripe's sentences
 * (line_tail, vectors.h). Rows of at least STREAM_REGS_VECS vectors put each line together in
 * registers (stream_regs); shorter ones through a row in memory (stream_sums), and on one thread
 * only for at most STREAM_OFF_ROWS rows: that way cost more there than the lines read first
 * (plain C, paired in one process, three runs, benchmarks/runs/issue32ag/short_off.txt: one thread
 * 65536x2x127 0.63-0.68 -> 0.67-0.77, but 65536x4x61 0.83-0.87 -> 0.81-0.83, 16384x8x100 0.90-0.92
 * -> 0.85-0.88; two threads 65536x4x61 0.75-0.78 -> 0.79-0.88, 16384x8x100 0.73-0.79 ->
 * 0.79-0.89). In registers, against stored as usual on one thread and through memory on two
 * (benchmarks/runs/issue32ah/regs.txt, two runs): one thread 65536x4x100 0.81-0.84 -> 0.90-0.94,
 * 65536x4x127 0.90 -> 0.95-1.03, 32768x4x200 0.69-0.73 -> 0.83-0.87, 65536x2x127 (through memory
 * before) 0.70 -> 0.79, 16384x8x100 0.77-0.82 -> 0.80-0.84; two threads 65536x4x100 0.75-0.78 ->
 * 0.84, 65536x4x127 0.77 -> 0.86-0.89, 16384x8x100 0.82-0.85 -> 0.86-0.90. Not for shorter rows:
 * of 4 or 5 vectors (H = 61, 77) in registers was 0-15% slower than through memory on two threads
 * (benchmarks/runs/issue32ah/regs_all.txt), and on one thread no faster than stored as usual. */
#define STREAM_OFF_ROWS 2
#define STREAM_REGS_VECS 6
#if STREAM_REGS_VECS < 2
#error "stream_regs takes rows of 16 numbers or more"
#endif

#define EACH_STRIPE(k) _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)

/* quad_run(..., nv, k_st, stream): row t of sentences 0, q, 2q and 3q (from x; q sentences of
 * `rows` rows of h numbers apart; k_st of them: four, two for longer rows, or one for the sentences
 * left over) in each step, each into nv running sums in registers, stored past the caches where
 * `stream` (see STREAM_SHORT_ROWS). Rows on the lines: whole vectors. */
static inline __attribute__((always_inline)) void quad_run(const float *restrict x,
                                                          const float *restrict w,
                                                          float *restrict s, long q, long rows,
                                                          long h, const int nv, const int k_st,
                                                          const int stream) {
    const long dx = q * rows * h, dw = q * rows; /* from one stripe to the next */
    vecf a[4][2 * QUAD_VECS]; /* k_st * nv <= 4 * QUAD_VECS of them used */
    EACH_STRIPE(k) if (k < k_st) EACH_VEC(v, nv) a[k][v] = (vecf){0};
    for (long t = 0; t < rows; t++) {
        const float *r = x + t * h;
        EACH_STRIPE(k) {
            if (k < k_st) {
                const float u = w[k * dw + t];
                EACH_VEC(v, nv) a[k][v] += u * *(const vecfu *)(r + k * dx + VL * v);
            }
        }
    }
    if (stream) {
        EACH_STRIPE(k) if (k < k_st) EACH_VEC(v, nv) stream_vec(s + k * q * h + VL * v, a[k][v]);
        return;
    }
    EACH_STRIPE(k) if (k < k_st) EACH_VEC(v, nv) *(vecfu *)(s + k * q * h + VL * v) = a[k][v];
}

#ifdef ALIGNED_STEPS
/* stream_sums (vectors.h) for a row of at least 16 numbers whose sums are in registers,
 * a[0 .. nv-1] (the lanes past h never stored): each line of d put together from two of them by
 * one permute, and from the numbers kept in *tail for d's first line, never through memory (there
 * the sums are stored to a row on the stack and each line loaded from it off the stores' places,
 * a load a core may hold until the stores reach the cache). Line k + 1 of d's lines is a[k]'s last
 * `before` numbers and a[k + 1]'s first 16 - before; line 0 the kept numbers and a[0]'s first. */
static inline __attribute__((always_inline)) void stream_regs(float *restrict d, const vec16 *a,
                                                             long h, const int nv,
                                                             struct line_tail *tail) {
    const long before = (long)(((uintptr_t)d & 63) / 4); /* numbers of d's line before d */
    const long end = before + h;                          /* the row's end, from that line's start */
    float *const line = d - before;
    const ivec16 iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const ivec16 up = iota + (int)(16 - before), back = (iota - (int)before) & 15;
    const __mmask16 mine = (__mmask16)(0xffffu << before); /* line 0's lanes that are d's */
    if (tail->have != before || tail->line != line)
        flush_tail(tail); /* numbers of another line (or none) */
    const vec16 first = (vec16)_mm512_mask_permutexvar_ps(
        (__m512)(*(const vec16 *)tail->num), mine, (__m512i)back, (__m512)a[0]);
    /* line 0, whole: the row reaches its end (h >= 16) */
    if (before && !tail->have)
        _mm512_mask_storeu_ps(line, mine, (__m512)first); /* as usual: no numbers kept before d */
    else
        stream_vec(line, first);
    tail->line = line + end; /* where the row ends on a line's end */
    tail->have = 0;
    EACH_VEC(k, nv) {
        const vec16 next = k + 1 < nv ? a[k + 1] : (vec16){0};
        const vec16 v = (vec16)_mm512_permutex2var_ps((__m512)a[k], (__m512i)up, (__m512)next);
        if (16 * (k + 2) <= end)
            stream_vec(line + 16 * (k + 1), v);
        else if (16 * (k + 1) < end) { /* the row's last numbers, kept */
            *(vec16 *)tail->num = v;
            tail->line = line + 16 * (k + 1);
            tail->have = end - 16 * (k + 1);
        }
    }
}

/* quad_run for rows off the lines (AVX-512): each row's vectors by loads that straddle two lines,
 * its last by a masked load (nothing past the row is read), as short_straddled reads them
 * (rows_off_lines.h); nv = the row's vectors, the last one part full. The sums past the caches
 * where `tails` (one a stripe: stream_regs, or stream_sums for shorter rows; see
 * STREAM_OFF_ROWS). */
static inline __attribute__((always_inline)) void quad_straddled(const float *restrict x,
                                                                const float *restrict w,
                                                                float *restrict s, long q,
                                                                long rows, long h, const int nv,
                                                                const int k_st,
                                                                struct line_tail *tails) {
    const long dx = q * rows * h, dw = q * rows, full = (h - 1) / 16; /* vectors before the last */
    const __mmask16 last = (__mmask16)((1u << (h - 16 * full)) - 1);
    vec16 a[4][2 * QUAD_VECS];
    EACH_STRIPE(k) if (k < k_st) EACH_VEC(v, nv) a[k][v] = (vec16){0};
    for (long t = 0; t < rows; t++) {
        const float *r = x + t * h;
        EACH_STRIPE(k) {
            if (k < k_st) {
                const float u = w[k * dw + t], *rk = r + k * dx;
                EACH_VEC(v, nv) {
                    if (v < full)
                        a[k][v] += u * *(const vec16u *)(rk + 16 * v);
                    else
                        a[k][v] += u * (vec16)_mm512_maskz_loadu_ps(last, rk + 16 * v);
                }
            }
        }
    }
    if (tails && nv >= STREAM_REGS_VECS) {
        EACH_STRIPE(k) if (k < k_st) stream_regs(s + k * q * h, a[k], h, nv, tails + k);
        return;
    }
    if (tails) { /* through a row in memory */
        float row[16 * 2 * QUAD_VECS] __attribute__((aligned(64)));
        EACH_STRIPE(k) {
            if (k < k_st) {
                EACH_VEC(v, nv) *(vec16 *)(row + 16 * v) = a[k][v];
                stream_sums(s + k * q * h, row, h, tails + k);
            }
        }
        return;
    }
    EACH_STRIPE(k) if (k < k_st) store_sums(s + k * q * h, a[k], h, nv);
}
#endif

/* whether whole sentences of `rows` rows of h numbers from x are summed by striped_sentences:
 * rows of at most 2 * QUAD_VECS vectors, whole ones on the lines (or with AVX-512, rows off the
 * lines, read by straddling loads), sentences of at most a quarter of STRIPED_NUMEL (a unit of
 * fewer than four, the plan's last, is summed there too: one sentence after another, with the
 * same bits as the rest) */
static inline int on_lines(const float *x, long h) {
    return h % 16 == 0 && h % VL == 0 && ((uintptr_t)x & 63) == 0;
}
static inline int stripes_sentences(const float *x, long rows, long h) {
#ifdef ALIGNED_STEPS
    (void)x; /* rows off the lines too */
    const int fits = (h + 15) / 16 <= 2 * QUAD_VECS;
#else
    const int fits = on_lines(x, h) && h <= 2 * QUAD_VECS * VL;
#endif
    return fits && 4 * rows * h <= STRIPED_NUMEL;
}

/* quad_run (or quad_straddled) on STRIPES_OF(nv) stripes, or on one sentence (alone), one copy
 * per number of vectors nv; the sums past the caches where `stream` (on the lines) or `tails` (off
 * them) */
static void quad_of(const float *x, const float *w, float *s, long q, long rows, long h, int alone,
                    int lines, int stream, struct line_tail *tails) {
#ifdef ALIGNED_STEPS
    if (!lines) {
        switch ((h + 15) / 16) {
#define QUAD_OFF(nv)                                                                               \
    case nv:                                                                                       \
        if (alone)                                                                                 \
            quad_straddled(x, w, s, q, rows, h, nv, 1, tails);                                     \
        else                                                                                       \
            quad_straddled(x, w, s, q, rows, h, nv, STRIPES_OF(nv), tails);                        \
        break;
            QUAD_OFF(1) QUAD_OFF(2) QUAD_OFF(3) QUAD_OFF(4) QUAD_OFF(5) QUAD_OFF(6) QUAD_OFF(7)
            QUAD_OFF(8) QUAD_OFF(9) QUAD_OFF(10) QUAD_OFF(11) QUAD_OFF(12) QUAD_OFF(13)
            QUAD_OFF(14) QUAD_OFF(15) QUAD_OFF(16)
#undef QUAD_OFF
        }
        return;
    }
#endif
    switch (h / VL) {
#define QUAD_CASE(nv)                                                                              \
    case nv:                                                                                       \
        if (alone)                                                                                 \
            quad_run(x, w, s, q, rows, h, nv, 1, stream);                                          \
        else                                                                                       \
            quad_run(x, w, s, q, rows, h, nv, STRIPES_OF(nv), stream);                             \
        break;
        QUAD_CASE(1) QUAD_CASE(2) QUAD_CASE(3) QUAD_CASE(4)
#if QUAD_VECS > 2
        QUAD_CASE(5) QUAD_CASE(6) QUAD_CASE(7) QUAD_CASE(8) QUAD_CASE(9) QUAD_CASE(10)
        QUAD_CASE(11) QUAD_CASE(12) QUAD_CASE(13) QUAD_CASE(14) QUAD_CASE(15) QUAD_CASE(16)
#endif
#undef QUAD_CASE
    }
}

/* out[s, :] for `count` whole sentences from x, in groups of four (or two) stripes (see
 * STRIPED_NUMEL); the sentences past a group's equal stripes one at a time, with the same bits;
 * out stored past the caches where `stream` (on the lines: where out is on them too) */
static void striped_sentences(const float *x, const float *w, float *out, long count, long rows,
                              long h, int stream) {
    const long per = rows * h, group = STRIPED_NUMEL / per / 4 * 4; /* sentences a group */
    const int lines = on_lines(x, h), k_st = STRIPES_OF(lines ? h / VL : (h + 15) / 16);
    struct line_tail kept[4] = {{{0}, out, 0}, {{0}, out, 0}, {{0}, out, 0}, {{0}, out, 0}};
    struct line_tail *tails = stream && !lines ? kept : 0; /* each stripe's last line */
    stream = stream && lines && (uintptr_t)out % (4 * VL) == 0;
    for (long g0 = 0; g0 < count; g0 += group) {
        const long n = count - g0 < group ? count - g0 : group, q = n / k_st;
        const float *xg = x + g0 * per, *wg = w + g0 * rows;
        float *og = out + g0 * h;
        for (long j = 0; j < q; j++)
            quad_of(xg + j * per, wg + j * rows, og + j * h, q, rows, h, 0, lines, stream, tails);
        for (long s = k_st * q; s < n; s++)
            quad_of(xg + s * per, wg + s * rows, og + s * h, 0, rows, h, 1, lines, stream, tails);
    }
    if (tails)
        for (int k = 0; k < 4; k++) flush_tail(kept + k);
}

#endif
