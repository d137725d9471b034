#!/usr/bin/env bash
# Issue 32, twentieth round (2026-12-06, the nineteenth round's AMD EPYC Zen 4 host): how the files
# here were made, from the repository root. before = 8f6ad8f (the floor picked once), after = the
# commit that times every way of the floor in every round.
set -euo pipefail
out=benchmarks/runs/issue32z

# default_{before,after}_t{1,2}.txt: the default run, as a reader would run it
.venv/bin/python -m attnviz.bench --device cpu > $out/default_after_t2.txt
.venv/bin/python -m attnviz.bench --device cpu --threads 1 > $out/default_after_t1.txt
# (the same two commands at 8f6ad8f gave default_before_t*.txt)

# floor_picks.txt: how often the old one-time choice picked each way, and each way's median
for s in "32x256x512 2" "32x256x512 1" "16x128x512 2" "48x512x1024 2"; do
    # shellcheck disable=SC2086  # shape and threads are two words
    .venv/bin/python $out/floor_picks.py $s 30
done > $out/floor_picks.txt

# stream_layout.txt: plain C, one thread, 32x256x512, medians of 300 blocks of 10 calls; the
# kernel's source included, so the file is built in a folder holding attnviz/csrc's files
flags=$(.venv/bin/python -c '
from attnviz import native_build as nb
print(" ".join(f for f in (*nb.FLAGS, *nb.NATIVE_FLAGS) if f != "-shared"))')
work=$(mktemp -d)
cp attnviz/csrc/* $out/stream_layout.c "$work"
(cd "$work" && patch -s -o wr_fma.c weighted_rows.c < "$OLDPWD/$out/fma_chain.diff" \
    && sed 's/#include "weighted_rows.c"/#include "wr_fma.c"/' stream_layout.c > fma.c)
# shellcheck disable=SC2086  # flags are words
cc $flags -o "$work/layout" "$work/stream_layout.c" -lm
# shellcheck disable=SC2086
cc $flags -o "$work/fma" "$work/fma.c" -lm
for i in 1 2 3; do
    "$work/layout" 32 256 512
    "$work/fma" 32 256 512 | sed 's/^/fma chain: /'
done > $out/stream_layout.txt

# prefetch_kinds.txt: best blocks, the kernel with its prefetch (prefetch_kinds.diff) as
# mb_LOC_DIST[b]: -DPF_LOC=LOC -DPREFETCH_BYTES=DIST [-DPF_BOTH], against itself without (plain)
cp attnviz/csrc/* $out/prefetch_kinds.c "$work"
(cd "$work" && patch -s weighted_rows.c < "$OLDPWD/$out/prefetch_kinds.diff")
for loc in 3 2 0; do for d in 1024 4096; do for both in "" "-DPF_BOTH"; do
    # shellcheck disable=SC2086
    cc $flags -DPF_LOC=$loc -DPREFETCH_BYTES=$d $both -o "$work/mb_${loc}_${d}${both:+b}" \
        "$work/prefetch_kinds.c" -lm
done; done; done
run() { # SHAPE_ARGS HOW: out 640 bytes into its page
    echo "== $1 how=$2"
    echo -n "plain      "; "$work/mb_3_1024" $1 "$2" 640
    for v in mb_3_1024 mb_3_1024b mb_2_1024 mb_2_1024b mb_2_4096b mb_0_1024 mb_0_1024b mb_0_4096b; do
        echo -n "$v "; "$work/$v" $1 $(($2 | 4)) 640
    done
}
{ run "2 256 2816 2816" 16; run "4 128 4096 4096" $((1024 << 8)); run "16 128 512 512" 0
  run "32 256 512 512" 0; } > $out/prefetch_kinds.txt
rm -rf "$work"
