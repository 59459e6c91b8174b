"""The report helper shared by fitting and playtesting: one HTML page, PNG plots, data files.

`write_report(out_dir, title, sections, data)` writes `out_dir/report.html` (no external
CSS, script or font: it opens from a file or a web server alike), one PNG per matplotlib
figure beside it, and the data as JSON or CSV files. Every file is written atomically, so a
reader never sees half a report. Sections are plain data:

    {"heading": "Results",
     "text": "Paragraphs separated by blank lines (plain text, escaped).",
     "table": {"columns": ["persona", "win rate"], "rows": [["champion", 0.61]]},
     "figures": [(fig, "win_rates", "Win rate with 95 % intervals")]}
"""
from __future__ import annotations

import csv
import datetime as _dt
import gzip
import io
import json
import math
import os
import shlex
import sys
from pathlib import Path

import jinja2
import matplotlib

matplotlib.use("Agg")  # reports are written by servers and batch jobs: never a screen
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402  (Pillow comes with matplotlib)

from agent.matchlog import atomic_write_bytes, atomic_write_packed  # noqa: E402

_PAGE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string("""\
<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
 body { font: 15px/1.45 system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
 h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
 table { border-collapse: collapse; margin: .8rem 0; font-variant-numeric: tabular-nums; }
 th, td { border: 1px solid #ccc; padding: .25rem .6rem; text-align: right; }
 th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
 figure { margin: 1rem 0; } figure img { max-width: 100%; border: 1px solid #eee; }
 figcaption { color: #555; font-size: .9rem; } code { background: #f5f5f5; padding: 0 .2rem; }
 .meta { color: #666; font-size: .9rem; } .files a { margin-right: .8rem; }
</style></head><body>
<h1>{{ title }}</h1>
<p class="meta">Made {{ made }}{% if command %} by <code>{{ command }}</code>{% endif %}</p>
{% for p in intro %}<p>{{ p }}</p>{% endfor %}
{% for s in sections %}
<section><h2>{{ s.heading }}</h2>
{% for p in s.paragraphs %}<p>{{ p }}</p>{% endfor %}
{% if s.table %}<table><thead><tr>{% for c in s.table.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in s.table.rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</tbody></table>{% endif %}
{% for f in s.figures %}<figure><img src="{{ f.file }}" alt="{{ f.caption }}"><figcaption>{{ f.caption }}</figcaption></figure>{% endfor %}
</section>
{% endfor %}
{% if files %}<h2>Data</h2><p class="files">{% for f in files %}<a href="{{ f }}">{{ f }}</a>{% endfor %}</p>{% endif %}
</body></html>
""")


def command_line(argv: list[str] | None = None) -> str:
    """The command that made this report, as a user would type it from the project folder
    (the console script by its name, absolute paths made relative to the current folder)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    head = argv[0]
    if Path(head).name == "ggp-persona" or head.endswith(os.sep + "agent" + os.sep + "cli.py"):
        words = ["ggp-persona"]
    else:
        words = ["python", _relative(head)]
    words += [_relative(a) for a in argv[1:]]
    return shlex.join(words)


def _relative(arg: str) -> str:
    if os.path.isabs(arg):
        try:
            return os.path.relpath(arg)
        except ValueError:
            return arg
    return arg


def format_cell(x) -> str:
    """Numbers to a readable precision; everything else as text."""
    if isinstance(x, bool) or x is None:
        return "" if x is None else str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "–"
        if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
            return f"{x:.3g}"
        return f"{x:.3f}".rstrip("0").rstrip(".") if abs(x) < 100 else f"{x:.1f}"
    return str(x)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return compact_png(buf.getvalue())


def compact_png(data: bytes) -> bytes:
    """A plot's PNG with a palette of at most 256 colours (exact when the plot has no more;
    else the nearest, without dithering: only anti-aliased edges change shade), about a
    third of the size of matplotlib's true-colour file (issue 53 keeps report folders under
    1 MB, and a playtest report holds a dozen plots).  Data that is not a PNG is returned
    as it is."""
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception:           # noqa: BLE001 - not an image: leave it alone
        return data
    if img.mode == "P":
        return data
    rgb = img.convert("RGB")
    if rgb.getcolors(256) is not None:
        pal = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=256)
    else:
        pal = rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    pal.save(out, format="PNG", optimize=True)
    return out.getvalue() if out.tell() < len(data) else data


def _data_bytes(name: str, value) -> bytes:
    if name.endswith(".csv"):
        rows = list(value)
        buf = io.StringIO()
        if rows:
            columns = list(rows[0].keys())
            for r in rows[1:]:
                columns += [k for k in r if k not in columns]
            w = csv.DictWriter(buf, fieldnames=columns)
            w.writeheader()
            w.writerows(rows)
        return buf.getvalue().encode()
    if name.endswith(".json"):
        return (json.dumps(value, indent=1, default=_jsonable) + "\n").encode()
    raise ValueError(f"report data file {name!r}: the name must end in .json or .csv")


# A data table larger than this is written gzip-compressed, as NAME.gz: a fit's per-decision
# table reached 1.4 MB a report (issue 53 keeps report folders under 1 MB); ``open_table``
# reads either form.
COMPRESS_BYTES = 200_000


def open_table(folder, name: str):
    """The data file ``name`` of a report folder opened as text (its compressed ``name.gz``
    where that is what the report holds), or None when the report has neither."""
    plain, packed = Path(folder) / name, Path(folder) / (name + ".gz")
    if packed.is_file():
        return gzip.open(packed, "rt", encoding="utf-8", newline="")
    if plain.is_file():
        return plain.open(encoding="utf-8", newline="")
    return None


def _jsonable(x):
    if hasattr(x, "tolist"):  # numpy scalars and arrays
        return x.tolist()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def write_report(out_dir, title: str, sections: list[dict], data: dict | None = None,
                 intro: str = "", command: str | None = None) -> Path:
    """Write report.html, its PNGs and data files into out_dir; returns the page's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rendered = []
    used: set[str] = set()
    for s in sections:
        if "heading" not in s:
            raise ValueError("every report section needs a heading")
        figures = []
        for fig, stem, caption in s.get("figures", ()):
            name = f"{stem}.png"
            if name in used:
                raise ValueError(f"two figures are both named {name}")
            used.add(name)
            atomic_write_bytes(out / name, _png(fig))
            figures.append({"file": name, "caption": caption})
        table = s.get("table")
        if table is not None:
            table = {"columns": list(table["columns"]),
                     "rows": [[format_cell(c) for c in row] for row in table["rows"]]}
        rendered.append({"heading": s["heading"], "paragraphs": _paragraphs(s.get("text", "")),
                         "table": table, "figures": figures})
    files = []
    for name, value in (data or {}).items():
        if "/" in name or name.startswith("."):
            raise ValueError(f"report data file {name!r}: a plain file name is needed")
        written = atomic_write_packed(out / name, _data_bytes(name, value),
                                      COMPRESS_BYTES if name.endswith(".csv") else None)
        files.append(written.name)
    html = _PAGE.render(title=title, intro=_paragraphs(intro), sections=rendered, files=files,
                        command=command_line() if command is None else command,
                        made=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    page = out / "report.html"
    atomic_write_bytes(page, html.encode())
    return page


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
