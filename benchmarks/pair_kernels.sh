#!/usr/bin/env bash
# Two versions of the fused kernel against the read limit, paired in one process (plain C):
#
#   benchmarks/pair_kernels.sh A_DIR B_DIR SHAPE[@THREADS] ...
#   benchmarks/pair_kernels.sh attnviz/csrc /tmp/changed 7x61x61 3x61x777@2
#
# A_DIR and B_DIR each hold a weighted_rows.c and the headers it includes (attnviz/csrc, or a
# changed copy of it). Each is built with attnviz/native_build.py's flags, its entry points renamed
# (the same files twice, a check of the noise, are built once);
# the read limit (read_floats.c) comes from A_DIR. Each shape (BxTxH, THREADS threads, 1 if not
# given) runs as the library would call it from L2 or the last-level cache: its plan (group,
# split, mode) from attnviz.native, the stripes not asking for lines ahead (the library times
# that way only on a shape's first call from beyond L2). benchmarks/pair_kernels.c says what is
# printed. Run it from the repository root with its venv (PYTHON=... to use another).
# AROUND=0x31 fills the bytes beside x with those bits (a subnormal float; 0 if not given).
# B_PLAN="GROUP SPLIT THREADS MODE" calls B with that plan instead of the library's (two plans
# of one tree: name the same tree twice).
# OUT_AT=BYTES puts the output that many bytes into a 4 KiB page (a multiple of 64), not where
# malloc puts it: where it lies against x's rows decides whether the running sums meet 4K aliasing.
# TIME_WRONG=1 times a tree that sums wrongly too, after saying so (a bound: a change that
# skips part of the work on purpose).
# PAIR_CACHE=DIR keeps each build there, named by what it is built from (the files, the flags,
# the compiler), and uses it again: pairing the same tree with several changed ones compiles it once.
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
a_dir=$1 b_dir=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
cc=${CC:-cc}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

flags=$(cd "$root" && "$python" -c '
from attnviz import native_build as nb
print(" ".join(f for f in (*nb.FLAGS, *nb.NATIVE_FLAGS) if f != "-shared"))')
names="weighted_rows_f32:wr weighted_rows_tile:tile weighted_rows_lanes:lanes
    weighted_rows_realigns:realigns weighted_rows_abi:abi" # the entry points, and their prefixes
tree() { cat "$1/weighted_rows.c" "$1"/*.h | sha256sum; } # what a tree's kernel is built from
compiler=$($cc --version | head -n 1)
# compile SOURCE OBJECT ARGS...: $cc $flags ARGS -c SOURCE -o OBJECT, or its copy in PAIR_CACHE
# (named by the source and the headers beside it, the flags, ARGS and the compiler)
compile() {
    local source=$1 object=$2 key
    shift 2
    if [ -n "${PAIR_CACHE:-}" ]; then
        key=$({ cat "$source" "$(dirname "$source")"/*.h; echo "$flags $* $compiler"; } | sha256sum)
        key=$PAIR_CACHE/${key%% *}.o
        if [ -f "$key" ]; then
            cp "$key" "$object"
            return
        fi
    fi
    # shellcheck disable=SC2086  # flags are words
    $cc $flags "$@" -c "$source" -o "$object"
    if [ -n "${PAIR_CACHE:-}" ]; then
        mkdir -p "$PAIR_CACHE"
        # whole, or not there; the first copy kept (ln fails on an existing name), so a build
        # that another run already keeps is never replaced under it
        cp "$object" "$key.$$" && { ln "$key.$$" "$key" 2>/dev/null || true; } && rm -f "$key.$$"
    fi
}
for side in a b; do
    dir=$a_dir
    [ $side = b ] && dir=$b_dir
    if [ $side = b ] && [ "$(tree "$a_dir")" = "$(tree "$b_dir")" ] && command -v objcopy >/dev/null; then
        # the same tree twice (a check of the noise): A's object, its entry points renamed
        renames=()
        for pair in $names; do renames+=(--redefine-sym "${pair#*:}_a=${pair#*:}_b"); done
        objcopy "${renames[@]}" "$out/a.o" "$out/b.o"
        continue
    fi
    defines=()
    for pair in $names; do defines+=("-D${pair%%:*}=${pair#*:}_$side"); done
    compile "$dir/weighted_rows.c" "$out/$side.o" "${defines[@]}"
done
compile "$a_dir/read_floats.c" "$out/read.o"
$cc -O2 -std=c11 "$root/benchmarks/pair_kernels.c" "$out/a.o" "$out/b.o" "$out/read.o" \
    -fopenmp -lm -o "$out/pair"

for arg in "$@"; do
    shape=${arg%@*} threads=1
    [ "$arg" != "$shape" ] && threads=${arg#*@}
    # shellcheck disable=SC2046  # the seven numbers of the kernel's shape argument
    "$out/pair" $(cd "$root" && "$python" - "$shape" "$threads" <<'EOF'
import sys

from attnviz import native

b, t, h = (int(v) for v in sys.argv[1].split("x"))
call, _ = native.call_plan(b, t, h, int(sys.argv[2]))  # a fresh process: not asking ahead
print(*call)
EOF
) "${AROUND:-0}"
done
