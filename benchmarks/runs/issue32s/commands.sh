#!/usr/bin/env bash
# Thirteenth round (issue 32): a small x beside subnormal numbers, before (8583ce3, checked out
# at /tmp/wt_old: git worktree add /tmp/wt_old 8583ce3) and after. Run from the repository root.
set -euo pipefail
out=benchmarks/runs/issue32s
for r in 1 2 3; do  # fused's bare op at 2x3x5 through Python, the trees alternating
    (cd /tmp/wt_old && ATTNVIZ_CACHE_DIR=/tmp/cache_old .venv/bin/python -m attnviz.bench --overhead --threads 1) \
        > "$out/overhead_before_$r.txt"
    ATTNVIZ_CACHE_DIR=/tmp/cache_new .venv/bin/python -m attnviz.bench --overhead --threads 1 \
        > "$out/overhead_after_$r.txt"
done
for a in 0x31 0; do  # plain C, paired in one process: subnormal numbers beside x, or zeros
    AROUND=$a benchmarks/pair_kernels.sh /tmp/wt_old/attnviz/csrc attnviz/csrc \
        2x3x5 1x3x1 4x3x5 2x3x17 4x30x17 7x61x61 > "$out/pair_around_$a.txt"
done
