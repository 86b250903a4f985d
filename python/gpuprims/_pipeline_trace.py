"""The host pipeline's timeline: when each chunk was packed, copied in,
computed, copied out and unpacked, drawn one line per stream.

``trace_pipeline(fn, *args, serial=False)`` runs ``fn(*args)`` (a gpuprims
call on NumPy arrays, e.g. ``gpuprims.sum``) once with the core's trace on
and returns a :class:`Timeline`.  On the cuda backend the device stages are
timed by CUDA events on the streams they ran on (the host->device copy
stream, the call's compute stream, the device->host copy stream) and the
host stages (packing into the pinned ring, unpacking out of it) by the host
clock, on one axis.  On the emulator every stage is a host time of the
emulation, run one after the other: its timeline says nothing about a GPU.

``serial=True`` runs the same chunks with a wait after every stage: no two
stages overlap, which is what the pipeline is measured against.
"""
from __future__ import annotations

import time

from gpuprims import _core

STREAMS = ("host", "h2d", "compute", "d2h")
STAGES = ("pack", "in", "kernel", "out", "unpack")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Timeline:
    """The records of one traced call (``records``: dicts with chunk, stage,
    stream, start_ms, end_ms), its wall-clock ``wall_ms``, its ``result``,
    whether it ran ``serial`` and on which ``backend``.  ``str(t)`` draws it
    as text, ``t.plot()`` with matplotlib."""

    def __init__(self, records, wall_ms, result, serial, backend, label=""):
        self.records = list(records)
        self.wall_ms = wall_ms
        self.result = result
        self.serial = serial
        self.backend = backend
        self.label = label

    @property
    def chunks(self) -> int:
        return len({r["chunk"] for r in self.records})

    @property
    def span_ms(self) -> float:
        """From the first stage's start to the last one's end."""
        return max((r["end_ms"] for r in self.records), default=0.0)

    def busy_ms(self, stream: str) -> float:
        """The time the stream (or the host) spent on the call's stages."""
        return sum(r["end_ms"] - r["start_ms"] for r in self.records if r["stream"] == stream)

    def overlap(self) -> float:
        """The stages' summed time over the span: 1 where nothing overlaps,
        up to the number of streams where everything does."""
        total = sum(r["end_ms"] - r["start_ms"] for r in self.records)
        return total / self.span_ms if self.span_ms > 0 else 0.0

    def text(self, width: int = 72) -> str:
        """One line per stream; each chunk's stages as its letter (A, B, ...,
        cycling after Z) along a time axis of `width` columns; on the host
        line packing is the capital letter, unpacking the small one."""
        span = self.span_ms or 1.0
        scale = span / width
        lines = []
        kind = "serial (a wait after every stage)" if self.serial else "overlapped"
        where = "" if self.backend == "cuda" else " - emulator: host times of the emulation, not a GPU"
        lines.append(f"{self.label + ': ' if self.label else ''}{self.chunks} chunks, {kind}, "
                     f"{self.span_ms:.3f} ms{where}")
        for stream in STREAMS:
            row = [" "] * width
            # the longest stages first, so that a short one keeps its column on top
            for r in sorted(self.records, key=lambda r: r["start_ms"] - r["end_ms"]):
                if r["stream"] != stream:
                    continue
                a = min(width - 1, int(r["start_ms"] / scale))
                b = max(a + 1, min(width, int(round(r["end_ms"] / scale))))
                ch = _LETTERS[r["chunk"] % 26]
                if r["stage"] == "unpack":
                    ch = ch.lower()
                for k in range(a, b):
                    row[k] = ch
            lines.append(f"{stream:>8} |{''.join(row)}|")
        end = f"{span:.3f} ms"
        axis = "0 ms" + " " * max(1, width - 4 - len(end)) + end
        lines.append(f"{'':>8}  {axis}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<Timeline {self.chunks} chunks, {'serial' if self.serial else 'overlapped'}, {self.span_ms:.3f} ms>"

    def plot(self, ax=None, title: str | None = None):
        """A bar per stage on its stream's row (matplotlib; ImportError with
        what to install where it is missing).  Returns the axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("Timeline.plot needs matplotlib (pip install matplotlib); "
                              "print(timeline) draws it as text") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(10, 2.4))
        colors = {"pack": "tab:gray", "in": "tab:blue", "kernel": "tab:green", "out": "tab:orange",
                  "unpack": "tab:brown"}
        rows = {s: len(STREAMS) - 1 - k for k, s in enumerate(STREAMS)}
        for stage in STAGES:
            bars = [(r["start_ms"], max(r["end_ms"] - r["start_ms"], 1e-6)) for r in self.records
                    if r["stage"] == stage]
            if not bars:
                continue
            row = rows[next(r["stream"] for r in self.records if r["stage"] == stage)]
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colors[stage], edgecolor="white",
                           linewidth=0.5, label=stage)
        ax.set_yticks([rows[s] for s in STREAMS], list(STREAMS))
        ax.set_xlabel("ms" if self.backend == "cuda" else "ms (emulator: host times, not a GPU)")
        ax.set_xlim(0, self.span_ms or 1.0)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        ax.set_title(title or f"{self.label + ': ' if self.label else ''}"
                     f"{'serial' if self.serial else 'overlapped'}, {self.span_ms:.2f} ms")
        return ax


def trace_pipeline(fn, *args, serial: bool = False, chunk_bytes: int | None = None,
                   max_records: int = 1 << 16, label: str = "", **kwargs) -> Timeline:
    """Run ``fn(*args, **kwargs)`` once through the host pipeline with its
    trace on and return its :class:`Timeline`.  Every host operand goes
    through the pipeline during the call (its size threshold set to 0);
    ``chunk_bytes`` makes the chunks smaller than the ring's slots (a test
    and teaching knob); ``serial=True`` waits after every stage.  The
    pipeline's settings are restored after.  ValueError where the call did
    not go through the pipeline (device operands, axis or segmented
    layouts, N-D transposes)."""
    before = _core.pipeline_config()
    settings = dict(trace=max_records, serial=bool(serial), threshold=0)
    if chunk_bytes is not None:
        settings["chunk_bytes"] = int(chunk_bytes)
    calls = _core.pipeline_stats()["calls"]
    _core.pipeline_config(**settings)
    try:
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        wall_ms = 1e3 * (time.perf_counter() - t0)
        records = _core.pipeline_trace()
    finally:
        _core.pipeline_config(trace=0, serial=before["serial"], threshold=before["threshold"],
                              chunk_bytes=before["chunk_bytes"])
    if _core.pipeline_stats()["calls"] == calls or not records:
        raise ValueError(f"trace_pipeline: {getattr(fn, '__name__', fn)} did not go through the host pipeline; "
                         f"pass NumPy arrays to a reduction to one value, a scan or a 2-D transpose")
    return Timeline(records, wall_ms, result, bool(serial), _core.backend(), label)
