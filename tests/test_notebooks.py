"""The teaching notebooks (notebooks/*.ipynb).

Runs anywhere: they are committed without outputs, their code parses, and
every variant a step names is in the registry (no list that can drift).
Needs a GPU, nbclient and ipykernel: each runs headless without an error,
and its cells tagged "table" produce a table.
"""
import ast
import json
import re
from pathlib import Path

import pytest

import gpuprims

from conftest import GPU_OK, GPU_WHY

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
NAMES = ["01_reduction", "02_scan", "03_transpose", "04_occupancy", "05_axis_and_segments",
         "06_host_pipeline", "07_determinism", "08_scaling_out"]


def load(path):
    return json.loads(path.read_text())


def test_the_notebooks_exist_and_are_generated():
    assert [p.stem for p in NOTEBOOKS] == NAMES
    script = NOTEBOOKS[0].parent / "make_notebooks.py"
    assert script.exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs_and_code_parses(path):
    nb = load(path)
    assert nb["nbformat"] == 4
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:60]
        ast.parse(cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"]))
    assert any("table" in c.get("metadata", {}).get("tags", []) for c in nb["cells"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_step_names_a_registered_variant(path):
    text = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                     for c in load(path)["cells"] if c["cell_type"] == "code")
    for family, name in re.findall(r'step\("(\w+)", "(\w+)"', text):
        assert name in {v.name for v in gpuprims.variants(family)}, (family, name)


@pytest.mark.gpu
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_headless_and_shows_its_tables(path):
    if not GPU_OK:
        pytest.skip(f"needs a CUDA GPU ({GPU_WHY})")
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install nbclient ipykernel)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install nbclient ipykernel)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install ipykernel)")
    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError on any cell's error
    tables = [c for c in nb.cells if "table" in c.metadata.get("tags", [])]
    assert tables
    for cell in tables:
        html = [o["data"]["text/html"] for o in cell.outputs
                if o.get("output_type") in ("execute_result", "display_data") and "text/html" in o.get("data", {})]
        assert html and "<table>" in html[-1], cell.source[:80]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem in ("01_reduction", "02_scan")],
                         ids=lambda p: p.stem)
def test_trace_cells_run_anywhere(path, monkeypatch, capsys):
    """The explain-mode cells run on the emulator, so they run here too, GPU
    or not: with the notebook's setup cell, each prints every step of both
    traces (the memory at each barrier and the threads that changed it)."""
    monkeypatch.setenv("MPLBACKEND", "Agg")  # a plot, where matplotlib is installed, goes nowhere
    cells = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
    source = lambda c: c["source"] if isinstance(c["source"], str) else "".join(c["source"])
    traced = [c for c in cells if "trace" in c.get("metadata", {}).get("tags", [])]
    assert traced
    namespace = {}
    exec(source(cells[0]), namespace)  # the setup: imports, step(), show_plot()
    for cell in traced:
        exec(source(cell), namespace)
    out = capsys.readouterr().out
    for name in re.findall(r'for name in \("(\w+)", "(\w+)"\)', source(traced[0]))[0]:
        assert f"variant '{name}' on 16 elements (emulator)" in out
    assert out.count("barrier 1:") >= 2


def test_axis_and_segments_trace_cells_run_anywhere(capsys):
    """05's trace cells (which thread took which problem) run on the
    emulator, GPU or not, and show the mappings the text describes."""
    path = next(p for p in NOTEBOOKS if p.stem == "05_axis_and_segments")
    cells = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
    source = lambda c: c["source"] if isinstance(c["source"], str) else "".join(c["source"])
    traced = [c for c in cells if "trace" in c.get("metadata", {}).get("tags", [])]
    assert len(traced) == 2
    namespace = {}
    exec(source(cells[0]), namespace)  # the setup: imports
    for cell in traced:
        exec(source(cell), namespace)
    out = capsys.readouterr().out
    assert "output 4: block 0, warp 0 lane 4 (thread 4)" in out  # a lane per column
    assert "output 7: block 0, warp 7 lane 0 (thread 224)" in out  # a warp per row
    assert "output 3: block 3, warp 0 lane 0 (thread 0)" in out  # a block per segment
    assert "output 3: block 0, warp 3 lane 0 (thread 96)" in out  # a warp per segment
