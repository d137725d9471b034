#!/usr/bin/env bash
# Issue 32, twenty-fourth round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Trees: 13938b2 (before), 05ed5e8 (the sums of each sentence's own
# stripes from DRAM written past the caches: sum_rows_of's stream).
set -euo pipefail
out=benchmarks/runs/issue32ad
py=$PWD/.venv/bin/python

# paired_python (../paired_python.sh): fused over the floor, its lines only, as these files hold
source benchmarks/runs/paired_python.sh
fused_python() { paired_python "$1" "$2" "$3" fused "^cpu .*fused"; }

# stream_python.txt: before and after the sums of long rows written past the caches (the files here
# name the after tree /work/main: they were run from the checkout at that commit)
fused_python 13938b2 05ed5e8 2048x16x1024,1024x32x1024,4096x8x1024,512x16x4096,256x128x1024 \
    > $out/stream_python.txt

# plain_c.txt: ../issue32aa/medians_ab.c with 4 KiB-aligned outputs, made as ../issue32ac/commands.sh
# makes it (A: 13938b2's weighted_rows.c, B: 05ed5e8's, entry points renamed), mode 32 (WHOLE_ROWS,
# from DRAM) for both, 15 rounds, units of 4 MiB; one thread with the plan's group (B), two with
# its group of 4 MiB at most:
#   for s in "2048 16 1024" "1024 32 1024" "4096 8 1024" "512 16 4096" "2048 16 768" \
#            "256 128 1024" "1024 16 2056"; do "$work/ab" $s ${s%% *} 1 1 32 32 15 4194304; done
#   "$work/ab" 2048 16 1024 256 1 2 32 32 15 4194304   (1024x32x1024 128, 4096x8x1024 512,
#                                                        512x16x4096 64)
# long_stripes_tried.txt: the same harness, B built from a copy of the tree with -DLONG_STRIPED_H=4096
# (long_sentences.h's define made #ifndef in the copy), mode 96; then with a non-temporal prefetch
# of each stripe's line N bytes ahead in long_run (N = 256, 1024), 11 rounds

# nta_grid_t1.txt, nta_grid_t2.txt, nta_up_to_512.txt: the same harness; B from a copy of the tree
# at 05ed5e8 with -DLONG_STRIPED_H=4096 and, in long_run, each stripe's line asked for 256 bytes
# ahead as non-temporal (as 81d1dc4 keeps it for rows of 513-768); one thread
#   for h in 576 640 768 1024; do for t in 4 8 16 32; do b=$((33554432 / (t * h)))
#       "$work/ab" $b $t $h $b 1 1 32 96 11 4194304; done; done
# two threads with the plan's group (4 MiB at most, B / 8 at most); nta_up_to_512.txt: A the tree
# as it is, mode 96 both, 4096x16x512 5461x16x384 6553x16x320 8192x8x512 2048x32x512 7710x16x300

# nta_python.txt: ed636ed (before) against 81d1dc4, which reads rows of 513-768 as stripes of
# sentences asking ahead (LONG_STRIPED_H 768, LONG_NTA_H)
fused_python ed636ed 81d1dc4 \
    6553x8x640,3276x16x640,2730x16x768,5461x8x768,1820x32x576,1365x32x768,13107x4x640,4096x16x512 \
    > $out/nta_python.txt

# default_end_t1.txt, default_end_t2.txt: the default run at the end (at a369c62, the README commit
# after 0c5d6ad; no default size's plan changed this round)
for t in 1 2; do "$py" -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt 2>&1; done
# l3_grid.txt: the harness with A and B both 81d1dc4, one thread, the plan's mode 0 against 64 and 96:
#   for s in "256 32 512" "512 32 384" "384 32 512" "768 16 512" "1024 16 512" "1365 16 384" \
#            "512 16 768" "1024 8 768"; do "$work/ab" $s ${s%% *} 1 1 0 64 11 4194304
#                                           "$work/ab" $s ${s%% *} 1 1 0 96 11 4194304; done

# wide_grid_t1.txt: the harness, A 29ec74b mode 32, B as nta_grid_t1.txt's, one thread:
#   for h in 800 896 1000 1024; do for t in 4 8 16; do b=$((33554432 / (t * h)))
#       "$work/ab" $b $t $h $b 1 1 32 96 11 4194304; done; done
# wide_check.txt: A 29ec74b, B f78497c (rows of 769-1024 in sentences of at most 16 rows striped),
# modes 32 and 96, one thread and two, 15 rounds: 2097x16x1000 4194x8x1000 2097x16x1008 2621x16x800
# wide_python.txt: 29ec74b (before) against f78497c
wide=10485x4x800,5242x8x800,2621x16x800,4681x8x896,4194x8x1000,2097x16x1000
fused_python 29ec74b f78497c "$wide,8192x4x1024,4096x8x1024,2048x16x1024" > $out/wide_python.txt
