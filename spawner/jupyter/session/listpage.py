"""The page that lists what a session runs (its TensorBoards, its apps) with a Stop button each (pure)."""

from __future__ import annotations

import html

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - DS Portal</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:50rem}}td{{padding:.4rem .8rem}}
button{{padding:.3rem .9rem}}</style></head>
<body><h1>{heading}</h1>
<table aria-label="{heading}"><tbody>{rows}</tbody></table>
<p>{note}</p>
<script>
document.querySelectorAll("button[data-id]").forEach(function (b) {{
  b.addEventListener("click", function () {{
    fetch("{api}/" + b.dataset.id, {{method: "DELETE", headers: {{"X-XSRFToken": "{xsrf}"}}}})
      .then(function () {{ location.reload(); }});
  }});
}});
</script></body></html>
"""


def running_page(title: str, heading: str, rows: str, note: str, api: str, xsrf: str) -> str:
    """The page: `rows` (table rows, HTML, each with a button whose data-id DELETE at `api`/ID stops it), the
    texts as plain words, `api` and `xsrf` escaped here."""
    return PAGE.format(
        title=html.escape(title),
        heading=html.escape(heading),
        rows=rows,
        note=html.escape(note),
        api=html.escape(api),
        xsrf=html.escape(xsrf),
    )
