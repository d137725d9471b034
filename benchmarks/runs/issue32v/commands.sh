#!/usr/bin/env bash
# Issue 32, sixteenth round (2026-12-06): how pairs.txt, own_l2.txt and bench_before_after.txt
# were made, from the repository root. before = fc57c9e (git worktree at /tmp/wt_head; its csrc
# copied to /tmp/csrc_head/attnviz/csrc), after = this tree.
set -euo pipefail
git worktree add /tmp/wt_head fc57c9e
mkdir -p /tmp/csrc_head && git archive fc57c9e attnviz/csrc | tar -x -C /tmp/csrc_head

# pairs.txt (run at 94bf15e, before OWN_L2): mode 3 (pieces in tiles) against the stripes, both
# orders, units as they come free in both trees and in the read limit
S="1x1024x128@2 1x2048x128@2 1x8192x64@2 1x4096x112@2 1x1024x256@2 1x2048x256@2 3x512x128@2
   1x1024x384@2 1x1000x384@2 1x1536x320@2 3x512x320@2 2x1024x64@2"
for r in 1 2; do
    benchmarks/pair_kernels.sh /tmp/csrc_head/attnviz/csrc attnviz/csrc $S
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_head/attnviz/csrc $S
done

# own_l2.txt: OWN_L2 as planned against the same tree with it ignored (/tmp/noown: threads.h's
# static branch and read_floats' turned off); the read limit is A's, so threaded as A is
cp -r attnviz/csrc /tmp/noown
sed -i 's/if ((threads) > 1 \&\& (own)) {/if ((threads) > 1 \&\& (own) \&\& 0) {/' /tmp/noown/threads.h
sed -i 's/    if (own) {/    if (own \&\& 0) {/' /tmp/noown/read_floats.c
S="3x512x128@2 5x256x128@2 1x2048x128@2 1x8192x64@2 1x1024x384@2 3x512x320@2 1x256x1024@2
   4x64x1024@2 2x1024x64@2 1x4096x61@2 3x512x100@2 1x512x1000@2"
for r in 1 2; do
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/noown $S
    benchmarks/pair_kernels.sh /tmp/noown attnviz/csrc $S
done

# bench_before_after.txt: through Python, the benchmark of each tree, alternating, three times
# (fused's median 'x floor' / 'best'); each tree's floor is its own read limit
for r in 1 2 3; do
    for tree in /tmp/wt_head "$PWD"; do
        (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
            --threads 2 --methods fused --json \
            --sizes 1x2048x128,1x1024x256,1x4096x112,1x1024x384,3x512x128,1x256x1024,16x128x128,1x8192x64)
    done
done

# bench_scratch.txt: the operator's partial sums in the calling thread's own room (head = 25c5365,
# /tmp/wt_head checked out there) against this tree, the same way as bench_before_after.txt
for r in 1 2 3; do
    for tree in /tmp/wt_head "$PWD"; do
        (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
            --threads 2 --methods fused --json \
            --sizes 1x2048x128,2x1024x128,1x1024x256,1x4096x64,1x1024x384)
    done
done
