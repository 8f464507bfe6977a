"""The demo's own parts: the sample PR, the environment checks and the HTML preview (seen in Chromium)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.cli import main
from bot.demo import sample
from bot.core.settings import load_settings
from bot.demo.preview import mermaid_script, render_html, write_preview
from tests import synthetic

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "out" / "test-artifacts"


def report_for(scenario, tmp_path):
    """A real report, rendered by `recipe-bot report` from a deterministic scenario."""
    paths = synthetic.materialize(scenario, tmp_path)
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--results", str(paths["results"]), "--jobs", str(paths["plan"]),
                                       "--baseline", str(paths["baseline"]), "--out", str(out),
                                       "--sha", synthetic.HEAD_SHA])
    assert (out / "comment.md").is_file(), result.output
    return (out / "comment.md").read_text(encoding="utf-8"), out / "chart.png"


def test_sample_pr_changes_one_value_of_the_tiny_recipe():
    before = yaml.safe_load(sample.main_files()["recipes/tiny-cpu.yaml"])
    after = yaml.safe_load(sample.feature_files()["recipes/tiny-cpu.yaml"])
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    assert changed == {"workload"}
    assert before["workload"]["osl"] != after["workload"]["osl"]


def test_sample_config_makes_the_sandbox_bot_the_only_marker_author():
    config = yaml.safe_load(sample.main_files()[".github/recipe-bot.yaml"])
    assert config["bot_login"] == sample.BOT_LOGIN
    assert sample.seed_overrides()["users"][sample.MAINTAINER] in ("admin", "maintain", "write")


def test_demo_without_an_engine_says_how_to_install_it(tmp_path):
    env = {**os.environ, "RECIPE_BOT_ENGINE_DIR": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"}
    env.pop("RECIPE_BOT_VLLM", None)
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "out")], env=env)
    assert result.exit_code != 0
    assert "no vLLM engine found" in result.output
    assert "scripts/setup-cpu-engine.sh" in result.output
    assert not (tmp_path / "out").exists()


def test_demo_names_a_port_that_is_taken(tmp_path):
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        model = tmp_path / "model"
        model.mkdir()
        (model / "config.json").write_text("{}")
        env = {**os.environ, "RECIPE_BOT_VLLM": "/bin/true"}
        result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "out"), "--model", str(model),
                                           "--port", str(port)], env=env)
    assert result.exit_code != 0
    assert f"port {port}" in result.output and "taken" in result.output


def test_preview_shows_the_verdict_both_languages_and_the_chart(tmp_path):
    comment, chart = report_for(synthetic.passing_sweep(), tmp_path)
    check = {"name": "recipe-bot / benchmarks", "conclusion": "success", "head_sha": synthetic.HEAD_SHA,
             "title": "all passed"}
    page = render_html(comment, check, chart.read_bytes())
    assert "success" in comment.split("\n", 3)[1]
    assert "<table>" in page
    assert "recipe-bot / benchmarks</strong>: success" in page
    assert "简体中文" in comment or any("\u4e00" <= ch <= "\u9fff" for ch in page)
    assert 'src="data:image/png;base64,' in page
    assert "recipe-bot:report" not in page  # the hidden marker is not shown


def test_the_preview_draws_mermaid_blocks_with_the_inlined_bundle(tmp_path):
    comment, chart = report_for(synthetic.passing_sweep(), tmp_path)
    check = {"name": "recipe-bot / benchmarks", "conclusion": "success", "head_sha": synthetic.HEAD_SHA}
    page = render_html(comment, check, chart.read_bytes(), mermaid_js="window.mermaid = {}; // </script> inside")
    assert '<pre class="mermaid">' in page and "xychart-beta" in page
    assert 'class="language-mermaid"' not in page
    assert "<\\/script> inside" in page and page.count("</script>") == 2  # the bundle cannot close its element
    assert "mermaid.initialize(" in page


def test_without_mermaid_installed_the_preview_keeps_the_block_as_code_and_says_why(tmp_path):
    comment, chart = report_for(synthetic.passing_sweep(), tmp_path)
    page = render_html(comment, {"name": "c", "conclusion": "success"}, None, mermaid_js=None)
    assert 'class="language-mermaid"' in page and "<script>" not in page
    assert "mermaid is not installed" in page and "未安装 mermaid" in page


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_preview_renders_in_headless_chromium_and_the_screenshot_is_kept(tmp_path):
    browser = chromium()
    if browser is None:
        if os.environ.get("RECIPE_BOT_CI"):
            pytest.fail("Chromium is required in CI (scripts/dev test installs Debian's chromium)")
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    comment, chart = report_for(synthetic.regression(), tmp_path)
    assert "failure" in comment.split("\n", 3)[1]
    files = write_preview(tmp_path, comment, {"name": "recipe-bot / benchmarks", "conclusion": "failure",
                                              "head_sha": synthetic.HEAD_SHA, "title": "regression"}, chart,
                          load_settings().UPSTREAM_DIR)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "demo-preview.png"
    shot.unlink(missing_ok=True)
    # Offline and with virtual time, so that mermaid has drawn the chart before the page is read.
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1100,2400",
             "--virtual-time-budget=20000"]
    subprocess.run([*flags, f"--screenshot={shot}", files["preview"].as_uri()],
                   check=True, capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # A blank page compresses to a few KB; a rendered comment with tables and a chart does not.
    assert len(data) > 50_000
    if mermaid_script(load_settings().UPSTREAM_DIR) is None:
        pytest.fail("mermaid is not installed in .upstream/: run scripts/setup-upstream.sh")
    dom = subprocess.run([*flags, "--dump-dom", files["preview"].as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    # Drawn as GitHub draws a ```mermaid block: an SVG xychart per language, no code left.
    assert dom.count('aria-roledescription="xychart"') == 2, dom[:2000]
    assert 'aria-roledescription="error"' not in dom and 'class="language-mermaid"' not in dom
