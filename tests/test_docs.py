"""The README's journey tables are generated from the registry
(tools/gen_docs.py) and kept in step with it.  Runs anywhere: the registry
is readable on the emulator-only build, no GPU needed."""
import importlib.util
import re
from pathlib import Path

import pytest

import gpuprims

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _load_gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _load_gen_docs()


def test_readme_tables_are_what_the_registry_generates():
    text = README.read_text()
    new = gen_docs.generate(text, gpuprims)
    assert new == text, ("README.md's journey tables differ from the registry; run "
                         "`python tools/gen_docs.py`:\n" + gen_docs.diff(text, new))


def test_every_family_has_a_block_listing_its_variants_in_order():
    found = gen_docs.blocks(README.read_text())
    assert list(found) == list(gpuprims._core.families())
    for family, block in found.items():
        names = re.findall(r"^\| [^|]+ \| `(\w+)`", block, re.M)
        assert names == [v.name for v in gpuprims.variants(family)], family


def test_no_hand_kept_variant_table_outside_the_blocks():
    """A table row outside the generated blocks must not start with a
    variant's name: a table that lists variants is the generated one."""
    text = gen_docs.BLOCK.sub("", README.read_text())
    names = {v.name for f in gpuprims._core.families() for v in gpuprims.variants(f)}
    rows = [line for line in text.splitlines()
            if re.match(r"\|\s*`(\w+)`", line) and re.match(r"\|\s*`(\w+)`", line).group(1) in names]
    assert not rows, rows


def test_generate_reports_a_missing_or_unknown_block():
    text = README.read_text()
    without = text.replace("<!-- journey:scan:begin -->", "").replace("<!-- journey:scan:end -->", "")
    with pytest.raises(ValueError, match="no block for scan"):
        gen_docs.generate(without, gpuprims)
    extra = text + "\n<!-- journey:sort:begin -->\n<!-- journey:sort:end -->\n"
    with pytest.raises(ValueError, match="unknown family: sort"):
        gen_docs.generate(extra, gpuprims)


def test_check_mode_fails_on_a_stale_readme(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| 1 | `", "| 1 | `stale", 1))
    assert gen_docs.main(["--check", "--readme", str(stale)]) == 1
    assert "run python tools/gen_docs.py" in capsys.readouterr().err
    assert gen_docs.main(["--readme", str(stale)]) == 0  # rewrites it
    assert gen_docs.main(["--check", "--readme", str(stale)]) == 0
    assert stale.read_text() == README.read_text()


@pytest.mark.parametrize("text, cell", [
    ("reduceCompleteUnroll<blockSize>", "`reduceCompleteUnroll<blockSize>`"),
    ("One thread, <<<1, 1>>>", "One thread, `<<<1, 1>>>`"),
    ("__shfl_down_sync (a|b)", "`__shfl_down_sync` (a\\|b)"),
    ("cub::DeviceScan::InclusiveSum, see bench/tune_scan.cu", "`cub::DeviceScan::InclusiveSum`, see `bench/tune_scan.cu`"),
    ("x < y *and* z", "x &lt; y \\*and\\* z"),
])
def test_registry_text_becomes_one_safe_markdown_cell(text, cell):
    assert gen_docs.inline(text) == cell
