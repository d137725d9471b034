#!/bin/bash
# Eleventh round (issue 32, L2), the same Intel Xeon (Emerald Rapids, AVX-512, 2 MiB of L2 per core,
# 300 MiB of L3): five runs per thread count of the tree whose builtin takes a dropped output
# again as the next one of its size (after = 36eaaea), three of the tree before (before = bd5f189,
# unpacked in /tmp/before), in alternating processes. The sizes of the tenth round: L2 (rows on and
# off the lines, short rows, B = 1), then the L3 and DRAM, to show they held.
cd /work/main
D=benchmarks/runs/issue32q
SIZES=2x64x1024,4x64x1024,1x256x1024,16x128x128,8x128x128,64x32x128,4x64x384,1x250x777,3x61x777,8x256x1024,1x4096x777,16x16384x1024,1x131072x777
lscpu > $D/lscpu.txt
: > $D/load.txt
for tree in /work/main /tmp/before; do  # the kernel and operator built before any timing
  (cd $tree && /work/main/.venv/bin/python -c "from attnviz import native_op; native_op.build(600)")
done
for r in 1 2 3 4 5; do
  for v in after before; do
    [ $v = before ] && [ $r -gt 3 ] && continue
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
