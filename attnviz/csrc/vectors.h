/* What the fused kernel (weighted_rows.c) and the read limit (read_floats.c) share: the width of
 * the vectors they read x in, how many a tile keeps in registers, and how far ahead a stream asks
 * for its lines (and the kernel's store past the caches). One definition, so that the read limit is built exactly as the kernel is. */
#ifndef ATTNVIZ_VECTORS_H
#define ATTNVIZ_VECTORS_H

/* VL floats as one value, one register of the widest vectors the CPU has (GCC and Clang vector
 * types): 16 with AVX-512, 8 with AVX, 4 with SSE or NEON. Never wider than the registers: a
 * 64-byte vector type without AVX-512 has no register to live in, and GCC 12 kept every such
 * value in memory (AVX2: each add went through the stack; the read loop ran at 12 GB/s in L2
 * against x.sum()'s 50, the kernel at 19). vecf: running sums and computed values; vecfu: the
 * same through a pointer into x or the output, aligned(4) and may_alias, so it reads any float. */
#if defined(__AVX512F__)
#define VL 16
#elif defined(__AVX__)
#define VL 8
#else
#define VL 4
#endif
typedef float vecf __attribute__((vector_size(4 * VL)));
typedef float vecfu __attribute__((vector_size(4 * VL), aligned(4), may_alias));

/* vecf running sums per tile: as many as the registers hold with room to spare (32 vector
 * registers with AVX-512, 16 with AVX or SSE) */
#if VL == 16
#define TILE_VECS 16
#else
#define TILE_VECS 8
#endif
#define TILE (VL * TILE_VECS) /* columns per tile */

/* v stored at p, 4 * VL bytes aligned, past the caches (a non-temporal store: its line is not
 * read first), where the CPU has such stores of VL numbers; else stored as usual. A call on short
 * sentences from DRAM writes a sizeable output (B x H numbers for T times as many read), and a
 * store to a line not in the cache reads the line from memory first, so each would be moved twice
 * (long_sentences.h and short_rows.h say where, and what it gained). The streamed stores are
 * ordered before what follows by stream_fence, which each thread that made them calls. */
#include <stdint.h> /* uintptr_t */

#if defined(__AVX__)
#include <immintrin.h> /* _mm512_stream_ps, _mm256_stream_ps, _mm_sfence */
#endif
static inline void stream_vec(float *p, vecf v) {
#if defined(__AVX512F__) && VL == 16
    _mm512_stream_ps(p, (__m512)v);
#elif defined(__AVX__) && VL == 8
    _mm256_stream_ps(p, (__m256)v);
#else
    *(vecfu *)p = v;
#endif
}
static inline void stream_fence(void) {
#if defined(__AVX__)
    _mm_sfence();
#endif
}

/* Rows off the 64-byte lines (H not a multiple of 16) start and end inside a line. Where each
 * row's whole lines were streamed and the numbers on the lines it shares with the rows before and
 * after it stored as usual, those stores, which read their lines first, cost more than every
 * other line together (plain C, paired in one process, benchmarks/runs/issue32ag: 16384x4x300 from
 * DRAM, one thread, 0.46-0.50 of the read limit; with those numbers not stored at all, 0.67). So
 * where rows are written one after another (a stripe's sentences), a row's last numbers are kept
 * (line_tail) until the next row gives the rest of their line, which is then streamed whole too:
 * only the first and last lines of a run of rows are stored as usual. */
struct line_tail {
    float num[16] __attribute__((aligned(64))); /* the line's first `have` numbers */
    float *line;                                /* where the line goes (64-byte aligned) */
    long have;
};

/* dst[0:n] = src[0:n], n <= 16: with AVX-512 one masked load and store (nothing past n is read
 * or written) */
static inline __attribute__((always_inline)) void copy_few(float *dst, const float *src, long n) {
#if defined(__AVX512F__) && VL == 16
    const __mmask16 m = (__mmask16)((1u << n) - 1);
    _mm512_mask_storeu_ps(dst, m, _mm512_maskz_loadu_ps(m, src));
#else
    for (long i = 0; i < n; i++) dst[i] = src[i];
#endif
}

/* the 16 numbers of one 64-byte line past the caches */
static inline __attribute__((always_inline)) void stream_line(float *line, const float *num) {
    for (int i = 0; i < 16; i += VL) stream_vec(line + i, *(const vecfu *)(num + i));
}

/* the numbers kept in *tail, stored as usual (a stripe's last row's last line) */
static inline void flush_tail(struct line_tail *tail) {
    if (tail->have)
        copy_few(tail->line, tail->num, tail->have);
    tail->have = 0;
}

/* d[0:h] = a[0:h] past the caches: whole lines streamed; the line d starts in streamed whole
 * with the numbers in *tail where they are those just before d (the row before it), else stored
 * as usual; the numbers after d's last whole line kept in *tail (all of them where the row ends
 * in a line the numbers in *tail began) */
static inline __attribute__((always_inline)) void stream_sums(float *restrict d,
                                                             const float *restrict a, long h,
                                                             struct line_tail *tail) {
    const long before = (long)(((uintptr_t)d & 63) / 4); /* numbers of d's line before d */
    if (tail->have != before || tail->line + before != d)
        flush_tail(tail); /* numbers of another line (or none) */
    long j = 0;           /* a's numbers placed */
    if (before) {
        const long first = 16 - before < h ? 16 - before : h; /* a's numbers on that line */
        if (tail->have) { /* the row's just before d */
            copy_few(tail->num + before, a, first);
            if (before + first < 16) { /* the line not full yet */
                tail->have = before + first;
                return;
            }
            stream_line(tail->line, tail->num);
        } else
            copy_few(d, a, first);
        j = first;
    }
    for (; j + 16 <= h; j += 16) stream_line(d + j, a + j);
    tail->line = d + j;
    tail->have = h - j;
    if (h > j) /* (rows on the lines: never) */
        copy_few(tail->num, a + j, h - j);
}

/* how far ahead of its loads a stream asks for its lines, where it asks (PREFETCH in
 * weighted_rows.c; read_floats' mode 2) */
#ifndef PREFETCH_BYTES
#define PREFETCH_BYTES 1024
#endif

#endif
