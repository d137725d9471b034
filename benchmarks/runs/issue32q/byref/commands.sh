#!/bin/bash
# The kept output used by reference (ref = fef61bb's tree) against a copy (copy = 6c2abcb, unpacked in
# /tmp/head): three runs of each, alternating, L2 sizes, one and two threads.
cd /work/main
D=benchmarks/runs/issue32q/byref
S=2x64x1024,1x256x1024,16x128x128,8x128x128,64x32x128,4x64x384,1x250x777
for r in 1 2 3; do
  for v in ref copy; do
    tree=/work/main; [ $v = copy ] && tree=/tmp/head
    for t in 1 2; do
      (cd $tree && chrt -f 10 /work/main/.venv/bin/python -m attnviz.bench --device cpu --threads $t \
        --methods bmm,fused --rounds 11 --json --sizes $S) > $D/${v}_t${t}_run$r.jsonl 2>/dev/null
    done
  done
done
.venv/bin/python benchmarks/summarize.py $D/ref_t*_run*.jsonl > $D/summary_ref.md
.venv/bin/python benchmarks/summarize.py $D/copy_t*_run*.jsonl > $D/summary_copy.md
