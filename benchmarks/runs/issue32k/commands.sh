#!/bin/bash
cd /work/main
D=benchmarks/runs/issue32k
SIZES=2x64x1024,4x64x1024,1x256x1024,1x250x777,3x61x777,8x64x128,16x128x128,16x128x512,32x256x512,2x1024x1024,3x1001x777,16x256x1024,1x4096x777,48x512x1024,7x3001x999,1x65536x1024,6x1024x1024
: > $D/load.txt
for r in 1 2 3 4 5; do
  for t in 2 1; do
    echo "$(date -u +%H:%M:%S) t$t run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
    chrt -f 10 .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods bmm,fused --rounds 11 --json --sizes $SIZES > $D/t${t}_run$r.jsonl 2> $D/t${t}_run$r.err
  done
done
echo "$(date -u +%H:%M:%S) done" >> $D/load.txt
