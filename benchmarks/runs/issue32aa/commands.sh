#!/usr/bin/env bash
# Issue 32, twenty-first round (2026-12-07, the twentieth round's AMD EPYC Zen 4 host): how the
# files here were made, from the repository root. before = 01df634 (each sentence's own four
# stripes beyond L2, or tiles two sentences at a time in the cache), after = the commit that reads
# short sentences beyond L2 as four (or two) stripes of whole sentences (SENTENCE_STRIPES).
set -euo pipefail
out=benchmarks/runs/issue32aa
before=01df634

# python_before_after.txt: through Python, as a reader would run it, the two trees one after the
# other, twice
git worktree add -f /tmp/wt_before $before
S=512x64x32,256x128x64,1024x64x64,1024x64x100,256x64x256,2048x64x128,4096x128x64,8192x32x64
S=$S,16384x32x61,2048x32x192,1024x64x200
for i in 1 2; do for tree in /tmp/wt_before "$PWD"; do for t in 1 2; do
    echo "== $tree threads $t run $i"
    (cd "$tree" && PYTHONPATH=$tree "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
        --threads $t --methods fused --sizes $S --rounds 11 2>&1 | grep -E "^cpu .*fused")
done; done; done > $out/python_before_after.txt

# plain_c.txt: plain C, medians_ab.c, the tree before (A) and after (B) each with its own plan
flags=$(.venv/bin/python -c '
from attnviz import native_build as nb
print(" ".join(f for f in (*nb.FLAGS, *nb.NATIVE_FLAGS) if f != "-shared"))')
work=$(mktemp -d)
rename() { # the entry points of build $1
    for f in f32 tile lanes realigns abi; do
        n=weighted_rows_$f
        [ $f = f32 ] && echo -n "-D$n=wr_$1 " || echo -n "-D$n=${f}_$1 "
    done
}
# shellcheck disable=SC2046,SC2086  # flags and names are words
cc $flags $(rename a) -fPIC -c /tmp/wt_before/attnviz/csrc/weighted_rows.c -o "$work/a.o"
# shellcheck disable=SC2046,SC2086
cc $flags $(rename b) -fPIC -c attnviz/csrc/weighted_rows.c -o "$work/b.o"
# shellcheck disable=SC2086
cc $flags -c attnviz/csrc/read_floats.c -o "$work/rf.o"
# shellcheck disable=SC2086
cc $flags -o "$work/ab" $out/medians_ab.c "$work/a.o" "$work/b.o" "$work/rf.o" -lm
{
    # from DRAM: before, each sentence's four stripes (mode 32, WHOLE_ROWS); after, stripes of
    # sentences (96 = 32 | SENTENCE_STRIPES)
    for s in "2048 64 128 2048 1 1" "2048 64 128 256 1 2" "4096 128 64 4096 1 1" \
        "4096 128 64 512 1 2" "8192 32 64 8192 1 1" "8192 32 64 1024 1 2" \
        "16384 32 61 16384 1 1" "16384 32 61 2048 1 2" "32768 32 24 32768 1 1" \
        "2048 64 100 2048 1 1" "2048 64 100 256 1 2" "2048 32 192 2048 1 1" \
        "2048 32 192 256 1 2" "1024 64 200 1024 1 1" "1024 64 200 128 1 2"; do
        # shellcheck disable=SC2086  # a shape is words
        "$work/ab" $s 32 96 20
    done
    # in the L3: before, tiles two sentences at a time (mode 1), or each sentence's stripes off
    # the lines (0); after, stripes of sentences (64)
    for s in "512 64 32 512 1 1" "512 64 32 256 1 2" "256 128 64 256 1 1" "256 128 64 128 1 2" \
        "1024 64 64 1024 1 1" "1024 64 64 512 1 2" "128 256 128 128 1 1" "64 512 128 32 1 2"; do
        # shellcheck disable=SC2086
        "$work/ab" $s 1 64 30
    done
    for s in "1024 64 100 1024 1 1" "512 64 61 512 1 1" "512 64 61 256 1 2" "2048 16 61 2048 1 1" \
        "256 64 256 256 1 1" "256 64 256 128 1 2" "256 64 200 256 1 1"; do
        # shellcheck disable=SC2086
        "$work/ab" $s 0 64 30
    done
} > $out/plain_c.txt
rm -rf "$work"
git worktree remove --force /tmp/wt_before

# default_end_t{1,2}.txt: the default run at the end (its sizes' plans are unchanged: none has
# short sentences beyond L2)
.venv/bin/python -m attnviz.bench --device cpu > $out/default_end_t2.txt 2>&1
.venv/bin/python -m attnviz.bench --device cpu --threads 1 > $out/default_end_t1.txt 2>&1
