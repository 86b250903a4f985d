"""What the benchmark scripts share: writing a result table where it is kept."""
import json
import os
import re
from pathlib import Path


def save_results(family, info, date, parts, data):
    """Write the markdown `parts` to bench/results/<family>-<gpu>-<date>.md
    (a copy, and `data` as JSON, under $OUT when set) and return the exit
    status: 1 if any row's result did not match NumPy."""
    slug = re.sub(r"[^a-z0-9]+", "-", info["name"].lower()).strip("-")
    text = "\n".join(parts) + "\n"
    out = Path(__file__).resolve().parent / "results" / f"{family}-{slug}-{date}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out.name).write_text(text)
        Path(os.environ["OUT"], out.with_suffix(".json").name).write_text(json.dumps(data, indent=1))
    bad = [r["variant"] for t in data["tables"] for r in t["rows"] if r.get("matches") is False]
    if bad:
        print("MISMATCH:", bad)
        return 1
    return 0
