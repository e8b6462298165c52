#!/usr/bin/env bash
# sanitize.sh — build the C core with AddressSanitizer + UBSan and run the kernel tests on it
# (which run every kernel at every ISA level the CPU supports, the reference bodies included).
#
# The sanitized extension is built in a temporary copy of the repository, so the normal
# build in minitorch/_C*.so (which other work may be using) is left untouched. Python itself is
# not instrumented, so the ASan runtime is preloaded; leak detection is off (CPython's arenas are
# noise), and a failed allocation returns NULL (numpy then raises MemoryError, which the
# bad-input table expects for huge sizes). Any UBSan report halts the run: the build has
# -fno-sanitize-recover=undefined and UBSAN_OPTIONS halt_on_error=1, and a canary (a negative
# left shift built with the same flags) checks that it really does before the tests run. Exits
# non-zero on any test failure or any sanitizer report.
#
# The tests are the fuzzing campaign's (tests/test_kernels*.py): with MINITORCH_FUZZ=long in
# the environment they run the long hypothesis profile here too (see CONTRIBUTING.md).
#
# Usage: scripts/sanitize.sh [extra pytest args]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python}"
WORK="$(mktemp -d -t minitorch-sanitize-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

# Copy sources only (no build products).
tar -C "$REPO" --exclude='*.so' --exclude='build' --exclude='.git' --exclude='__pycache__' \
    --exclude='.hypothesis' --exclude='.pytest_cache' -cf - csrc minitorch tests setup.py pyproject.toml \
    | tar -C "$WORK" -xf -

cd "$WORK"
echo "== building with MINITORCH_SANITIZE=1 in $WORK"
MINITORCH_SANITIZE=1 MINITORCH_REQUIRE_C=1 "$PYTHON" setup.py -q build_ext --inplace --force \
    > build.log 2>&1 || { cat build.log; echo "sanitize.sh: build failed"; exit 1; }

ASAN_LIB="$(${CC:-gcc} -print-file-name=libasan.so)"
UBSAN_LIB="$(${CC:-gcc} -print-file-name=libubsan.so)"
if [ ! -e "$ASAN_LIB" ]; then
    echo "sanitize.sh: libasan.so not found (gcc -print-file-name=libasan.so gave '$ASAN_LIB')"
    exit 1
fi

export LD_PRELOAD="$ASAN_LIB:$UBSAN_LIB"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:allocator_may_return_null=1:log_path=$WORK/sanitizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$WORK/sanitizer"

echo "== canary: a UBSan report must halt the process"
printf 'int mt_canary(int x) { return x << 1; }\n' > canary.c
${CC:-gcc} -shared -fPIC -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    canary.c -o canary.so
# (UBSan writes to stderr, not to log_path: test.log below is searched for its reports too)
if UBSAN_OPTIONS="halt_on_error=1" "$PYTHON" -c \
        "import ctypes, sys; ctypes.CDLL('$WORK/canary.so').mt_canary(-1); sys.exit(0)" \
        > canary.log 2>&1; then
    cat canary.log
    echo "sanitize.sh: the canary's UBSan report did not halt the process"
    exit 1
fi
if ! grep -q "runtime error: left shift of negative value" canary.log; then
    cat canary.log
    echo "sanitize.sh: the canary stopped without a UBSan report"
    exit 1
fi

echo "== running tests/test_kernels*.py under ASan + UBSan"
set +e
PYTHONPATH="$WORK" MINITORCH_REQUIRE_C=1 \
    "$PYTHON" -m pytest -q -s -rs -p no:cacheprovider tests/test_kernels*.py "$@" 2>&1 | tee test.log
status=${PIPESTATUS[0]}
set -e

# ASan reports go to log files (sanitizer.<pid>), beside its warnings for the bad-input table's
# huge allocations, which are no errors; UBSan's go to stderr, uncaptured (pytest -s).
if grep -qsE "ERROR: AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer" \
        "$WORK"/sanitizer.* test.log; then
    cat "$WORK"/sanitizer.* 2>/dev/null || true
    echo "sanitize.sh: sanitizer report found"
    exit 1
fi
if grep -q "C extension not built" test.log; then
    echo "sanitize.sh: the C tests were skipped (extension did not import)"
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "sanitize.sh: tests failed (exit $status)"
    exit "$status"
fi
echo "sanitize.sh: clean"
