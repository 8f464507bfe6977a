"""The demo's outputs: the posted comment as Markdown, and an HTML preview of it with the chart."""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from bot.report import marker

STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", Helvetica, Arial, sans-serif;
       max-width: 1012px; margin: 24px auto; color: #1f2328; padding: 0 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; }
.comment > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; }
.comment > article { padding: 16px; }
table { border-collapse: collapse; margin: 8px 0; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; }
tr:nth-child(2n) { background: #f6f8fa; }
code { background: #eff1f3; border-radius: 4px; padding: 1px 4px; font-size: 85%; }
pre { background: #f6f8fa; padding: 12px; overflow: auto; border-radius: 6px; }
details { margin: 8px 0; }
.check { margin: 16px 0; padding: 8px 16px; border-radius: 6px; border: 1px solid #d1d9e0; }
.check.success { border-color: #1a7f37; } .check.failure { border-color: #d1242f; }
.chart img { max-width: 100%; border: 1px solid #d1d9e0; border-radius: 6px; }
"""


def render_html(comment: str, check: dict[str, Any], chart_png: bytes | None) -> str:
    """A GitHub-like page: the check verdict, the comment (HTML inside it kept, as GitHub does), the chart."""
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(marker.strip(comment))
    verdict = check.get("conclusion") or check.get("status") or "pending"
    chart = ""
    if chart_png:
        encoded = base64.b64encode(chart_png).decode()
        chart = (f'<section class="chart"><h3>chart.png (artifact)</h3>'
                 f'<img alt="throughput per GPU against interactivity" src="data:image/png;base64,{encoded}"></section>')
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>recipe-bot demo: PR report</title><style>{STYLE}</style></head><body>\n"
        f'<div class="check {html.escape(verdict)}"><strong>{html.escape(check.get("name", "check"))}</strong>: '
        f'{html.escape(verdict)} on <code>{html.escape(check.get("head_sha", "")[:12])}</code>'
        f' &mdash; {html.escape(check.get("title") or "")}</div>\n'
        f'<div class="comment"><header><strong>recipe-bot[bot]</strong> commented</header>'
        f"<article>{body}</article></div>\n{chart}\n</body></html>\n")


def write_preview(out_dir: Path, comment: str, check: dict[str, Any], chart: Path) -> dict[str, Path]:
    chart_png = chart.read_bytes() if chart.is_file() else None
    files = {
        "comment": out_dir / "comment.md",
        "check": out_dir / "check-run.json",
        "preview": out_dir / "preview.html",
    }
    files["comment"].write_text(comment, encoding="utf-8")
    files["check"].write_text(json.dumps(check, indent=2), encoding="utf-8")
    files["preview"].write_text(render_html(comment, check, chart_png), encoding="utf-8")
    if chart_png:
        files["chart"] = out_dir / "chart.png"
        files["chart"].write_bytes(chart_png)
    return files
