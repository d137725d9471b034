#!/bin/bash
# Ninth round (issue 32), an Intel Xeon (Emerald Rapids, AVX-512, 2 MiB of L2 per core, 300 MiB of
# L3): five runs per thread count of the tree with the stripes asking ahead where timed faster and
# the floor's equal units in the L3 (after = 8ca66e7), three of the tree before (before = 0d4ca7c,
# checked out in /tmp/before), in alternating processes. L2: 0.5-1 MiB; L3: 8-96 MiB; DRAM:
# 388 MiB-1 GiB (past the 300 MiB L3); B = 1 at each; H = 777 and 999 off the 64-byte lines.
cd /work/main
D=benchmarks/runs/issue32o
SIZES=2x64x1024,4x64x1024,1x256x1024,16x128x128,1x250x777,3x61x777,8x256x1024,2x4096x1024,48x512x1024,1x4096x777,7x3001x999,16x16384x1024,1x262144x1024,1x131072x777
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
