"""The families as objects: the registry's roles (auto, baseline, library,
instead), the Family registry in Python, no branching on a family's name
outside its own module, and one Python/C crossing per call.  Runs anywhere."""
import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpuprims
from gpuprims import _core
from gpuprims._family import FAMILIES

PACKAGE = Path(gpuprims.__file__).resolve().parent
NAMES = _core.families()
OWN_MODULE = {"reduce": "_reduce.py", "scan": "_scan.py", "transpose": "_transpose.py"}


# ------------------------------------------------------------ the registry

@pytest.mark.parametrize("family", NAMES)
def test_each_family_has_exactly_one_auto_row(family):
    autos = [v for v in gpuprims.variants(family) if v.auto]
    assert len(autos) == 1, [v.name for v in autos]
    auto = autos[0]
    assert auto.max_n is None and auto.dtypes is None and auto.where == "device" and not auto.baseline
    assert "emulator" in auto.backends
    assert gpuprims._registry.lookup(family, "auto") is auto


@pytest.mark.parametrize("family", NAMES)
def test_library_rows_titles_start_with_their_label(family):
    libraries = [v for v in gpuprims.variants(family) if v.library]
    assert len(libraries) == 1, [v.name for v in libraries]
    lib = libraries[0]
    assert lib.baseline and lib.where == "device"
    label = FAMILIES[family].library_label
    assert label in ("CUB", "cuBLAS") and lib.title.startswith(label + " ")


@pytest.mark.parametrize("family", NAMES)
def test_every_row_with_max_n_names_an_existing_variant_or_none(family):
    rows = {v.name: v for v in gpuprims.variants(family)}
    for v in rows.values():
        if v.max_n is None:
            assert v.instead is None, v
            continue
        if v.instead is not None:
            other = rows.get(v.instead)
            assert other is not None, (v.name, v.instead)
            assert other.max_n is None and not other.baseline, other


@pytest.mark.parametrize("family", NAMES)
def test_baselines_follow_the_journey(family):
    roles = [v.baseline for v in gpuprims.variants(family)]
    assert roles == sorted(roles), roles  # journey steps first, then the baselines


# ------------------------------------------------- the Family registry

def test_families_are_the_cores_in_its_order():
    assert tuple(FAMILIES) == NAMES
    for name, fam in FAMILIES.items():
        assert fam.name == name and fam.auto.auto and fam.library.library
        assert fam.sized_by in ("n", "shape")
        assert fam.input_shape(fam.default_size) and fam.input_shape(fam.emulated_size)


def test_unknown_family_everywhere():
    for call in (lambda: gpuprims.variants("sort"), lambda: gpuprims.trace("sort", "x", np.ones(2)),
                 lambda: gpuprims._family.get("sort")):
        with pytest.raises(ValueError, match="unknown family 'sort'"):
            call()


def _family_literals(path):
    """(line, text) of each comparison with a family name and each family
    name used as a dict key: branching on a family's name."""
    tree = ast.parse(path.read_text())
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for c in [node.left, *node.comparators]:
                elts = c.elts if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else [c]
                if any(isinstance(e, ast.Constant) and e.value in NAMES for e in elts):
                    hits.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value in NAMES for k in node.keys):
                hits.append((node.lineno, ast.unparse(node)[:60]))
    return hits


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_module_branches_on_a_family_name(path):
    own = [name for name, module in OWN_MODULE.items() if module == path.name]
    hits = [(line, text) for line, text in _family_literals(path)
            if not any(f'"{name}"' in text or f"'{name}'" in text for name in own)]
    assert hits == [], f"{path.name} branches on a family's name: {hits}"
    source = path.read_text()
    for name in NAMES:
        if name not in own:
            for op in ("==", "!="):
                assert f'{op} "{name}"' not in source and f"{op} '{name}'" not in source, (path.name, name)


# --------------------------------------------------- one crossing a call

@pytest.fixture
def crossings(monkeypatch):
    """Every function of the compiled core, wrapped to count its calls.
    The first emulated kernel of a process calls back once into Python
    (the EmulatorWarning's check, _backend._first_emulated_launch), which
    reads the backend from the core: a one-time crossing, made here before
    counting, so the counts do not depend on which test ran first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gpuprims.sum(np.random.default_rng(0).random(5).astype(np.float32))
    counts = {}

    def wrap(name, fn):
        def counted(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return fn(*args, **kwargs)
        return counted

    for name in dir(_core):
        fn = getattr(_core, name)
        if callable(fn) and not isinstance(fn, type) and not name.startswith("_"):
            monkeypatch.setattr(_core, name, wrap(name, fn))
    return counts


def test_sum_of_a_numpy_array_is_one_call_into_the_core(crossings):
    x = np.random.default_rng(1).random(10_001).astype(np.float32)
    got = gpuprims.sum(x)
    assert crossings == {"call": 1}
    assert abs(float(got) - float(np.sum(x, dtype=np.float64))) < 1e-2


@pytest.mark.parametrize("run", [lambda x: gpuprims.cumsum(x), lambda x: gpuprims.max(x),
                                 lambda x: gpuprims.transpose(x.reshape(73, 137)),
                                 lambda x: gpuprims.sum(x[::2])],
                         ids=["cumsum", "max", "transpose", "strided_sum"])
def test_numpy_in_numpy_out_is_one_call_into_the_core(crossings, run):
    x = np.random.default_rng(2).random(73 * 137)
    out = run(x)
    assert crossings == {"call": 1}
    assert not isinstance(out, gpuprims.DeviceArray)


def test_sum_of_a_device_array_is_one_call_into_the_core(monkeypatch):
    d = gpuprims.to_device(np.arange(1000, dtype=np.int64))
    assert gpuprims.sum(d) == 499500  # parsed once
    calls = []
    real = _core.call
    monkeypatch.setattr(_core, "call", lambda *a: calls.append(a[:2]) or real(*a))
    assert gpuprims.sum(d) == 499500 and gpuprims.sum(d) == 499500
    assert calls == [("reduce", gpuprims._registry.lookup("reduce", "auto").index)] * 2
