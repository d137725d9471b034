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

/* how far ahead of its loads a stream asks for its lines, where it asks (PREFETCH in
 * weighted_rows.c; read_floats' mode 2) */
#ifndef PREFETCH_BYTES
#define PREFETCH_BYTES 1024
#endif

#endif
