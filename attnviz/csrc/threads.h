/* How the fused kernel (weighted_rows.c) and the read limit (read_floats.c) hand their units of
 * work to OpenMP threads: one rule for both, so that the read limit is threaded as the kernel is.
 *
 * Units go to the threads as they come free (schedule(dynamic)), so a thread that starts late or
 * shares its core with another program simply takes fewer units. Where x sits in the threads'
 * L2 caches (the caller says so: OWN_L2 in the mode), each thread instead takes the same units on
 * every call (schedule(static): thread k the k-th share), and so reads the bytes its own L2 kept
 * from the last call: taken as they came free, a unit's bytes were often in the other core's L2
 * (two threads, plain C, paired, the read limit threaded the same way: 5x256x128 0.67 of the read
 * limit, 0.83 so; 3x512x128 0.76-0.77 and 0.84-0.85; 1x256x1024 0.89-0.90 and 0.92-0.94). */
#ifndef ATTNVIZ_THREADS_H
#define ATTNVIZ_THREADS_H

/* a bit of the mode (the kernel's shape[6], read_floats' mode): x sits in the threads' L2 */
#define OWN_L2 8

/* for (long u = 0; u < n; u++) { body }: on `threads` OpenMP threads (a variable of that name
 * in scope), which take units as they come free, or each the same share every call (own, see
 * above), or with one thread in this thread alone, with no OpenMP region at all: libgomp makes a
 * futex system call for every region, if (false) included (strace: one per call), ~0.3 us of a
 * one-thread call. */
#define FOR_UNITS(u, n, threads, own, ...)                                                         \
    do {                                                                                           \
        const long n_units_ = (n);                                                                 \
        if ((threads) > 1 && (own)) {                                                              \
            _Pragma("omp parallel for schedule(static) num_threads(threads)")                      \
            for (long u = 0; u < n_units_; u++) { __VA_ARGS__ }                                    \
        } else if ((threads) > 1) {                                                                \
            _Pragma("omp parallel for schedule(dynamic, 1) num_threads(threads)")                  \
            for (long u = 0; u < n_units_; u++) { __VA_ARGS__ }                                    \
        } else {                                                                                   \
            for (long u = 0; u < n_units_; u++) { __VA_ARGS__ }                                    \
        }                                                                                          \
    } while (0)

#endif
