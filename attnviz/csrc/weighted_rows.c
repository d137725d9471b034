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
#include "stripes.h"        /* a sentence's rows as stripes, their sums in the L1 */

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
        /* from DRAM, short sentences: their sums past the caches (STREAM_SHORT_ROWS; shorter
         * rows off the lines on one thread, STREAM_OFF_ROWS) */
        float *o = out + s0 * h;
        const int regs = (h + 15) / 16 >= STREAM_REGS_VECS; /* stream_regs */
        const long most = threads > 1 || regs || on_lines(x + s0 * t * h, h) ? STREAM_SHORT_ROWS
                                                                              : STREAM_OFF_ROWS;
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
