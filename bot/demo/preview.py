"""The demo's outputs: the posted comment as Markdown, and an HTML preview of it with the chart."""
from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from bot.core import stage_markers
from bot.core.messages import msg

STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", Helvetica, Arial, sans-serif;
       max-width: 1012px; margin: 24px auto; color: #1f2328; padding: 0 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; }
.comment > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; }
.comment > article { padding: 16px; }
table { border-collapse: collapse; margin: 8px 0; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; word-break: keep-all; overflow-wrap: normal; }
th { white-space: nowrap; }
tr:nth-child(2n) { background: #f6f8fa; }
code { background: #eff1f3; border-radius: 4px; padding: 1px 4px; font-size: 85%; }
pre { background: #f6f8fa; padding: 12px; overflow: auto; border-radius: 6px; }
details { margin: 8px 0; }
.check { margin: 16px 0; padding: 8px 16px; border-radius: 6px; border: 1px solid #d1d9e0; }
.check.success { border-color: #1a7f37; } .check.failure { border-color: #d1242f; }
.chart img { max-width: 100%; border: 1px solid #d1d9e0; border-radius: 6px; }
pre.mermaid { background: none; text-align: center; }
"""
MERMAID_PACKAGE = "mermaid"
REPO_ROOT = Path(__file__).resolve().parents[2]
_MERMAID_FENCE = re.compile(r'<pre><code class="language-mermaid">(.*?)</code></pre>', re.S)
# The page has no language switch: the note is in both languages, one after the other.
NO_MERMAID = msg("The chart block stays as code: mermaid is not installed "
                 "(<code>scripts/setup-upstream.sh</code> installs it).")


def mermaid_script(upstream: Path | None = None) -> str | None:
    """mermaid's browser bundle, from the pinned npm package in .upstream/; None when not installed.
    upstream: where scripts/setup-upstream.sh installed the pinned npm packages, RECIPE_BOT_UPSTREAM_DIR as
    the command read it (the sandbox reads its own copy of the variable: it does not import the bot)."""
    upstream = upstream or REPO_ROOT / ".upstream"
    bundle = upstream / "node_modules" / MERMAID_PACKAGE / "dist" / "mermaid.min.js"
    return bundle.read_text(encoding="utf-8") if bundle.is_file() else None


def _diagrams(body: str, script: str | None) -> tuple[str, str]:
    """```mermaid blocks drawn as GitHub draws them: the bundle inlined, so the page works offline."""
    if script is None or not _MERMAID_FENCE.search(body):
        note = (f'<p class="note">{NO_MERMAID.render("en")} {NO_MERMAID.render("zh")}</p>'
                if _MERMAID_FENCE.search(body) else "")
        return body + note, ""
    body = _MERMAID_FENCE.sub(lambda m: f'<pre class="mermaid">{m.group(1)}</pre>', body)
    inline = script.replace("</script", "<\\/script")  # the bundle must not end its own <script> element
    return body, (f"<script>{inline}</script>\n"
                  "<script>mermaid.initialize({startOnLoad: true, securityLevel: 'strict'});</script>")


def render_html(comment: str, check: dict[str, Any], chart_png: bytes | None, mermaid_js: str | None = None) -> str:
    """A GitHub-like page: the check verdict, the comment (HTML inside it kept, as GitHub does), the chart."""
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(stage_markers.strip_report_marker(comment))
    body, scripts = _diagrams(body, mermaid_js)
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
        f"<article>{body}</article></div>\n{chart}\n{scripts}</body></html>\n")


def write_preview(out_dir: Path, comment: str, check: dict[str, Any], chart: Path,
                  upstream: Path | None = None) -> dict[str, Path]:
    chart_png = chart.read_bytes() if chart.is_file() else None
    files = {
        "comment": out_dir / "comment.md",
        "check": out_dir / "check-run.json",
        "preview": out_dir / "preview.html",
    }
    files["comment"].write_text(comment, encoding="utf-8")
    files["check"].write_text(json.dumps(check, indent=2), encoding="utf-8")
    files["preview"].write_text(render_html(comment, check, chart_png, mermaid_script(upstream)), encoding="utf-8")
    if chart_png:
        files["chart"] = out_dir / "chart.png"
        files["chart"].write_bytes(chart_png)
    return files
