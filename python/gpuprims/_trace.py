"""Explain mode: watch a variant's kernels run, barrier by barrier.

gpuprims.trace(family, variant, x) runs one call on the emulator backend for
a tiny input (at most 64 elements) and records, at every block barrier
(__syncthreads) and at the end of every block, the contents of the block's
shared memory and of the kernel's writable arguments (the reduction
journey's in-place tile lives in global scratch, as in the textbook), plus which
threads changed which element since the previous barrier.  The result is
plain data (Trace.steps) with a text view (str(trace)) and a picture
(Trace.plot(), if matplotlib is installed): Hillis-Steele against Blelloch,
neighbored against interleaved, step by step.  With axis= or segments=
(reduce and scan), Trace.owners() says which block and thread wrote each
output element: which thread took which problem, the mapping of work to
threads that the batched and segmented rows differ in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _backend, _core
from ._family import get as get_family

MAX_ELEMENTS = 64


@dataclass
class Region:
    """Memory watched at one step: `values` (as the call's result dtype where
    the element size matches, else raw unsigned integers) and, per element,
    the thread (linear index in the block) that last changed it since the
    previous step, or -1."""

    name: str  # "shared" (the block's shared memory) or "arg<i>" (a kernel argument)
    values: np.ndarray
    writers: np.ndarray

    @property
    def changed(self) -> np.ndarray:
        return np.nonzero(self.writers >= 0)[0]


@dataclass
class Step:
    kernel: str
    launch: int  # which launch of the call (a multi-pass variant launches more than once)
    block: tuple
    block_dim: tuple
    barrier: int  # the barrier that just opened, counting from 0; -1: the block's end
    regions: dict = field(default_factory=dict)  # name -> Region

    @property
    def active(self) -> tuple:
        """The threads that changed watched memory since the previous step."""
        return tuple(sorted({int(t) for r in self.regions.values() for t in r.writers[r.writers >= 0]}))


@dataclass
class Trace:
    family: str
    variant: str
    input: np.ndarray
    result: object
    steps: list
    axis: object = None  # the call's axis= and segments= (None: the whole array)
    segments: object = None

    def owners(self) -> list:
        """For each element of the call's output (one per problem of a
        reduction; every prefix of a scan), the (launch, block, thread) that
        wrote it last, or None: read from the writable kernel argument that
        the last launch wrote (shared memory is the block's work space, not
        the output).  The watched argument is the whole allocation holding
        the output, which starts at its first written element."""
        size = int(np.asarray(self.result).size)
        last = max((s.launch for s in self.steps), default=-1)
        wrote = {}
        for s in self.steps:
            if s.launch != last:
                continue
            for name, r in s.regions.items():
                if name == "shared":
                    continue
                for j in np.nonzero(r.writers >= 0)[0]:
                    wrote[int(j)] = (s.launch, s.block[0], int(r.writers[j]))
                break
        base = min(wrote, default=0)
        return [wrote.get(base + j) for j in range(size)]

    def owners_text(self) -> str:
        """owners() as lines: "output 3: block 0, warp 1 lane 0 (thread 32)"."""
        lines = []
        for j, o in enumerate(self.owners()):
            if o is None:
                lines.append(f"output {j}: not written by the last launch (an earlier one wrote it)")
                continue
            launch, block, t = o
            lines.append(f"output {j}: block {block}, warp {t // 32} lane {t % 32} (thread {t})")
        return "\n".join(lines)

    def main_region(self, step: Step) -> str | None:
        """The region worth looking at: shared memory if the kernel has
        any, else its first writable argument (the reduction tile)."""
        if "shared" in step.regions:
            return "shared"
        return next(iter(step.regions), None)

    def __str__(self) -> str:
        lines = [f"trace of {self.family} variant {self.variant!r} on {self.input.size} elements "
                 f"(emulator): {len(self.steps)} steps"]
        for s in self.steps:
            name = self.main_region(s)
            where = "end of block" if s.barrier < 0 else f"barrier {s.barrier}"
            head = f"launch {s.launch} {s.kernel} block {s.block[0]} {where}: "
            if name is None:
                lines.append(head + f"{len(s.active)} threads changed memory")
                continue
            r = s.regions[name]
            k = _shown(self, r)
            # the threads that changed what is shown (writes elsewhere are in s.regions)
            active = tuple(sorted({int(t) for t in r.writers[:k][r.writers[:k] >= 0]}))
            lines.append(head + f"{len(active)} active threads {_threads(active)}; {name} = "
                         + np.array2string(r.values[:k], max_line_width=10**6, threshold=10**6))
        return "\n".join(lines)

    def plot(self, ax=None, max_steps: int = 40):
        """A picture of the steps: one row per barrier, one column per
        element of the main region; changed elements are coloured and
        labelled with their new value.  Needs matplotlib."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # optional dependency
            raise ImportError("Trace.plot() needs matplotlib (pip install matplotlib); "
                              "str(trace) gives the same steps as text") from e
        steps = [s for s in self.steps if self.main_region(s) is not None][:max_steps]
        if not steps:
            raise ValueError("nothing to draw: the kernels touched no shared memory or writable argument")
        width = max(_shown(self, s.regions[self.main_region(s)]) for s in steps)
        changed = np.zeros((len(steps), width))
        if ax is None:
            fig, ax = plt.subplots(figsize=(min(0.45 * width + 3, 30), 0.45 * len(steps) + 1.5))
        else:
            fig = ax.figure
        for i, s in enumerate(steps):
            r = s.regions[self.main_region(s)]
            k = min(width, r.values.size)
            changed[i, :k] = r.writers[:k] >= 0
            for j in range(k):
                v = r.values[j]
                label = f"{v:.3g}" if np.issubdtype(r.values.dtype, np.floating) else str(v)
                ax.text(j, i, label, ha="center", va="center", fontsize=6,
                        color="black" if changed[i, j] else "0.55")
        ax.imshow(changed, cmap="Blues", vmin=0, vmax=2, aspect="auto")
        ax.set_yticks(range(len(steps)))
        ax.set_yticklabels([f"L{s.launch} b{s.block[0]} "
                            + ("end" if s.barrier < 0 else f"sync {s.barrier}")
                            + f" ({len(s.active)} thr)" for s in steps], fontsize=7)
        ax.set_xlabel(f"element of {self.main_region(steps[0])}")
        ax.set_title(f"{self.family} / {self.variant}: memory at each barrier (coloured: changed since the last)")
        return fig


def _shown(t: Trace, r: Region) -> int:
    """How many elements of a region to show: the input's size rounded up to
    a power of two (where the tree works)."""
    n = 1
    while n < max(t.input.size, 2):
        n *= 2
    return min(r.values.size, n + n // 32)  # Blelloch's padded tile has n/32 pad words


def _threads(active) -> str:
    if len(active) <= 12:
        return "(" + ", ".join(map(str, active)) + ")"
    return "(" + ", ".join(map(str, active[:12])) + ", ...)"


def _as_values(raw: bytes, itemsize: int, dtype: np.dtype) -> np.ndarray:
    if itemsize == 1 and dtype.itemsize > 1:  # shared memory: bytes, shown as the call's type
        usable = len(raw) - len(raw) % dtype.itemsize
        return np.frombuffer(raw[:usable], dtype=dtype).copy()
    if itemsize == dtype.itemsize:
        return np.frombuffer(raw[: len(raw) - len(raw) % itemsize], dtype=dtype).copy()
    return np.frombuffer(raw[: len(raw) - len(raw) % itemsize], dtype=f"u{itemsize}").copy()


def trace(family: str, variant: str, x, *, op: str = "sum", inclusive: bool = True, axis=None,
          segments=None, max_bytes: int = 256 << 20) -> Trace:
    """Run `variant` of `family` ("reduce", "scan" or "transpose") on the
    emulator for x and return the Trace of its barriers: what the block's
    shared memory and the kernel's writable arguments hold at each one, and
    which threads changed them.  The active backend is left as it was.

    x: a NumPy array of at most 64 elements, of a dtype the family takes
    (gpuprims.variants(family) lists the variants; transpose: 2-D).
    variant: a device variant of gpuprims (not the host code "cpu", nor the
    NVIDIA libraries "cub" / "cublas", which the emulator does not run).
    op ("sum", "min", "max") and inclusive as in gpuprims.reduce / scan.
    axis and segments (reduce and scan) as in gpuprims.reduce / scan: the
    call runs the named row with that layout (a row flagged batched or
    segmented; "auto" the one the public call picks), and Trace.owners()
    says which thread wrote each output element.

    Raises ValueError (unknown family, variant or op; too many elements; a
    variant with no kernels to trace; wrong number of dimensions), TypeError
    (a dtype the family does not take), RuntimeError (the trace outgrew
    max_bytes)."""
    a = np.asarray(x)
    fam = get_family(family)
    v = fam.lookup(variant)
    if a.size > MAX_ELEMENTS:
        raise ValueError(f"gpuprims.trace is for tiny inputs: at most {MAX_ELEMENTS} elements, got {a.size}")
    device = [w.name for w in fam.variants() if w.where == "device" and "emulator" in w.backends]
    if v.where != "device" or "emulator" not in v.backends:
        what = "runs on the host (no kernels)" if v.where != "device" else "is NVIDIA library code (not emulated)"
        raise ValueError(f"gpuprims.trace: {family} variant {v.name!r} {what}: nothing to trace; "
                         f"choose one of {', '.join(device)}")
    if a.dtype not in fam.dtypes:
        raise TypeError(f"gpuprims.trace: {family} does not support dtype {a.dtype}; supported: "
                        f"{', '.join(d.name for d in fam.dtypes)}")
    if a.ndim == 0 or (fam.ndim is not None and a.ndim != fam.ndim):
        want = f"a {fam.ndim}-D array" if fam.ndim else "an array with at least one dimension"
        raise ValueError(f"gpuprims.trace: {family} needs {want}, got {a.ndim}-D")
    fam.check_options(op)
    dtype = fam.result_dtype(a.dtype, op)  # the watched memory is shown as the call's result dtype
    layout = axis is not None or segments is not None
    if layout and not fam.layout_variants():
        raise ValueError(f"gpuprims.trace: axis= and segments= are for reduce and scan, not {family}")
    with _backend.emulating():
        call = _layout_call(fam.name, a, v.name, op, inclusive, axis, segments) if layout else \
            (lambda: fam.apply(a, v.name, op=op, inclusive=inclusive))
        _core.emu_trace(True, int(max_bytes))
        try:
            result = call()
        finally:
            raw_steps, error = _core.emu_trace(False, 0)
    if error:
        raise RuntimeError(f"gpuprims.trace: {error}")
    steps = []
    for s in raw_steps:
        regions = {}
        for name, itemsize, data, writers in s["regions"]:
            values = _as_values(data, itemsize, np.dtype(dtype))
            per_byte = np.frombuffer(writers, dtype=np.int32)
            size = values.itemsize
            w = per_byte[: values.size * size].reshape(values.size, size).max(axis=1)
            regions[name] = Region(name, values, w)
        steps.append(Step(s["kernel"].strip("()"), s["launch"], s["block"], s["block_dim"], s["barrier"], regions))
    if layout:
        result = result.get()
    return Trace(family, variant, a, result, steps, axis, segments)


def _layout_call(family, a, variant, op, inclusive, axis, segments):
    """The call of a reduce or scan with an axis or segments, on the
    emulator's device memory and writing into a fresh output filled with a
    byte pattern: the trace records an element as written only where its
    bytes change, so the output must not already hold the result (as the
    staging memory of an earlier call would)."""
    import gpuprims
    from ._arrays import DeviceArray, to_device

    d = to_device(a)
    fn = getattr(gpuprims, family)  # gpuprims.reduce or gpuprims.scan: the public call
    kw = {"inclusive": inclusive} if "inclusive" in get_family(family).options else {}

    def run(out=None):
        return fn(d, op, axis=axis, segments=segments, variant=variant, out=out, **kw)

    first = run()  # untraced: the result's shape and dtype
    out = DeviceArray(first.shape, first.dtype)
    _core.htod(out.ptr, np.full(first.size * first.dtype.itemsize, 0xA5, np.uint8))
    return lambda: run(out)
