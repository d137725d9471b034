#!/bin/bash
# Twelfth round (issue 32, L2, short rows off the 64-byte lines), the same Intel Xeon (Emerald
# Rapids, AVX-512, 2 MiB of L2 per core, 300 MiB of L3): five runs per thread count of the tree
# whose kernel keeps the running sums of short rows (18-241 numbers) in registers and stores rows off
# the lines whole into the output (after), five of
# the tree before (before = c327eef, unpacked in /tmp/before), in alternating processes. Short rows
# (the register sums, odd H included), then long rows of an odd H (the stores only).
cd /work/main
D=benchmarks/runs/issue32r
SIZES=7x61x61,16x64x45,8x64x72,8x64x100,4x64x150,4x64x200,16x64x200,7x61x62,2x128x226,8x64x61,3x61x777,1x250x777
lscpu > $D/lscpu.txt
: > $D/load.txt
for tree in /work/main /tmp/before; do  # the kernel and operator built before any timing
  (cd $tree && /work/main/.venv/bin/python -c "from attnviz import native_op; native_op.build(600)")
done
for r in 1 2 3 4 5; do
  for v in after before; do
    tree=/work/main; [ $v = before ] && tree=/tmp/before
    for t in 1 2; do
      echo "$(date -u +%H:%M:%S) $v t$t run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
      (cd $tree && chrt -f 10 /work/main/.venv/bin/python -m attnviz.bench --device cpu --threads $t \
        --methods bmm,fused --rounds 11 --json --sizes $SIZES) > $D/${v}_t${t}_run$r.jsonl 2> $D/${v}_t${t}_run$r.err
    done
  done
done
echo "$(date -u +%H:%M:%S) done" >> $D/load.txt
.venv/bin/python benchmarks/summarize.py $D/after_t*_run*.jsonl > $D/summary_after.md
.venv/bin/python benchmarks/summarize.py $D/before_t*_run*.jsonl > $D/summary_before.md
