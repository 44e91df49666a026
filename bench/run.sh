#!/bin/sh
# make bench runs every bench/*.sh with the build directory.  This one is
# Petrel and Postfix side by side (bench/bench.py, doc/performance.md):
#
#   sh bench/run.sh BUILD_DIR [bench.py options]
#
# QUICK=1 in the environment (make bench QUICK=1) picks the quick size
# (one round, small counts, under 2 minutes); BENCH_ARGS adds options.
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=${1:?usage: bench/run.sh BUILD_DIR [options]}
shift
size=
case ${QUICK:-} in
"" | 0 | no) ;;
*) size=--quick ;;
esac
# shellcheck disable=SC2086
exec python3 -B "$here/bench.py" --build "$b" $size ${BENCH_ARGS:-} "$@"
