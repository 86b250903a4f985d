"""Table: what compare() and profile() return - rows of dicts that print as
text, render as HTML in a notebook, convert to dicts / JSON / markdown, and
plot as a bar chart (matplotlib, optional).

It holds data only; nothing here touches the GPU, so the formatting is
tested anywhere.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str  # the row dict's key
    header: str
    fmt: str = ""  # format spec for numbers ("" = str())
    align: str = ">"  # ">" right, "<" left


def _cell(row: dict, col: Column) -> str:
    v = row.get(col.key)
    if v is None or v == "":
        return ""
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf"
        if col.fmt:
            return format(v, col.fmt)
    elif isinstance(v, int) and col.fmt and not col.fmt.endswith("d"):
        return format(v, col.fmt)
    return str(v)


def _plain(v):
    """A JSON-safe value: non-finite floats become None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return _plain(v.item())
    return v


class Table:
    """Rows (dicts) with a title, display columns and metadata.

    A row with a "note" and no "median_ms" (a skipped variant) prints its
    note across the numeric columns.  ``str(t)`` is the text table,
    ``t.to_markdown()`` the same as markdown, ``t._repr_html_()`` what a
    notebook shows, ``t.to_dicts()`` / ``t.to_json()`` the data, and
    ``t.plot()`` a bar chart.  ``t["variant_name"]`` is that row.
    """

    def __init__(self, rows, columns, *, title: str = "", meta: dict | None = None,
                 footer: str = "", plot_key: str = "gbps", plot_label: str = "GB/s"):
        self.rows = [dict(r) for r in rows]
        self.columns = list(columns)
        self.title = title
        self.meta = dict(meta or {})
        self.footer = footer
        self.plot_key = plot_key
        self.plot_label = plot_label

    # -- access
    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, key):
        if isinstance(key, str):
            for r in self.rows:
                if r.get("variant") == key:
                    return r
            raise KeyError(key)
        return self.rows[key]

    def names(self) -> list:
        return [r.get("variant") for r in self.rows]

    # -- data
    def to_dicts(self) -> list:
        """The rows as plain dicts (every measured field, not only the shown ones)."""
        return [_plain(r) for r in self.rows]

    def to_json(self, **kwargs) -> str:
        """{"title", "meta", "columns", "rows"} as JSON (NaN and inf become null)."""
        doc = {"title": self.title, "meta": _plain(self.meta),
               "columns": [c.key for c in self.columns], "rows": self.to_dicts()}
        return json.dumps(doc, **kwargs)

    # -- text
    def _cells(self):
        out = []
        for r in self.rows:
            cells = [_cell(r, c) for c in self.columns]
            if r.get("note") and r.get("median_ms") is None and len(cells) > 1:
                cells = [cells[0], str(r["note"])] + [""] * (len(cells) - 2)
            out.append(cells)
        return out

    def __str__(self) -> str:
        heads = [c.header for c in self.columns]
        body = self._cells()
        width = [len(h) for h in heads]
        for cells in body:
            for i, s in enumerate(cells):
                # a skipped row's note spills over the empty cells after it
                if not (i == 1 and cells[2:] and not any(cells[2:])):
                    width[i] = max(width[i], len(s))

        def line(cells):
            parts = []
            spill = len(cells) > 2 and cells[1] and not any(cells[2:])
            if spill:
                return f"{cells[0]:<{width[0]}}  {cells[1]}"
            for i, (s, c) in enumerate(zip(cells, self.columns)):
                parts.append(f"{s:{c.align}{width[i]}}")
            return "  ".join(parts).rstrip()

        lines = [self.title] if self.title else []
        lines.append(line(heads))
        lines.append("  ".join("-" * w for w in width))
        lines += [line(c) for c in body]
        if self.footer:
            lines.append(self.footer)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def to_markdown(self) -> str:
        heads = [c.header for c in self.columns]
        lines = [f"{self.title}\n"] if self.title else []
        lines.append("| " + " | ".join(heads) + " |")
        lines.append("|" + "|".join("---" if c.align == "<" else "---:" for c in self.columns) + "|")
        for cells in self._cells():
            lines.append("| " + " | ".join(cells) + " |")
        if self.footer:
            lines.append(f"\n{self.footer}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = ["<div>"]
        if self.title:
            parts.append(f"<p><b>{esc(self.title)}</b></p>")
        parts.append("<table><thead><tr>")
        parts += [f'<th style="text-align:{"left" if c.align == "<" else "right"}">{esc(c.header)}</th>'
                  for c in self.columns]
        parts.append("</tr></thead><tbody>")
        for cells in self._cells():
            spill = len(cells) > 2 and cells[1] and not any(cells[2:])
            parts.append("<tr>")
            if spill:
                parts.append(f"<td>{esc(cells[0])}</td>"
                             f'<td colspan="{len(cells) - 1}" style="text-align:left">{esc(cells[1])}</td>')
            else:
                parts += [f'<td style="text-align:{"left" if c.align == "<" else "right"}">{esc(s)}</td>'
                          for s, c in zip(cells, self.columns)]
            parts.append("</tr>")
        parts.append("</tbody></table>")
        if self.footer:
            parts.append(f"<p>{esc(self.footer)}</p>")
        parts.append("</div>")
        return "".join(parts)

    # -- plot
    def plot(self, ax=None, key: str | None = None, label: str | None = None):
        """A horizontal bar per measured row (default: GB/s), rows in table
        order from the top; returns the matplotlib Axes.  Needs matplotlib
        (pip install matplotlib)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(
                "Table.plot needs matplotlib, which is not installed: pip install matplotlib "
                "(or pip install 'gpuprims[plot]')"
            ) from e
        key = key or self.plot_key
        label = label or self.plot_label
        rows = [r for r in self.rows if isinstance(r.get(key), (int, float)) and r.get(key) == r.get(key)]
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 0.35 * max(len(rows), 3) + 1))
        names = [str(r.get("variant")) for r in rows]
        values = [float(r[key]) for r in rows]
        colors = ["tab:gray" if r.get("baseline") else ("tab:red" if r.get("matches") is False else "tab:blue")
                  for r in rows]
        ax.barh(range(len(rows)), values, color=colors)
        ax.set_yticks(range(len(rows)), names)
        ax.invert_yaxis()
        ax.set_xlabel(label)
        if self.title:
            ax.set_title(self.title.splitlines()[0], fontsize=10)
        roof = self.meta.get("roof_gbps")
        if key == "gbps" and roof:
            ax.axvline(roof, color="k", linestyle="--", linewidth=1)
        return ax
