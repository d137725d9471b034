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

# pairs_plain_c.txt: a949479 (short rows in tiles one sentence at a time) against ab5ee77 (two at
# a time), both orders, best blocks
git worktree add /tmp/wt26 a949479
S="4x16x32 8x32x64 8x64x128 16x128x128 16x128x128@2 64x16x64 32x64x112 5x32x48 16x128x512"
{
    echo "== A = a949479 (one sentence at a time), B = ab5ee77 (two at a time)"
    # shellcheck disable=SC2086  # shapes are words
    benchmarks/pair_kernels.sh /tmp/wt26/attnviz/csrc attnviz/csrc $S
    echo "== A = ab5ee77, B = a949479"
    # shellcheck disable=SC2086
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/wt26/attnviz/csrc $S
} > $out/pairs_plain_c.txt
# pairs_python.txt: through Python, the trees alternating, twice, one and two threads
S=4x16x32,8x32x64,8x64x128,16x128x128,64x16x64,32x64x112
for rep in 1 2; do for tree in /tmp/wt26 "$PWD"; do for th in 1 2; do
    echo "== $(cd $tree && git rev-parse --short HEAD) t$th rep$rep"
    (cd $tree && PYTHONPATH=$tree "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
        --threads $th --methods fused --rounds 11 --sizes $S | grep -E "^cpu")
done; done; done > $out/pairs_python.txt
# medians_pairs.txt: medians.c against each tree (and ab5ee77 with quads.diff: four sentences at
# a time where H <= 64, with QUAD=1 in the environment), each shape's plan, twice
for tree in /tmp/wt26 "$PWD" quads; do
    work=$(mktemp -d)
    if [ "$tree" = quads ]; then
        git show ab5ee77:attnviz/csrc/weighted_rows.c > "$work/weighted_rows.c"
        cp attnviz/csrc/*.h attnviz/csrc/read_floats.c "$work"
        (cd "$work" && patch -s weighted_rows.c < "$OLDPWD/$out/quads.diff")
    else
        cp "$tree"/attnviz/csrc/* "$work"
    fi
    cp $out/medians.c "$work"
    # shellcheck disable=SC2086
    cc $flags -o "$work/medians" "$work/medians.c" -lm
    for i in 1 2; do
        for s in "8 32 64 8 1 1 1" "1 256 64 1 1 1 1" "4 16 32 4 1 1 1" "8 64 128 8 1 1 1" \
            "64 16 64 64 1 1 1" "16 128 128 16 1 1 1"; do
            # shellcheck disable=SC2086
            echo "$tree: $(QUAD=$([ "$tree" = quads ] && echo 1) "$work/medians" $s)"
        done
    done
    rm -rf "$work"
done > $out/medians_pairs.txt

# default_end_t{1,2}.txt: the default run at df846be
.venv/bin/python -m attnviz.bench --device cpu > $out/default_end_t2.txt
.venv/bin/python -m attnviz.bench --device cpu --threads 1 > $out/default_end_t1.txt

# llc_tiles_plain_c.txt and llc_tiles_python.txt: short rows in the L3 as tiles (the change after
# ad0c169) against stripes (ad0c169, in a worktree at /tmp/wt27): plain C with each tree's plan
# (B_PLAN, run from the old tree), and through Python, the trees alternating, twice
