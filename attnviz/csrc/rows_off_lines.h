/* Rows off the 64-byte lines, read as whole aligned lines (AVX-512 with GCC: ALIGNED_STEPS):
 * rows_realigned, short_realigned for short rows (their sums in registers), and a small x beside
 * subnormal numbers copied away from them first (subnormal_edges).
 * Part of the fused kernel, included by weighted_rows.c after what it uses: vectors.h,
 * DRAM_BLOCK_H, PREFETCH_BYTES and EACH_VEC (a header of it, not a library of its own, so that
 * every loop here is inlined into the kernel's). */
#ifndef ATTNVIZ_ROWS_OFF_LINES_H
#define ATTNVIZ_ROWS_OFF_LINES_H

#include <stdint.h>

#include "vectors.h"

#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h> /* _mm512_mask_storeu_ps: a row's last numbers, stored in one go */
#define ALIGNED_STEPS 1
/* a 64-byte line as one AVX-512 register (vecf, VL = 16), and its lanes' indices */
typedef vecf vec16;
typedef vecfu vec16u;
typedef int ivec16 __attribute__((vector_size(64)));

/* Rows that do not start on a 64-byte line (H not a multiple of 16) are read as whole aligned
 * lines, never by loads that straddle two lines: such loads cost the L1 twice, and on two
 * threads reading from L3 that was the limit (H = 777: 0.80 of the read limit, H = 784: 0.93).
 * A line that holds any number of a row is read whole, past the row's end (never past the line,
 * so never into a page that is not there).
 *
 * Row r starts m(r) numbers into its line, and m repeats every q rows (q = 16 / gcd(H, 16)), so
 * rows q apart share m. A step takes K <= 4 such rows: their lines are weighted and added as
 * they come, and the sum shifted into place once, by one permute of two neighbouring sums
 * (GCC's __builtin_shuffle: vpermt2ps). An earlier version permuted each row's lines before
 * adding them, four permutes for every one here: from L3 on two threads, 3x1001x777, 0.83-0.86
 * of the read limit, and 0.89-0.91 with one permute (plain C, then in the benchmark). The K
 * lines are added one after another (a multiply, then K - 1 fused multiply-adds): as two pairs
 * added (five operations for four lines, against four) in L2 it was 0-4% slower (one and two
 * threads, H = 777 and 333, paired in one process). */
static inline __attribute__((always_inline)) vec16 mix(const vec16u *const *line, const float *u,
                                                      long v, int k_rows) {
    vec16 a = u[0] * line[0][v];
    for (int k = 1; k < k_rows; k++) a += u[k] * line[k][v];
    return a;
}

/* sums[0:n] += sum over i < st, k < k_rows of w[i*rs + k*ds] * x[(i*rs + k*ds)*h : ... + n]:
 * st steps of k_rows rows ds rows apart (ds a multiple of q), the steps rs rows apart */
static inline __attribute__((always_inline)) void shared_steps(
    const float *restrict x, const float *restrict w, vec16 *restrict sums, long st, long rs,
    long ds, int k_rows, long h, long n, const int ahead) {
    const long full = n / 16, rem = n - 16 * full; /* whole steps of 16, and what is left */
    ivec16 iota;
    for (int k = 0; k < 16; k++) iota[k] = k;
    for (long i = 0; i < st; i++) {
        const float *row = x + i * rs * h;
        const long m = (long)(((uintptr_t)row & 63) / 4); /* numbers before the row on its line */
        const vec16u *line[4];
        float u[4];
        for (int k = 0; k < k_rows; k++) {
            line[k] = (const vec16u *)(row + k * ds * h - m);
            u[k] = w[i * rs + k * ds];
        }
        const ivec16 pick = iota + (int)m; /* 16 + .. picks from the second sum */
        vec16 lo = mix(line, u, 0, k_rows);
        for (long v = 0; v < full; v++) {
            if (ahead) /* every line (every other one gained nothing here; see sum_rows_of) */
                for (int k = 0; k < k_rows; k++)
                    __builtin_prefetch((const char *)(line[k] + v) + PREFETCH_BYTES);
            const vec16 hi = mix(line, u, v + 1, k_rows);
            sums[v] += __builtin_shuffle(lo, hi, pick);
            lo = hi;
        }
        if (rem) { /* the rest of each row (a line more only where the row reaches into it);
                    * its lanes past the row sum numbers of the next row, and are never stored */
            const vec16 hi = m + rem > 16 ? mix(line, u, full + 1, k_rows) : lo;
            sums[full] += __builtin_shuffle(lo, hi, pick);
        }
    }
}

/* shared_steps, one copy per k_rows and way to load; always inlined into rows_realigned, which is
 * never inlined: left to GCC, what it inlines follows the size of the whole file, and once
 * short_realigned came in it stopped inlining this one into rows_realigned, which then ran 2-3%
 * slower at 1x250x777 on two threads (plain C, paired in one process, the code otherwise the
 * same) */
static inline __attribute__((always_inline)) void steps_of(const float *restrict x,
                                                          const float *restrict w,
                                                          vec16 *restrict sums, long st, long rs,
                                                          long ds, int k_rows, long h, long n,
                                                          int ahead) {
    switch (k_rows * 2 + (ahead != 0)) { /* one copy of the loop per k_rows and way to load */
    case 9: shared_steps(x, w, sums, st, rs, ds, 4, h, n, 1); break;
    case 8: shared_steps(x, w, sums, st, rs, ds, 4, h, n, 0); break;
    case 7: shared_steps(x, w, sums, st, rs, ds, 3, h, n, 1); break;
    case 6: shared_steps(x, w, sums, st, rs, ds, 3, h, n, 0); break;
    case 5: shared_steps(x, w, sums, st, rs, ds, 2, h, n, 1); break;
    case 4: shared_steps(x, w, sums, st, rs, ds, 2, h, n, 0); break;
    case 3: shared_steps(x, w, sums, st, rs, ds, 1, h, n, 1); break;
    default: shared_steps(x, w, sums, st, rs, ds, 1, h, n, 0);
    }
}

/* acc[0:n] = the first n numbers of sums[]: whole vectors, then the last numbers by one masked
 * store (the lanes past them never reach acc). Written, not added to: acc is not zeroed first,
 * which GCC makes a call to memset for each block of a row (see rows_realigned). Each vector is
 * loaded into a variable of its own, then stored: a loop of plain vector stores, GCC 12 made a
 * copy by rep movsq, 8 bytes at a time just after the last step stored the sums 64 at a time
 * (8x64x61 in L2: 0.50 of the read limit against 0.58 this way, plain C, paired in one process). */
static inline __attribute__((always_inline)) void store_row(float *restrict acc,
                                                           const vec16 *sums, long n) {
    const long full = n / 16;
    for (long v = 0; v < full; v++) {
        vec16 a;
        __builtin_memcpy(&a, sums + v, sizeof a);
        *(vec16u *)(acc + 16 * v) = a;
    }
    if (n % 16)
        _mm512_mask_storeu_ps(acc + 16 * full, (__mmask16)((1u << (n % 16)) - 1),
                              (__m512)sums[full]);
}

/* The rows per stripe (st, returned) of `rows` rows of h numbers off the lines, in `count` (4 or
 * 2) stripes: a multiple of q, the rows from one offset on the line to the same again (q = 16 /
 * gcd(H, 16)), so that the stripes' rows share their offset in every step; len[k] the rows of
 * stripe k (st, then fewer or none at the end; none past the count). */
static long stripes(long rows, long h, long len[4], int count) {
    long q = 16;
    for (long g = h; q > 1 && g % 2 == 0; g /= 2) q /= 2;
    const long st = (rows + count * q - 1) / (count * q) * q;
    for (int k = 0; k < 4; k++) {
        const long left = rows - k * st;
        len[k] = left < 0 || k >= count ? 0 : left < st ? left : st;
    }
    return st;
}

/* acc[0:n] = sum over t < rows of w[t] * x[t*h : t*h + n], for rows off the 64-byte lines:
 * four stripes of st rows (st a multiple of q, so that the stripes' rows share m in every step;
 * the last stripes shorter, or empty), read as four streams as in sum_rows: steps of four rows
 * while every stripe has one, then of three, two, one. An earlier version made st rows / 4 / q * q
 * and took the rows left (up to 4q + 3) q apart, in short steps of their own: 3x61x777 had no
 * stripe at all, and on two threads in L2 it ran at 0.70 of the read limit. The running sums are
 * kept in an aligned buffer of their own, and stored into acc at the end (store_row). Before, acc
 * was zeroed first (by GCC, a call to memset) and the sums added to it: per sentence in L2 that
 * cost, plain C, paired in one process, 8x64x61 0.54 of the read limit against 0.58-0.59 now,
 * 7x61x61 0.59 against 0.63, 3x61x777 0.82 against 0.84-0.85 (two threads 0.79-0.80 against
 * 0.85-0.86), 1x250x777 on two threads 0.89-0.91 against 0.93-0.94. Two stripes (k_st = 2) where
 * four would not leave the sums in L1 (TWO_STRIPES, see sum_rows_of). */
static __attribute__((noinline)) void rows_realigned(const float *restrict x,
                                                     const float *restrict w, float *restrict acc,
                                                     long rows, long h, long n, int ahead,
                                                     int k_st, struct line_tail *tail) {
    vec16 sums[DRAM_BLOCK_H / 16 + 1] __attribute__((aligned(64))); /* n <= any block */
    for (long v = 0; v <= n / 16; v++) sums[v] = (vec16){0};
    long len[4];                                 /* rows of each stripe, non-increasing */
    const long st = stripes(rows, h, len, k_st); /* rows per stripe */
    long i0 = 0;
    for (int k_rows = 4; k_rows >= 1; k_rows--) { /* steps i0 .. len[k_rows-1]-1: k_rows rows */
        const long i1 = len[k_rows - 1];
        if (i1 > i0) {
            steps_of(x + i0 * h, w + i0, sums, i1 - i0, 1, st, k_rows, h, n, ahead);
            i0 = i1;
        }
    }
    if (tail) /* past the caches (from DRAM, one sentence after another: sum_sentences) */
        stream_sums(acc, (const float *)sums, n, tail);
    else
        store_row(acc, sums, n);
}

/* short_realigned(..., nv): rows_realigned for short rows (18 to 241 numbers), the running sums in
 * registers: nv of them (a constant in each copy, short_realigned_of; every loop over them
 * unrolled), enough for a row's lines and one more. They are kept in the frame of the step's rows
 * (column j at lane j + m of the sums) and moved to the next step's frame by one permute each,
 * then the step's K rows (as in rows_realigned: rows that share m, one from each stripe) weighted
 * and added. At the end they are moved to the columns' frame in registers and stored into acc
 * (store_row). In L2, rows_realigned's sums in memory (loaded and stored every step) and its loop
 * of a few lines a row made such rows slow. One thread, plain C, paired in one process
 * (alternating which is built first), rows_realigned against this, both storing as store_row:
 * 8x64x61 0.57-0.59 of the read limit and 0.66-0.67, 7x61x61 0.62-0.63 and 0.71-0.72, 8x61x51
 * 0.57 and 0.65, 8x64x101 0.61-0.66 and 0.70-0.72, 16x61x201 0.77 and 0.82-0.83, 4x61x225
 * 0.82-0.84 and 0.86-0.87; below 50 numbers (with 50 the least) 16x64x45 0.53 and 0.61, 16x64x36
 * 0.48 and 0.55, 16x64x24 0.41 and 0.48. (Before store_row, with acc zeroed by a call to memset and
 * the sums copied out by another, this path was 5% faster than rows_realigned for an odd H where
 * T is a multiple of 64 and 10% slower elsewhere, and no faster below 50 numbers: those calls, not
 * the path, made the difference.) Not for rows of 17 numbers or fewer (a line or two: those go to
 * short_straddled, see there), nor where the stripes ask for lines ahead, which it does not:
 * from DRAM (2048x256x200, one thread) 0.94 of the read limit, rows_realigned asking ahead 0.98,
 * which the caller's timing keeps. */
#define SHORT_OFF_MIN 18   /* numbers: three running sums at least (else short_straddled) */
#define SHORT_OFF_VECS 16  /* running sums at most: up to 241 numbers */
#define OFF_VECS(n) (((n) + 30) / 16) /* lines of a row of n numbers at most, and one more */
static inline __attribute__((always_inline)) void short_step(const float *restrict row,
                                                            const float *restrict w, vec16 *sums,
                                                            long *frame, long ds, long h, long n,
                                                            const int k_rows, const int nv) {
    ivec16 iota;
    for (int k = 0; k < 16; k++) iota[k] = k;
    const long m = (long)(((uintptr_t)row & 63) / 4); /* numbers before the row on its line */
    const long lines = (m + n + 15) / 16;             /* the lines that hold numbers of the row */
    const long d = m - *frame;                        /* lanes the sums move up (down where < 0) */
    const vec16u *line[4];
    float u[4];
    for (int k = 0; k < k_rows; k++) {
        line[k] = (const vec16u *)(row + k * ds * h - m);
        u[k] = w[k * ds];
    }
    if (d > 0) { /* from the top down, each from itself and the one below */
        const ivec16 pick = iota + (int)(16 - d);
        EACH_VEC(v, nv) {
            const int e = nv - 1 - v;
            sums[e] = __builtin_shuffle(e ? sums[e - 1] : (vec16){0}, sums[e], pick);
        }
    } else if (d < 0) { /* from the bottom up, each from itself and the one above */
        const ivec16 pick = iota - (int)d;
        EACH_VEC(v, nv)
            sums[v] = __builtin_shuffle(sums[v], v + 1 < nv ? sums[v + 1] : (vec16){0}, pick);
    }
    *frame = m;
    EACH_VEC(v, nv) {
        if (v < lines) { /* never a line past the row's */
            vec16 a = u[0] * line[0][v];
            for (int k = 1; k < k_rows; k++) a += u[k] * line[k][v];
            sums[v] += a;
        }
    }
}

/* acc[0:n] = the first n numbers of sums[0:nv] (nv a constant: every sum stays in its register;
 * store_row, whose loop runs to a number known only at run time, had GCC store the sums on the
 * stack and load them back) */
static inline __attribute__((always_inline)) void store_sums(float *restrict acc,
                                                            const vec16 *sums, long n,
                                                            const int nv) {
    const long full = n / 16;
    EACH_VEC(v, nv) {
        if (v < full)
            *(vec16u *)(acc + 16 * v) = sums[v];
        else if (v == full && n % 16)
            _mm512_mask_storeu_ps(acc + 16 * v, (__mmask16)((1u << (n % 16)) - 1),
                                  (__m512)sums[v]);
    }
}

static inline __attribute__((always_inline)) void short_realigned(const float *restrict x,
                                                                 const float *restrict w,
                                                                 float *restrict acc, long st,
                                                                 const long len[4], long h,
                                                                 long n, const int nv) {
    vec16 sums[SHORT_OFF_VECS];
    EACH_VEC(v, nv) sums[v] = (vec16){0};
    long frame = (long)(((uintptr_t)x & 63) / 4), i = 0; /* the first rows' m */
    for (; i < len[3]; i++) short_step(x + i * h, w + i, sums, &frame, st, h, n, 4, nv);
    for (; i < len[2]; i++) short_step(x + i * h, w + i, sums, &frame, st, h, n, 3, nv);
    for (; i < len[1]; i++) short_step(x + i * h, w + i, sums, &frame, st, h, n, 2, nv);
    for (; i < len[0]; i++) short_step(x + i * h, w + i, sums, &frame, st, h, n, 1, nv);
    ivec16 pick; /* to the columns' frame (column j at lane j), then stored */
    for (int k = 0; k < 16; k++) pick[k] = (int)frame + k;
    EACH_VEC(v, nv)
        sums[v] = __builtin_shuffle(sums[v], v + 1 < nv ? sums[v + 1] : (vec16){0}, pick);
    store_sums(acc, sums, n, nv);
}

/* short_straddled(..., nv): short rows off the lines by loads that straddle two lines (the last
 * vector of a row a masked load, so nothing past the row is read), the sums in registers in the
 * columns' frame: no permute at all; four stripes of rows / 4 rows as short_rows (weighted_rows.c),
 * the rows % 4 left one at a time. short_realigned moves every sum once a step by a permute, and
 * a step adds rows that share their place on the line, one from each of four stripes a multiple of
 * q rows long (q = 16 / gcd(H, 16)): where a sentence is too short for four such stripes its steps
 * take fewer rows, and the permutes are then what it waits on (64x16x61, one row a step: 0.53 of
 * the read limit). Straddling loads cost the L1 twice, so in long sentences the permutes win.
 * AMD EPYC (Zen 4), one thread, plain C, paired in one process, short_realigned / this for
 * every sentence (benchmarks/runs/issue32w/straddle_all.txt): H = 61: T = 8 0.515 / 0.796, 16
 * 0.554 / 0.836, 32 0.819 / 0.845, 64 0.893 / 0.859; H = 45, T = 16: 0.462 / 0.786; H = 100, T =
 * 16: 0.734 / 0.773, T = 64 0.935 / 0.911; H = 150, T = 16: 0.714 / 0.794, T = 32 0.927 / 0.888;
 * H = 33, T = 64: 0.834 / 0.685. So short_realigned_of takes this where no step of
 * short_realigned would take four rows, or a sentence has 16 rows or fewer (STRADDLE_ROWS; the rule
 * against the tree before it: straddle_rule.txt). nv as in short_realigned: at least the row's
 * vectors; the sums past them stay zero and are never stored. Rows of 17 numbers or fewer (one
 * or two vectors, too few for short_realigned's frame) come here in any sentence: before, they
 * went to rows_realigned, their sums in memory (against it, paired as above, straddle_tiny.txt:
 * 2x3x5 0.35 / 0.81, 128x32x13 0.18 / 0.60, 256x16x5 0.04 / 0.24, 4x1024x15 0.46 / 0.79). */
#define STRADDLE_ROWS 16
static inline __attribute__((always_inline)) void short_straddled(const float *restrict x,
                                                                 const float *restrict w,
                                                                 float *restrict acc, long rows,
                                                                 long h, long n, const int nv) {
    vec16 a[SHORT_OFF_VECS];
    EACH_VEC(v, nv) a[v] = (vec16){0};
    const long full = (n - 1) / 16; /* whole vectors before a row's last */
    const __mmask16 last = (__mmask16)((1u << (n - 16 * full)) - 1);
    const long st = rows / 4, d = st * h; /* rows per stripe; numbers from one to the next */
    for (long i = 0; i < st; i++) {
        const float *r0 = x + i * h, *r1 = r0 + d, *r2 = r1 + d, *r3 = r2 + d;
        const float w0 = w[i], w1 = w[i + st], w2 = w[i + 2 * st], w3 = w[i + 3 * st];
        EACH_VEC(v, nv) {
            if (v < full)
                a[v] += (w0 * *(const vec16u *)(r0 + 16 * v) +
                         w1 * *(const vec16u *)(r1 + 16 * v)) +
                        (w2 * *(const vec16u *)(r2 + 16 * v) +
                         w3 * *(const vec16u *)(r3 + 16 * v));
            else if (v == full)
                a[v] += (w0 * (vec16)_mm512_maskz_loadu_ps(last, r0 + 16 * v) +
                         w1 * (vec16)_mm512_maskz_loadu_ps(last, r1 + 16 * v)) +
                        (w2 * (vec16)_mm512_maskz_loadu_ps(last, r2 + 16 * v) +
                         w3 * (vec16)_mm512_maskz_loadu_ps(last, r3 + 16 * v));
        }
    }
    for (long t = 4 * st; t < rows; t++) {
        const float *r = x + t * h;
        EACH_VEC(v, nv) {
            if (v < full)
                a[v] += w[t] * *(const vec16u *)(r + 16 * v);
            else if (v == full)
                a[v] += w[t] * (vec16)_mm512_maskz_loadu_ps(last, r + 16 * v);
        }
    }
    store_sums(acc, a, n, nv);
}

/* whether short_realigned_of reads `rows` rows of n numbers (h apart) by straddling loads */
static inline int straddles(long rows, long h, long n) {
    long len[4];
    stripes(rows, h, len, 4);
    return len[3] == 0 || rows <= STRADDLE_ROWS || n < SHORT_OFF_MIN;
}

/* whether `rows` rows of n numbers h apart from x, off the lines, are summed by short_realigned_of:
 * with the stripes not asking for lines ahead, or read by straddling loads, which never ask (the
 * sums must be the same to the bit either way, and rows_realigned's are short_realigned's) */
static inline int short_off_lines(const float *x, long rows, long h, long n, int ahead) {
    return (h % 16 != 0 || ((uintptr_t)x & 63) != 0) && n > 0 && OFF_VECS(n) <= SHORT_OFF_VECS &&
           (!ahead || straddles(rows, h, n));
}

/* short_realigned (or short_straddled, for short sentences) for `count` sentences of `rows` rows
 * each (x rows * h numbers apart, w rows, out h), one copy per number of running sums: the stripes
 * and the copy chosen once for them all. Called once a sentence (a call of sum_rows each, the copy
 * chosen each time), sentences of 64 rows of 61 numbers cost ~30 ns more each than one long
 * sentence of the same rows (AMD EPYC, Zen 4, one thread, plain C: 16x64x61 0.80 of the read
 * limit, 1x1024x61 0.955). */
static void short_realigned_of(const float *restrict x, const float *restrict w,
                               float *restrict out, long count, long rows, long h, long n) {
    long len[4];
    const long st = stripes(rows, h, len, 4); /* as in rows_realigned */
    const int straddle = straddles(rows, h, n); /* see short_straddled */
    switch (OFF_VECS(n)) {
#define OFF_CASE(nv)                                                                               \
    case nv:                                                                                       \
        if (straddle)                                                                              \
            for (long s = 0; s < count; s++)                                                       \
                short_straddled(x + s * rows * h, w + s * rows, out + s * h, rows, h, n, nv);      \
        else                                                                                       \
            for (long s = 0; s < count; s++)                                                       \
                short_realigned(x + s * rows * h, w + s * rows, out + s * h, st, len, h, n, nv);   \
        break;
    case 1: /* rows of 17 numbers or fewer (n < SHORT_OFF_MIN): straddled */
    case 2:
        for (long s = 0; s < count; s++)
            short_straddled(x + s * rows * h, w + s * rows, out + s * h, rows, h, n, 2);
        break;
        OFF_CASE(3) OFF_CASE(4) OFF_CASE(5) OFF_CASE(6) OFF_CASE(7) OFF_CASE(8) OFF_CASE(9)
        OFF_CASE(10) OFF_CASE(11) OFF_CASE(12) OFF_CASE(13) OFF_CASE(14) OFF_CASE(15) OFF_CASE(16)
#undef OFF_CASE
    }
}

/* x's first and last lines are read whole too, and where x starts or ends inside a line, the
 * numbers there that are not x's are weighted and added into lanes that are never stored. Where
 * those bytes read as subnormal floats, each multiply and add of them costs the CPU a microcode
 * assist: past a tensor's end they are often the next block's malloc header, a small integer (in
 * plain C, 2x3x5: 60 ns a call with 1.0 past x, 205 ns with 0x31, ~70 cycles an assist; through
 * Python, 2x3x5 took 0.37 us a call and 2x3x16 0.19). So a small x (EDGE_COPY_NUMEL numbers at
 * most: the copy then costs less than the assists it saves) with such bytes beside it is copied
 * first, at the same place on its lines with zeros around it, and summed there: the same sums to
 * the bit, as every lane of x is where it was. A larger x meets them once or twice a call. */
#define EDGE_COPY_NUMEL 2048

/* whether a number in the given lanes of the 64-byte line at `line` is subnormal (exponent 0,
 * mantissa not), read as bits: nothing here is a float operation on one */
static inline int subnormal_lanes(const float *line, __mmask16 lanes) {
    const __m512i v = _mm512_load_si512((const void *)line);
    const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x7fffff);
    return (_mm512_mask_test_epi32_mask(lanes, v, mantissa) &
            ~_mm512_mask_test_epi32_mask(lanes, v, exponent)) != 0;
}

/* whether a number on x's first line before x, or on its last line after x[n-1], is subnormal */
static int subnormal_edges(const float *x, long n) {
    const long before = (long)(((uintptr_t)x & 63) / 4);     /* numbers on the line before x */
    const long last = (long)(((uintptr_t)(x + n) & 63) / 4); /* x's numbers on its last line */
    return (before && subnormal_lanes(x - before, (__mmask16)((1u << before) - 1))) ||
           (last && subnormal_lanes(x + n - last, (__mmask16) ~((1u << last) - 1)));
}

/* x's n numbers copied into pad (64-byte aligned, at least n + 30 numbers) at the same place on
 * a line as x, zeros around them on their first and last lines; returns where x now starts */
static const float *padded(const float *x, long n, float *pad) {
    const long m = (long)(((uintptr_t)x & 63) / 4), end = (m + n + 15) / 16 * 16;
    for (long i = 0; i < m; i++) pad[i] = 0.0f;
    __builtin_memcpy(pad + m, x, (size_t)n * sizeof(float));
    for (long i = m + n; i < end; i++) pad[i] = 0.0f;
    return pad + m;
}
#endif

#endif
