# Sourced by the rounds' commands.sh (issue32ad on), from the repository root, with $py set.
#
# paired_python BEFORE AFTER SIZES [METHODS [LINES]]: the methods (default fused) over the floor
# through Python, each tree in a worktree of its own, one and two threads, twice, the trees
# alternating; its output: one "== tree" block each, the table's lines that match LINES (an
# extended regex, default every cpu line) and the harness's warnings.
paired_python() {
    local methods=${4:-fused} lines=${5:-^cpu }
    git worktree add -f /tmp/wt_before "$1"
    git worktree add -f /tmp/wt_after "$2"
    for i in 1 2; do for tree in /tmp/wt_before /tmp/wt_after; do for t in 1 2; do
        echo "== $tree threads $t run $i"
        (cd "$tree" && PYTHONPATH=$tree "$py" -m attnviz.bench --device cpu --threads $t \
            --methods "$methods" --sizes "$3" --rounds 11 2>&1 |
            grep -E "$lines|flag|beat|above" | cut -c1-100)
    done; done; done
    git worktree remove --force /tmp/wt_before
    git worktree remove --force /tmp/wt_after
}
