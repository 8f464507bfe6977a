"""`/status` shows infrastructure failures per runner host, read back from the bot's own report
comments (the hidden second line the report writes); a look-alike from anyone else is ignored."""
from tests import synthetic
from bot.core.stage_markers import infra_record_line
from handle_helpers import BOT, bilingual

REPORT = f"<!-- recipe-bot:report sha={synthetic.HEAD_SHA} failures=- -->\n"
OLDER = f"<!-- recipe-bot:report sha={synthetic.BASE_SHA} failures=- -->\n"


def test_status_lists_infrastructure_failures_per_host_from_the_bots_reports(h):
    h.comment(7, BOT, OLDER + infra_record_line({"gpu-node-07": 1}) + "\n## an older commit's report")
    h.comment(7, BOT, REPORT + infra_record_line({"gpu-node-07": 1}) + "\n## the head's first report")
    h.comment(7, BOT, REPORT + infra_record_line({"gpu-node-07": 2, "gpu-host-3": 1}) + "\n## its latest")
    h.comment(7, "mallory", REPORT + infra_record_line({"gpu-node-01": 50}) + "\n## forged")
    h.on_comment(7, "mallory", "/status")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "| `gpu-node-07` | 3 |" in english and "| `gpu-host-3` | 1 |" in english
    assert english.index("gpu-node-07") < english.index("gpu-host-3")  # flakiest host first
    assert "gpu-node-01" not in english
    assert "基础设施失败" in chinese and "| `gpu-node-07` | 3 |" in chinese


def test_status_without_infrastructure_failures_shows_no_host_table(h):
    h.comment(7, BOT, REPORT + "## a passing report")
    h.on_comment(7, "mallory", "/status")
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "Infrastructure failures per runner host" not in english
