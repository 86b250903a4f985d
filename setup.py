"""Build gpuprims._core: csrc/*.c (CPython glue, C, stable ABI) plus
cuda/**/*.cu compiled by nvcc into objects linked into the same module, plus
the same cuda/**/*.cu compiled a second time by the host C++ compiler with
GP_EMULATOR defined, against emu/ (the emulator backend, which runs the
kernels on the CPU).

The nvcc step follows CuPy's builder: a build_ext subclass takes the .cu
sources, compiles them with nvcc, hands the objects to the linker, and lets
setuptools link one extension against the static CUDA runtime, so that
`import gpuprims` works on a machine without a GPU or a driver.

Which backends are built:
  - the CUDA backend and the emulator, where nvcc is found.  nvcc is looked
    for, in this order, at $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, nvcc
    on PATH, /usr/local/cuda/bin/nvcc;
  - the emulator only, where none of these is there, or with
    GPUPRIMS_NO_CUDA=1.  GPUPRIMS_CUDA=1 makes a missing nvcc an error.
The build says which and why, on stderr.

Every object is compiled once per content: an object is named by a hash of
its compiler's identity (path and --version), its flags, its source and
every project header it includes, and kept in a cache directory (see
GPUPRIMS_BUILD_CACHE).  A second build - another `pip install`, a change of
mode and back, another checkout of the same sources - takes its objects
from there; a changed source, header, flag, architecture list or compiler
gets new ones.  The C glue is compiled and the module linked on every build,
so the module always holds the objects of the mode asked for.  Progress
lines ("[12/52] nvcc cuda/reduce/04_unroll.cu") go to stderr: pip shows them
with `pip install -v .`.

Environment:
  GPUPRIMS_CUDA_ARCH  e.g. "90" or "75;80;86;89;90"; SASS for each listed
                      architecture plus PTX for the newest.  "all": the
                      default list below.  Unset: the architectures of the
                      GPUs nvidia-smi lists, where it lists some (a build for
                      this machine); else the default list, less the
                      architectures the installed nvcc lacks.
  CUDA_HOME / CUDA_PATH  the toolkit (see the search order above).
  GPUPRIMS_NO_CUDA=1  build the emulator backend only, even where nvcc is.
  GPUPRIMS_CUDA=1     the CUDA backend is required: no nvcc is an error.
  GPUPRIMS_NVCC_JOBS  parallel compiler processes (default: CPU count).
  GPUPRIMS_BUILD_CACHE  the object cache (default
                      $XDG_CACHE_HOME/gpuprims/objects, else
                      ~/.cache/gpuprims/objects); "off" keeps the objects in
                      the build directory only.  Entries unused for 30 days
                      are deleted; deleting the directory is always safe.
  GPUPRIMS_EMU_ASAN=1 build the emulator objects with AddressSanitizer
                      (run Python with LD_PRELOAD=$(g++ -print-file-name=libasan.so)).
  CXX                 the host C++ compiler for the emulator (default: c++).
  GPUPRIMS_CCCL       which CCCL headers (CUB, Thrust, libcu++) the files
                      that include them (the CUB baselines) are compiled
                      against: "auto" (default) the newer of the
                      nvidia-cuda-cccl wheel's (pip; a build requirement where
                      nvcc is found, see build_backend.py) and the toolkit's;
                      "wheel" the wheel's (an error without it); "toolkit" the
                      toolkit's; or a folder holding cub/ and cuda/.
                      gpuprims.device_info()["cccl"] says which was used.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from glob import glob
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ARCHS = "75;80;86;89;90;100;120"
CACHE_DAYS = 30
NVCC_CANDIDATES = ("$CUDA_HOME/bin/nvcc", "$CUDA_PATH/bin/nvcc", "nvcc on PATH", "/usr/local/cuda/bin/nvcc")


def say(text):
    """A build message on stderr (pip shows it with -v, and on failure)."""
    print(f"gpuprims: {text}", file=sys.stderr, flush=True)


def find_cuda_home():
    """The CUDA toolkit's root, searched in NVCC_CANDIDATES order, or None."""
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


def build_mode():
    """("cuda", toolkit root) or ("emulator", None), and the reason."""
    if os.environ.get("GPUPRIMS_NO_CUDA") == "1":
        if os.environ.get("GPUPRIMS_CUDA") == "1":
            raise SystemExit("gpuprims: GPUPRIMS_CUDA=1 and GPUPRIMS_NO_CUDA=1 contradict each other")
        return "emulator", None, "GPUPRIMS_NO_CUDA=1"
    home = find_cuda_home()
    if home is None:
        if os.environ.get("GPUPRIMS_CUDA") == "1":
            raise SystemExit("gpuprims: GPUPRIMS_CUDA=1 asks for the CUDA backend and no nvcc was found (looked "
                             f"at {', '.join(NVCC_CANDIDATES)}); install the CUDA toolkit or set CUDA_HOME")
        return "emulator", None, f"no nvcc found (looked at {', '.join(NVCC_CANDIDATES)})"
    return "cuda", home, f"nvcc found at {home / 'bin' / 'nvcc'}"


def supported_archs(nvcc):
    """The real architectures this nvcc can compile for ({'75', '80', ...}),
    or None if it cannot say (nvcc before 11.1)."""
    try:
        out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {tok[3:] for tok in out.split() if tok.startswith("sm_")}


def present_archs():
    """The compute capabilities of the GPUs nvidia-smi lists ({'90'}), or
    an empty set (no nvidia-smi, no driver, no GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return set()
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.strip().replace(".", "") for line in out.splitlines() if re.fullmatch(r"\d+\.\d+", line.strip())}


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


def choose_archs(nvcc):
    """(-gencode flags, where they come from) for this build."""
    spec = os.environ.get("GPUPRIMS_CUDA_ARCH", "").strip()
    if spec and spec != "all":  # as asked; nvcc says if it cannot
        return arch_flags(spec), f"GPUPRIMS_CUDA_ARCH={spec}"
    supported = supported_archs(nvcc)
    present = set() if spec == "all" else present_archs()
    if present and (supported is None or present <= supported):
        return (arch_flags(";".join(sorted(present, key=int))),
                "the GPUs nvidia-smi lists (GPUPRIMS_CUDA_ARCH=all for every architecture)")
    why = "GPUPRIMS_CUDA_ARCH=all" if spec == "all" else "the default list"
    if present:
        why += f" (this nvcc cannot compile for the GPU's sm_{', sm_'.join(sorted(present - supported))})"
    return arch_flags(DEFAULT_ARCHS, supported), why


def uses_cccl(src):
    """Sources that include CCCL headers (CUB, Thrust, libcu++): compiled
    against the CCCL that Cccl chooses."""
    text = (HERE / src).read_text()
    return any(f"#include <{lib}/" in text for lib in ("cub", "thrust", "cuda", "nv"))


def uses_nvidia_libraries(src):
    """Sources built on CCCL or cuBLAS (the baselines): GPU build only."""
    return uses_cccl(src) or "#include <cublas" in (HERE / src).read_text()


# ---------------------------------------------------------------- CCCL

CCCL_WHEEL = "nvidia-cuda-cccl"
CCCL_REQUIREMENT = "nvidia-cuda-cccl>=13.3.5,<14"  # CCCL 3.5 or newer, as the cub_deterministic rows need
CCCL_VERSION_H = Path("cuda/std/__cccl/version.h")


def cccl_version(include):
    """CCCL_VERSION of the headers under `include` (3005000 for 3.5.0), or
    None where there are none."""
    try:
        m = re.search(r"#define\s+CCCL_VERSION\s+(\d+)", (Path(include) / CCCL_VERSION_H).read_text())
    except OSError:
        return None
    return int(m.group(1)) if m else None


def wheel_cccl():
    """(include folder, distribution version) of the nvidia-cuda-cccl wheel
    installed where this build runs (nvidia/cu*/include/cccl on sys.path), or
    (None, None)."""
    import importlib.metadata
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    found = sorted((cu / "include" / "cccl" for r in roots for cu in Path(r).glob("cu*")
                    if (cu / "include" / "cccl" / CCCL_VERSION_H).is_file()), reverse=True)
    if not found:
        return None, None
    try:
        version = importlib.metadata.version(CCCL_WHEEL)
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return found[0], version


class Cccl:
    """The CCCL headers the CUB baselines are compiled against: `include`
    (a folder put first on nvcc's include path, or None for the toolkit's
    own), `version` (CCCL_VERSION), `origin` (words), `flags` (for nvcc) and
    `identity` (for the object cache, see object_key)."""

    def __init__(self, home, choice=None):
        choice = (choice if choice is not None else os.environ.get("GPUPRIMS_CCCL", "auto")).strip() or "auto"
        toolkit = cccl_version(home / "include" / "cccl") or cccl_version(home / "include")
        self.include, self.version, self.origin = None, toolkit, "CUDA toolkit"
        self.flags, self.identity = [], ("", None)
        if choice == "toolkit":
            return
        if choice in ("auto", "wheel"):
            include, dist = wheel_cccl()
            if include is None:
                if choice == "wheel":
                    raise SystemExit(f"gpuprims: GPUPRIMS_CCCL=wheel and no {CCCL_WHEEL} wheel is installed "
                                     f"here: pip install '{CCCL_REQUIREMENT}'")
                return
            version = cccl_version(include)
            if choice == "auto" and toolkit is not None and (version or 0) <= toolkit:
                return  # the toolkit's is as new: no second copy on the path
            self.include, self.version, self.origin = include, version, f"{CCCL_WHEEL} {dist} wheel"
            self.flags = [f"-I{include}", f"-DGP_CCCL_WHEEL={dist}"]
            self.identity = ((include / CCCL_VERSION_H).read_text(), self.flags[0])
        else:
            include = Path(choice).expanduser().resolve()
            if cccl_version(include) is None:
                raise SystemExit(f"gpuprims: GPUPRIMS_CCCL={choice!r}: no CCCL headers there (no "
                                 f"{CCCL_VERSION_H}); give 'auto', 'wheel', 'toolkit' or a folder holding "
                                 "cub/ and cuda/")
            self.include, self.version, self.origin = include, cccl_version(include), f"headers in {include}"
            self.flags = [f"-I{include}", "-DGP_CCCL_CUSTOM=1"]
            self.identity = ((include / CCCL_VERSION_H).read_text(), None)

    def __str__(self):
        v = self.version
        return f"CCCL {f'{v // 1000000}.{v // 1000 % 1000}.{v % 1000}' if v else '?'} ({self.origin})"


# ---------------------------------------------------------------- the cache

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)


def project_headers(src, search):
    """Every file of the project that `src` includes, directly or not:
    #include "x" and <x> resolved against the including file's folder and
    `search` (what the compiler's -I says); system headers are left to the
    compiler's identity."""
    seen, todo = set(), [HERE / src]
    while todo:
        f = todo.pop()
        for name in INCLUDE.findall(f.read_text(errors="replace")):
            for d in (f.parent, *search):
                p = (d / name).resolve()
                if p.is_file():
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
                    break
    return sorted(seen)


@lru_cache(maxsize=None)
def tool_identity(exe):
    """The compiler's path and what --version says: a new compiler, new objects."""
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = "?"
    return f"{shutil.which(exe) or exe}\n{version}"


def object_key(cmd, src, search, identity=("", None)):
    """The hash naming an object: compiler identity, flags (the output path
    left out), the source and its project headers, and `identity`: (what
    else decides the object, a flag to leave out).  The CCCL wheel's objects
    give its version file and leave out its -I folder, which pip's build
    isolation puts somewhere new on every build."""
    h = hashlib.sha256()
    h.update(tool_identity(cmd[0]).encode())
    h.update(identity[0].encode())
    h.update(json.dumps([a for a in cmd[1:] if a != identity[1]]).encode())
    for f in [HERE / src, *project_headers(src, search)]:
        h.update(f.relative_to(HERE).as_posix().encode() if f.is_relative_to(HERE) else str(f).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()[:32]


def cache_dir(build_temp):
    """Where objects are kept between builds (see GPUPRIMS_BUILD_CACHE)."""
    value = os.environ.get("GPUPRIMS_BUILD_CACHE")
    if value is not None and value.strip().lower() in ("", "0", "off", "no", "none"):
        return Path(build_temp) / "objects"
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpuprims" / "objects"


def prune_cache(cache):
    """Delete cache entries unused (not built or reused) for CACHE_DAYS."""
    limit = time.time() - CACHE_DAYS * 86400
    for f in cache.glob("*.o"):
        try:
            if f.stat().st_mtime < limit:
                f.unlink()
        except OSError:
            pass


# ---------------------------------------------------------------- the plan

class Job:
    """One object to build: the tool's short name ("nvcc", "c++"), the
    source, the command (output path last) and its cache key."""

    def __init__(self, tool, src, cmd, obj, search, identity=("", None)):
        self.tool, self.src, self.obj = tool, src, Path(obj)
        self.cmd = [*cmd, "-o", str(obj)]
        self.key = object_key(cmd, src, search, identity)


def emulator_jobs(cu_sources, obj_dir):
    """cuda/**/*.cu (less the CUB/cuBLAS baselines) and emu/*.cpp, compiled
    by the host C++ compiler against emu/include."""
    cxx = (os.environ.get("CXX") or "c++").split()
    flags = ["-std=c++17", "-O2", "-fPIC", "-DGP_EMULATOR", "-Iemu/include", "-Icuda",
             "-Wall", "-Wextra", "-Wno-unknown-pragmas"]
    if os.environ.get("GPUPRIMS_EMU_ASAN") == "1":
        flags += ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"]
    sources = [s for s in cu_sources if not uses_nvidia_libraries(s)]
    sources += sorted(glob("emu/*.cpp", root_dir=HERE))  # emu/selftest.cu: the tests build it apart
    search = (HERE / "emu" / "include", HERE / "cuda")
    return [Job(Path(cxx[0]).name, s, [*cxx, "-x", "c++", "-c", s, *flags],
                Path(obj_dir) / "emu" / (Path(s).as_posix().replace("/", "_") + ".o"), search)
            for s in sources]


def nvcc_jobs(cu_sources, obj_dir, nvcc, archs, cccl):
    """The sources that include CCCL headers get `cccl`'s folder first on
    their include path (the others include none: their objects stay the
    same whichever CCCL is chosen)."""
    jobs = []
    for s in cu_sources:
        lib = cccl.flags if uses_cccl(s) else []
        jobs.append(Job("nvcc", s, [nvcc, "-c", s, "-O3", "-std=c++17", "-Xcompiler", "-fPIC", *lib, "-Icuda",
                                    "--threads", "0", *archs],
                        Path(obj_dir) / "cuda" / (Path(s).with_suffix("").as_posix().replace("/", "_") + ".o"),
                        (HERE / "cuda",), cccl.identity if lib else ("", None)))
    return jobs


def plan(build_temp="build/temp"):
    """(mode, toolkit root, why, jobs): what a build in this environment
    compiles; nvcc jobs first (the longest)."""
    mode, home, why = build_mode()
    cu = cu_sources()
    jobs = []
    if mode == "cuda":
        nvcc = str(home / "bin" / "nvcc")
        archs, where = choose_archs(nvcc)
        cccl = Cccl(home)
        why += f"; {' '.join(a.rsplit('code=', 1)[1] for a in archs)} from {where}; the CUB baselines: {cccl}"
        jobs = nvcc_jobs(cu, build_temp, nvcc, archs, cccl)
    return mode, home, why, jobs + emulator_jobs(cu, build_temp)


def missing(jobs, cache):
    """The jobs whose objects the cache does not hold."""
    return [j for j in jobs if not (Path(cache) / f"{j.key}.o").is_file()]


def run_jobs(jobs, cache):
    """Compile (or take from the cache) every job, in parallel, with a
    progress line each; returns the object paths in job order."""
    cache.mkdir(parents=True, exist_ok=True)
    workers = int(os.environ.get("GPUPRIMS_NVCC_JOBS", os.cpu_count() or 1))
    total, done, fresh = len(jobs), [0], [0]
    start = time.monotonic()

    def one(job):
        job.obj.parent.mkdir(parents=True, exist_ok=True)
        cached = cache / f"{job.key}.o"
        if cached.is_file():
            shutil.copyfile(cached, job.obj)
            os.utime(cached)
            note = " (cached)"
        else:
            t0 = time.monotonic()
            r = subprocess.run(job.cmd, cwd=HERE)
            if r.returncode != 0:
                raise SystemExit(f"gpuprims: {job.tool} failed on {job.src} (exit {r.returncode}):\n  "
                                 + " ".join(job.cmd))
            tmp = cache / f"{job.key}.o.{os.getpid()}.tmp"
            shutil.copyfile(job.obj, tmp)
            os.replace(tmp, cached)  # whole or absent, whoever else builds
            fresh[0] += 1
            note = f" ({time.monotonic() - t0:.0f} s)"
        done[0] += 1
        say(f"[{done[0]}/{total}] {job.tool} {job.src}{note}")
        return str(job.obj)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        objects = list(pool.map(one, jobs))
    say(f"{total} objects in {time.monotonic() - start:.0f} s: {fresh[0]} compiled, "
        f"{total - fresh[0]} from the cache {cache}")
    prune_cache(cache)
    return objects


def cu_sources():
    return sorted(glob("cuda/**/*.cu", root_dir=HERE, recursive=True))


# ---------------------------------------------------------------- the build

if __name__ == "__main__":
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    class BuildExtNvcc(build_ext):
        def build_extension(self, ext):
            ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
            mode, home, why, jobs = plan(self.build_temp)
            say(f"building the {'CUDA and emulator backends' if mode == 'cuda' else 'emulator backend only'}: "
                f"{why}")
            if mode == "emulator":
                say("  the kernels will run on the CPU.  For the GPU backend install the CUDA toolkit "
                    "(12.x or 13.x), put its bin/ on PATH or set CUDA_HOME, and build again.")
            say(f"{len(jobs)} objects, {os.environ.get('GPUPRIMS_NVCC_JOBS', os.cpu_count() or 1)} at a time"
                + (" (a first CUDA build takes minutes: `pip install -v .` shows each file)" if mode == "cuda"
                   else ""))
            objects = run_jobs(jobs, cache_dir(self.build_temp))
            ext.extra_objects = objects + list(ext.extra_objects or [])
            if os.environ.get("GPUPRIMS_EMU_ASAN") == "1":
                ext.extra_link_args = list(ext.extra_link_args or []) + ["-fsanitize=address"]
            if mode == "emulator":
                ext.include_dirs = ["emu/include"] + list(ext.include_dirs or [])
                ext.libraries = ["stdc++", "pthread"]
            else:
                ext.define_macros = list(ext.define_macros or []) + [("GP_HAVE_CUDA", "1")]
                ext.include_dirs = [str(home / "include")] + list(ext.include_dirs or [])
                lib64 = home / "lib64"
                if not lib64.exists():
                    lib64 = home / "lib"
                ext.library_dirs = [str(lib64)] + list(ext.library_dirs or [])
            # Always relink (a second or two): the module on disk may be of
            # another mode, architecture list or compiler, which its
            # timestamps cannot tell.
            self.force = True
            super().build_extension(ext)

    core = Extension(
        "gpuprims._core",
        sources=sorted(glob("csrc/*.c", root_dir=HERE)),
        depends=sorted(glob("csrc/*.h", root_dir=HERE)),
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
