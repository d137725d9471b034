#!/usr/bin/env bash
# Issue 32, nineteenth round (2026-12-06, the same AMD EPYC Zen 4 host as the eighteenth: lscpu.txt):
# how the files here were made, from the repository root. before = 00ba9a8, alias = 1ad9ed2 (the
# running sums kept off the rows' place on a page), after = 402ddcb (the plan's block for long rows).
# OUT_AT was OUT_SHIFT in the copy of pair_kernels.c these runs used (the same code, renamed when
# it came into the repository); BLK=N was a copy of the kernel that took its block from the
# environment (sum_rows: `block = getenv("BLK") ? atol(...) : BLOCK_H`), at 00ba9a8 for
# blocks_before_alias_fix.txt and at 1ad9ed2 for blocks.txt and blocks_confirm.txt.
set -euo pipefail
out=benchmarks/runs/issue32y
mkdir -p /tmp/before && git archive 00ba9a8 attnviz/csrc | tar -x -C /tmp/before

# shift_scan_before.txt: the kernel of 00ba9a8 paired with itself, out moved across its page
for at in $(seq 0 256 3840); do
    OUT_AT=$at benchmarks/pair_kernels.sh /tmp/before/attnviz/csrc /tmp/before/attnviz/csrc 4x128x4096
done

# alias_scan.txt: before (A) against alias (B), out at six places on its page
git worktree add /tmp/alias 1ad9ed2
for at in 0 128 256 384 640 2048; do
    OUT_AT=$at benchmarks/pair_kernels.sh /tmp/before/attnviz/csrc /tmp/alias/attnviz/csrc \
        8x128x2048 16x128x512 4x128x4096 2x192x3584 4x128x4096@2 32x256x512
done > $out/alias_scan.txt

# blocks_before_alias_fix.txt, blocks.txt: the block of columns and the stripes (B_PLAN mode 0:
# four, 16: two) for long rows in the cache, out where malloc puts it; BLK copy as above
S="3x256x2560 2x256x2816 2x256x3072 2x192x3584 4x128x4096 3x128x5120 2x128x6144 2x256x3000 2x256x4097"
for blk in 512 640 768 896 1024 1152 1280 1536 2048 2560; do
    for m in 0 16; do
        BLK=$blk B_PLAN="1 1 1 $m" benchmarks/pair_kernels.sh attnviz/csrc /tmp/blk $S
    done
done
# (blocks.txt: S="2x256x2304 3x256x2560 2x256x2816 2x256x3072 2x192x3584 4x128x4096 3x128x5120
#  2x128x6144", (BLK, mode) in (512 0) (768 0) (1024 0) (1024 16) (2048 0) (3072 16) (6144 16);
#  blocks_confirm.txt: the chosen ways twice, two threads, 12-16 MiB)

# pairs_final.txt: alias (1ad9ed2, its plan) against after (402ddcb, its plan), both orders: each
# tree's plan for each shape through B_PLAN, the script run from the other tree
S="2x256x2304 3x256x2560 2x256x2500 2x256x2700 2x256x3072 4x128x4096 3x128x5120 2x192x3584
   1x128x8192 2x256x3072@2 4x128x4096@2 2x192x3584@2 6x128x4096 8x128x4096 4x128x7168 3x384x3584
   1x64x4097@2 8x128x2048 16x128x512 2x256x2816 9x2047x2049"
pair() { # A_ROOT B_ROOT SHAPE: A with its own plan, B with B's
    local arg=$3 shape=${3%@*} th=1 plan
    [ "$arg" != "$shape" ] && th=${arg#*@}
    plan=$(cd "$2" && PYTHONPATH="$2" python -c "
from attnviz import native
b, t, h = (int(v) for v in '$shape'.split('x'))
c, _ = native.call_plan(b, t, h, $th); print(c[3], c[4], c[5], c[6])")
    (cd "$1" && B_PLAN="$plan" benchmarks/pair_kernels.sh "$1/attnviz/csrc" "$2/attnviz/csrc" "$arg")
}
{
    echo "== A = after, B = before (alias)"
    for s in $S; do pair "$PWD" /tmp/alias "$s"; done
    echo "== A = before (alias), B = after"
    for s in $S; do pair /tmp/alias "$PWD" "$s"; done
} > $out/pairs_final.txt

# bench_ab.txt: through Python, the trees alternating (00ba9a8, then 402ddcb), twice
git worktree add /tmp/wt25 00ba9a8
S=2x256x2304,3x256x2560,2x256x3072,4x128x4096,2x192x3584,6x128x4096,8x128x2048,16x128x512
for r in 1 2; do
    for tree in /tmp/wt25 "$PWD"; do
        for t in 1 2; do
            echo "== run $r tree $tree threads $t"
            (cd "$tree" && PYTHONPATH="$tree" python -m attnviz.bench --device cpu --threads $t \
                --methods fused --rounds 11 --sizes $S | grep -E '^cpu +[0-9x]+ +float32 +fused')
        done
    done
done > $out/bench_ab.txt

# ahead_choice.txt: what a shape's first call chose (asks_ahead) and, after it, 40 calls of each
# way alternating (plain/ahead: time without asking ahead over time asking; under 1: plain faster),
# one thread, three processes, before and after the first call's two untimed calls (git stash
# the change of native.py for "before")
for i in 1 2 3; do
    python benchmarks/runs/issue32y/ahead_choice.py 4x128x4096 8x128x2048 2x256x2304 16x128x512 \
        2x192x3584 32x256x512
done

# survey_after_t1.txt, survey_after_t2.txt, long_after_t1.txt: at the end (db3d05a)
for t in 1 2; do
    python -m attnviz.bench --device cpu --threads $t --methods fused --rounds 11 > $out/survey_after_t$t.txt
done
python -m attnviz.bench --device cpu --threads 1 --methods fused --rounds 11 \
    --sizes 2x256x2304,3x256x2560,2x256x3072,4x128x4096,2x192x3584,6x128x4096 > $out/long_after_t1.txt
