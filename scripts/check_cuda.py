"""Compiles every CUDA kernel file (csrc/cuda/*.cu) to PTX with nvcc, so that a syntax or type
error fails CI on machines without a GPU: nothing runs, only the compiler.

Each file is compiled once per architecture (default sm_80 and sm_90), with every warning an
error, into a temporary directory that is removed afterwards. One line per file and
architecture; the exit status is 1 if any compile failed, 0 otherwise. Where nvcc is not
installed it prints "nvcc not found: skipped" and exits 0: the CUDA backend is optional.

    python scripts/check_cuda.py                  # sm_80 and sm_90
    python scripts/check_cuda.py --arch sm_80     # one architecture
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_DIR = os.path.join(ROOT, "csrc", "cuda")
DEFAULT_ARCHS = ("sm_80", "sm_90")
# -Werror all-warnings: a warning now is a bug on the GPU later (e.g. a narrowing conversion).
NVCC_FLAGS = ("-ptx", "--std=c++17", "-Werror", "all-warnings")


def compile_to_ptx(nvcc, source, arch, out_dir):
    """(ok, compiler output) for one .cu file and one architecture."""
    name = os.path.splitext(os.path.basename(source))[0]
    out = os.path.join(out_dir, f"{name}.{arch}.ptx")
    command = [nvcc, *NVCC_FLAGS, f"-arch={arch}", "-I", CUDA_DIR, "-o", out, source]
    result = subprocess.run(command, capture_output=True, text=True)
    return result.returncode == 0 and os.path.exists(out), (result.stdout + result.stderr).strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", nargs="+", default=list(DEFAULT_ARCHS),
                        help="GPU architectures to compile for (default: sm_80 sm_90)")
    args = parser.parse_args(argv)
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if nvcc is None:
        print("nvcc not found: skipped")
        return 0
    sources = sorted(glob.glob(os.path.join(CUDA_DIR, "*.cu")))
    if not sources:
        print(f"no .cu files in {CUDA_DIR}")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory(prefix="minitorch_ptx_") as out_dir:
        for source in sources:
            for arch in args.arch:
                start = time.perf_counter()
                ok, messages = compile_to_ptx(nvcc, source, arch, out_dir)
                where = os.path.relpath(source, ROOT)
                seconds = time.perf_counter() - start
                print(f"{where} {arch}: {'ok' if ok else 'FAILED'} ({seconds:.1f} s)")
                if not ok:
                    failures += 1
                    print(messages)
    print(f"{len(sources)} files, {len(args.arch)} architectures: "
          f"{'all compiled' if not failures else f'{failures} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
