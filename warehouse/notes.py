"""What a table's numbers rest on, as lines of text: every distinct interval method once and every
row's warning, so that the terminal (``cli/warehouse.py``), the report and the viewer print them
under the table, where a reader sees them, rather than in a column a narrow screen hides."""

from __future__ import annotations

import textwrap


def table_notes(df, width: int | None = 100) -> list[str]:
    """Lines for the ``*method`` columns (each distinct value once, with how many rows use it when
    the rows differ) and the ``*warning`` columns (each warning once, with the leading values of
    the rows it is about), wrapped to ``width`` (None: one line each)."""
    keys = [c for c in df.columns[:5] if not c.endswith(("method", "warning")) and not df[c].dtype.is_float()][:4]
    lines: list[str] = []

    def add(text: str) -> None:
        lines.extend(textwrap.wrap(text, width, subsequent_indent="  ") if width else [text])

    for column in [c for c in df.columns if c.endswith("method")]:
        values = [v for v in df[column].to_list() if v]
        for value in dict.fromkeys(values):
            count = values.count(value)
            add(f"{column}: {value}" + (f" ({count} rows)" if count > 1 and len(values) > count else ""))
    for column in [c for c in df.columns if c.endswith("warning")]:
        rows: dict[str, list[str]] = {}
        for row in df.select(keys + [column]).iter_rows():
            if row[-1]:
                rows.setdefault(row[-1], []).append(" / ".join(str(v) for v in row[:-1] if v is not None))
        for text, where in rows.items():
            about = "every row" if len(where) == df.height > 1 else "; ".join(where)
            add(f"WARNING [{about}]: {text}")
    return lines
