"""Build gpuprims._core: csrc/*.c (CPython glue, C, stable ABI) plus
cuda/**/*.cu compiled by nvcc into objects linked into the same module, plus
the same cuda/**/*.cu compiled a second time by the host C++ compiler with
GP_EMULATOR defined, against emu/ (the emulator backend, which runs the
kernels on the CPU).  Without nvcc only the emulator backend is built.

The nvcc step follows CuPy's builder: a build_ext subclass takes the .cu
sources, compiles them with nvcc, hands the objects to the linker, and lets
setuptools link one extension against the static CUDA runtime, so that
`import gpuprims` works on a machine without a GPU or a driver.

Environment:
  GPUPRIMS_CUDA_ARCH  e.g. "90" or "75;80;86;89;90"; SASS for each listed
                      architecture plus PTX for the newest. Default below,
                      less the architectures the installed nvcc lacks.
  CUDA_HOME / CUDA_PATH  the toolkit (else nvcc's location on PATH, else
                      /usr/local/cuda).
  GPUPRIMS_NVCC_JOBS  parallel compiler processes (default: CPU count).
  GPUPRIMS_NO_CUDA=1  build the emulator backend only, even where nvcc is.
  GPUPRIMS_EMU_ASAN=1 build the emulator objects with AddressSanitizer
                      (run Python with LD_PRELOAD=$(g++ -print-file-name=libasan.so)).
  CXX                 the host C++ compiler for the emulator (default: c++).
"""
import os
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
DEFAULT_ARCHS = "75;80;86;89;90;100;120"


def find_cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and (Path(home) / "bin" / "nvcc").exists():
            return Path(home)
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    if Path("/usr/local/cuda/bin/nvcc").exists():
        return Path("/usr/local/cuda")
    return None


def supported_archs(nvcc):
    """The real architectures this nvcc can compile for ({'75', '80', ...}),
    or None if it cannot say (nvcc before 11.1)."""
    try:
        out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {tok[3:] for tok in out.split() if tok.startswith("sm_")}


def arch_flags(spec, supported=None):
    """-gencode flags: SASS for each architecture of `spec` ("90",
    "75;80;86"), PTX for the newest.  With `supported` (the default list
    only), architectures this nvcc does not know are left out."""
    archs = [a.strip().replace("sm_", "").replace(".", "") for a in spec.replace(",", ";").split(";")]
    archs = [a for a in archs if a and (supported is None or a in supported)]
    if not archs and supported is not None:
        raise SystemExit(f"gpuprims: this nvcc compiles for none of {spec}; set GPUPRIMS_CUDA_ARCH, "
                         f"e.g. GPUPRIMS_CUDA_ARCH=\"{';'.join(sorted(supported))}\"")
    if not archs or not all(a.rstrip("af").isdigit() for a in archs):
        raise SystemExit(f"gpuprims: GPUPRIMS_CUDA_ARCH={spec!r} is not a list like '90' or '80;90'")
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    newest = max(archs, key=lambda a: int(a.rstrip("af")))
    flags.append(f"-gencode=arch=compute_{newest},code=compute_{newest}")
    return flags


def uses_nvidia_libraries(src):
    """Sources built on CUB or cuBLAS (the baselines): GPU build only."""
    text = Path(HERE / src).read_text()
    return "#include <cub/" in text or "#include <cublas" in text


def run_parallel(compile_one, sources, what):
    jobs = int(os.environ.get("GPUPRIMS_NVCC_JOBS", os.cpu_count() or 1))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(compile_one, sources))
    except subprocess.CalledProcessError as e:
        src = next((a for a in e.cmd if a.endswith((".cu", ".cpp"))), "?")
        raise SystemExit(f"gpuprims: {what} failed on {src} (exit {e.returncode})")


class BuildExtNvcc(build_ext):
    def emulator_objects(self, cu_sources):
        """cuda/**/*.cu (less the CUB/cuBLAS baselines) and emu/*.cpp,
        compiled by the host C++ compiler against emu/include."""
        cxx = os.environ.get("CXX") or "c++"
        flags = ["-std=c++17", "-O2", "-fPIC", "-DGP_EMULATOR", "-Iemu/include", "-Icuda",
                 "-Wall", "-Wextra", "-Wno-unknown-pragmas"]
        if os.environ.get("GPUPRIMS_EMU_ASAN") == "1":
            flags += ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"]
        sources = [s for s in cu_sources if not uses_nvidia_libraries(s)]
        sources += sorted(glob("emu/*.cpp"))  # emu/selftest.cu: the tests build it apart
        obj_dir = Path(self.build_temp) / "emu"
        obj_dir.mkdir(parents=True, exist_ok=True)

        def compile_one(src):
            obj = obj_dir / (Path(src).as_posix().replace("/", "_") + ".o")
            cmd = [*cxx.split(), "-x", "c++", "-c", src, "-o", str(obj), *flags]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, cwd=HERE)
            return str(obj)

        return sources, compile_one

    def build_extension(self, ext):
        cu_sources = [s for s in ext.sources if s.endswith(".cu")]
        ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
        # setuptools relinks only when a source or a dependency is newer than
        # the module: the .cu files leave `sources`, so they join `depends`
        ext.depends = list(ext.depends or []) + cu_sources
        emu_sources, emu_compile = self.emulator_objects(cu_sources)
        if os.environ.get("GPUPRIMS_EMU_ASAN") == "1":
            ext.extra_link_args = list(ext.extra_link_args or []) + ["-fsanitize=address"]
        cuda_home = None if os.environ.get("GPUPRIMS_NO_CUDA") == "1" else find_cuda_home()
        if cuda_home is None:
            print("gpuprims: no CUDA toolkit (nvcc) found"
                  + (" (GPUPRIMS_NO_CUDA=1)" if os.environ.get("GPUPRIMS_NO_CUDA") == "1" else "")
                  + ": building the emulator backend only; the kernels will run on the CPU.\n"
                  "  For the GPU backend install the CUDA toolkit (12.x or 13.x), put its bin/ on PATH\n"
                  "  or set CUDA_HOME, and build again.", flush=True)
            ext.extra_objects = run_parallel(emu_compile, emu_sources, "the C++ compiler") + list(ext.extra_objects or [])
            ext.include_dirs = ["emu/include"] + list(ext.include_dirs or [])
            ext.libraries = ["stdc++", "pthread"]
            super().build_extension(ext)
            return
        nvcc = str(cuda_home / "bin" / "nvcc")
        if "GPUPRIMS_CUDA_ARCH" in os.environ:  # as asked; nvcc says if it cannot
            archs = arch_flags(os.environ["GPUPRIMS_CUDA_ARCH"])
        else:  # the default list, less what an older nvcc does not know
            archs = arch_flags(DEFAULT_ARCHS, supported_archs(nvcc))
        obj_dir = Path(self.build_temp) / "cuda"
        obj_dir.mkdir(parents=True, exist_ok=True)

        def compile_one(job):
            kind, src = job
            if kind == "emu":  # a host compiler job for the emulator
                return emu_compile(src)
            obj = obj_dir / (Path(src).with_suffix("").as_posix().replace("/", "_") + ".o")
            cmd = [nvcc, "-c", src, "-o", str(obj), "-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                   "-Icuda", "--threads", "0", *archs]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, cwd=HERE)
            return str(obj)

        # nvcc jobs first (the longest), the emulator's beside them
        jobs = [("nvcc", s) for s in cu_sources] + [("emu", s) for s in emu_sources]
        objects = run_parallel(compile_one, jobs, "nvcc or the C++ compiler")

        ext.extra_objects = objects + list(ext.extra_objects or [])
        ext.define_macros = list(ext.define_macros or []) + [("GP_HAVE_CUDA", "1")]
        ext.include_dirs = [str(cuda_home / "include")] + list(ext.include_dirs or [])
        lib64 = cuda_home / "lib64"
        if not lib64.exists():
            lib64 = cuda_home / "lib"
        ext.library_dirs = [str(lib64)] + list(ext.library_dirs or [])
        super().build_extension(ext)


c_sources = sorted(glob("csrc/*.c"))
cu_sources = sorted(glob("cuda/**/*.cu", recursive=True))

core = Extension(
    "gpuprims._core",
    sources=c_sources + cu_sources,
    depends=glob("csrc/*.h") + glob("cuda/**/*.cuh", recursive=True) + ["cuda/gpuprims.h"]
    + glob("emu/**/*", recursive=True),
    extra_compile_args=["-std=c99", "-Wall", "-Wextra", "-O2"],
    libraries=["cudart_static", "stdc++", "rt", "pthread", "dl"],
    define_macros=[("Py_LIMITED_API", "0x030B0000")],
    py_limited_api=True,
)

setup(
    ext_modules=[core],
    cmdclass={"build_ext": BuildExtNvcc},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
