"""cffi FFI builder for the C core ``minitorch._C`` (out-of-line API mode).

``setup.py`` runs this through ``cffi_modules=["csrc/build.py:ffibuilder"]`` (cwd = repo root),
so every path is taken relative to this file. The prototypes given to ``cdef`` are the part of
``minitorch.h`` between the ``BEGIN CDEF`` / ``END CDEF`` markers: the C API is written once.
The sources are every ``*.c`` in ``csrc/`` and ``csrc/tuned/``: a new kernel file needs no entry
here.

Build flags (environment variables):
  MINITORCH_OPENMP=0     do not use OpenMP (default: use it if a test program compiles with it)
  MINITORCH_NATIVE=1     add -march=native (default: baseline x86-64; the tuned kernels are
                         compiled for each ISA level and chosen at run time anyway)
  MINITORCH_SANITIZE=1   AddressSanitizer + UBSan build (-O1 -g), see scripts/sanitize.sh
Importing this module never needs a compiler: a failed probe only means "no OpenMP".
"""
import glob
import os
import shutil
import subprocess
import sysconfig
import tempfile

from cffi import FFI

CSRC = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(CSRC, "minitorch.h")


def sources():
    """Every C file of the kernels, sorted (a stable build order)."""
    return sorted(glob.glob(os.path.join(CSRC, "*.c")) + glob.glob(os.path.join(CSRC, "tuned", "*.c")))


def cdef_text(header_path=HEADER):
    """The plain prototypes between the CDEF markers of the header."""
    with open(header_path, encoding="utf-8") as f:
        text = f.read()
    begin, end = "/* BEGIN CDEF */", "/* END CDEF */"
    return text[text.index(begin) + len(begin):text.index(end)]


def _flag_on(name, default):
    return os.environ.get(name, default).strip().lower() not in ("0", "", "false", "no", "off")


def _compiler():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return cc.split()


def compiler_accepts(flags, source="int main(void){return 0;}\n"):
    """True if the C compiler builds and links `source` with `flags` (False if no compiler)."""
    workdir = tempfile.mkdtemp(prefix="minitorch_probe_")
    try:
        src = os.path.join(workdir, "probe.c")
        with open(src, "w") as f:
            f.write(source)
        cmd = _compiler() + [src, "-o", os.path.join(workdir, "probe")] + flags
        result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=60)
        return result.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


OPENMP_PROBE = """
#include <omp.h>
int main(void) { int n = 0;
#pragma omp parallel reduction(+:n)
  n += 1;
  return omp_get_max_threads() > 0 && n > 0 ? 0 : 1; }
"""


def build_flags():
    """(extra_compile_args, extra_link_args) for the current environment."""
    # -fno-math-errno: no kernel reads errno, and without it GCC keeps sqrt a libm call that
    # stops vectorization (tuned/pointwise_tuned.c's rsqrt)
    compile_args = ["-std=gnu11", "-fno-strict-aliasing", "-fopenmp-simd", "-fno-math-errno"]
    link_args = []
    if _flag_on("MINITORCH_SANITIZE", "0"):
        san = ["-fsanitize=address,undefined", "-fno-wrapv", "-fno-omit-frame-pointer", "-g"]
        compile_args += san + ["-O1", "-fno-sanitize-recover=undefined"]
        link_args += ["-fsanitize=address,undefined"]
    else:
        compile_args.append("-O3")
    if _flag_on("MINITORCH_NATIVE", "0"):
        compile_args.append("-march=native")
    if _flag_on("MINITORCH_OPENMP", "1") and compiler_accepts(["-fopenmp"], OPENMP_PROBE):
        compile_args.append("-fopenmp")
        link_args.append("-fopenmp")
    else:  # the `omp parallel` pragmas are then ignored on purpose: kernels run on one thread
        compile_args += ["-Wno-unknown-pragmas", "-Wno-unused-variable"]
    return compile_args, link_args


def make_ffibuilder():
    builder = FFI()
    builder.cdef(cdef_text())
    compile_args, link_args = build_flags()
    builder.set_source(
        "minitorch._C",
        '#include "minitorch.h"\n',
        sources=[os.path.relpath(s) for s in sources()],
        include_dirs=[CSRC],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        libraries=["m"],
    )
    return builder


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
