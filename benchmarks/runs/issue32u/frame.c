/* Issue 32, fifteenth round (benchmarks/RESULTS.md), a prototype, not the library: wr_b(x, w, out,
 * partial, shape) for one thread and whole sentences, off-line rows of 17..256 numbers only.
 *
 * Rows off the lines summed in a group frame, the running sums in L1.
 * q = 16 / gcd(H, 16) rows are L = q*H/16 whole lines; every group of q rows of a sentence
 * starts at the same lane p of its line. x is read as one stream of aligned lines; line k of a
 * group is weighted lane by lane (one two-source permute of the group's weights, index idx_k)
 * and added into acc[k] (in L1), NG groups at a time. At the end the q rows of acc are added
 * into the H columns. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NG
#define NG 4
#endif
#define MAXL 256
/* NOPERM=1: every line weighted by the group's first 16 weights, no permute (sums wrong: a bound) */
#ifdef NOPERM
#define WEIGHTS(lo, id, hi) (lo)
#else
#define WEIGHTS(lo, id, hi) _mm512_permutex2var_ps(lo, id, hi)
#endif

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* idx table: tab[m] = floor((m - 16) / h) + 1 for m in [0, 16L + 32) */
static int tab_h = -1;
static int32_t tab[16 * MAXL + 64] __attribute__((aligned(64)));

static void make_tab(int h, int L) {
    if (tab_h == h) return;
    for (int m = 0; m < 16 * L + 32; m++) {
        int e = m - 16;
        tab[m] = (e >= 0 ? e / h : -((-e + h - 1) / h)) + 1;
    }
    tab_h = h;
}

/* the group's weight table: entries 0..16 are rows g0row-1 .. g0row+q-1 (q+1 entries) */
static inline __m512 wtab_lo(const float *w, long g0row, long t, int q) {
    long first = g0row - 1;
    uint32_t m = q == 16 ? 0xFFFFu : (1u << (q + 1)) - 1;
    if (first < 0) m &= ~1u;
    long last = t - first; /* entries < last are rows < t */
    if (last < 16) m &= (1u << last) - 1;
    return _mm512_maskz_loadu_ps((__mmask16)m, w + first);
}
static inline __m512 wtab_hi(const float *w, long g0row, long t, int q) {
    long r = g0row + 15; /* entry 16 */
    uint32_t m = (q == 16 && r < t) ? 1u : 0u;
    return _mm512_maskz_loadu_ps((__mmask16)m, w + r);
}
/* an interior group: every entry a row of the sentence */
static inline __m512 wlo_in(const float *w, long g0row, __mmask16 m) { return _mm512_maskz_loadu_ps(m, w + g0row - 1); }
static inline __m512 whi_in(const float *w, long g0row, __mmask16 m) { return _mm512_maskz_loadu_ps(m, w + g0row + 15); }

static void sentence(const float *xs, const float *ws, float *out, long t, int h) {
    const int q = 16 / gcd(h, 16), L = q * h / 16;
    const int p = (int)(((uintptr_t)xs / 4) & 15);
    const float *base = xs - p;
    const long G = t / q;
    const int rem = (int)(t - G * q);
    __m512 acc[MAXL] __attribute__((aligned(64)));
    float fold[16 * MAXL + 32] __attribute__((aligned(64)));
    make_tab(h, L);
    const int32_t *ix = tab + 16 - p;
    long g = 0;
    int init = 1;
    const __mmask16 mlo = q == 16 ? 0xFFFF : (__mmask16)((1u << (q + 1)) - 1), mhi = q == 16 ? 1 : 0;
    /* the first group alone: its first line's lanes before p are not this sentence's */
    {
        __m512 lo = wtab_lo(ws, 0, t, q), hi = wtab_hi(ws, 0, t, q);
        if (G == 0) goto tail;
        for (int k = 0; k < L; k++) {
            __m512i id = _mm512_loadu_si512(ix + 16 * k);
            __m512 W = _mm512_permutex2var_ps(lo, id, hi);
            __m512 xv = k == 0 ? _mm512_maskz_load_ps((__mmask16)(0xFFFFu << p), base)
                               : _mm512_load_ps(base + 16 * k);
            acc[k] = _mm512_mul_ps(xv, W);
        }
        g = 1;
        init = 0;
    }
    for (; g + NG <= G; g += NG) {
        __m512 lo[NG], hi[NG];
        for (int i = 0; i < NG; i++) lo[i] = wlo_in(ws, (g + i) * q, mlo), hi[i] = whi_in(ws, (g + i) * q, mhi);
        const float *gb = base + g * 16 * L;
        for (int k = 0; k < L; k++) {
            __m512i id = _mm512_loadu_si512(ix + 16 * k);
            __m512 s = acc[k];
#pragma GCC unroll 8
            for (int i = 0; i < NG; i++)
                s = _mm512_fmadd_ps(_mm512_load_ps(gb + 16 * (i * L + k)), WEIGHTS(lo[i], id, hi[i]), s);
            acc[k] = s;
        }
    }
    for (; g < G; g++) {
        __m512 lo = wlo_in(ws, g * q, mlo), hi = whi_in(ws, g * q, mhi);
        const float *gb = base + g * 16 * L;
        for (int k = 0; k < L; k++) {
            __m512i id = _mm512_loadu_si512(ix + 16 * k);
            acc[k] = _mm512_fmadd_ps(_mm512_load_ps(gb + 16 * k), _mm512_permutex2var_ps(lo, id, hi), acc[k]);
        }
    }
tail:;
    /* group G: the last p numbers of row G*q-1 (lanes < p of its line 0), then rem rows */
    {
        const long n_el = p + (long)rem * h; /* lanes of the tail frame that are this sentence's */
        const int lines = (int)((n_el + 15) / 16);
        __m512 lo = wtab_lo(ws, G * q, t, q), hi = wtab_hi(ws, G * q, t, q);
        const float *gb = base + G * 16 * L;
        for (int k = 0; k < lines; k++) {
            long left = n_el - 16L * k;
            __mmask16 m = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
            if (G == 0 && k == 0) m &= (__mmask16)(0xFFFFu << p);
            __m512i id = _mm512_loadu_si512(ix + 16 * k);
            __m512 prod = _mm512_mul_ps(_mm512_maskz_load_ps(m, gb + 16 * k), _mm512_permutex2var_ps(lo, id, hi));
            acc[k] = init ? prod : _mm512_add_ps(acc[k], prod);
        }
        if (init)
            for (int k = lines; k < L; k++) acc[k] = _mm512_setzero_ps();
    }
    /* fold: column c = (f - p) mod h over frame position f */
    for (int k = 0; k < L; k++) _mm512_store_ps(fold + 16 * k, acc[k]);
    _mm512_store_ps(fold + 16 * L, acc[0]);
    _mm512_store_ps(fold + 16 * L + 16, L > 1 ? acc[1] : acc[0]);
    const int nv = (h + 15) / 16;
    for (int v = 0; v < nv; v++) {
        __m512 s = _mm512_loadu_ps(fold + p + 16 * v);
        for (int i = 1; i < q; i++) s = _mm512_add_ps(s, _mm512_loadu_ps(fold + p + i * h + 16 * v));
        int left = h - 16 * v;
        if (left >= 16)
            _mm512_storeu_ps(out + 16 * v, s);
        else
            _mm512_mask_storeu_ps(out + 16 * v, (__mmask16)((1u << left) - 1), s);
    }
}

void wr_b(const float *x, const float *w, float *out, float *partial, const long *shape) {
    (void)partial;
    const long b = shape[0], t = shape[1], h = shape[2];
    for (long s = 0; s < b; s++) sentence(x + s * t * h, w + s * t, out + s * h, t, (int)h);
}
