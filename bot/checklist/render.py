"""The verdict as text: the per-SHA marker, the bilingual comment, and the check run's title and summary."""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from bot.core import i18n
from bot.core.stage_markers import sign_off_marker
from bot.checklist.rules import Check, Source

CHECK_NAME = "recipe-bot / sign-off"
SUMMARY_LIMIT = 60000


def digest(text: str) -> str:
    """Which text of a sign-off a verdict judged: an edit is a new sign-off, the same text is not."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Verdict:
    state: str  # success | failure | waiting
    sha: str
    source: Source | None = None
    lang: str = "en"
    checks: tuple[Check, ...] = ()
    notes: tuple[dict[str, Any], ...] = ()
    template: str = ""

    def context(self) -> dict[str, Any]:
        return {"state": self.state, "sha": self.sha, "signoff_lang": self.lang, "template": self.template,
                "source": dataclasses.asdict(self.source) if self.source else None,
                # shallow: a check's values may be catalogue messages, which asdict would take apart
                "checks": [{f.name: getattr(c, f.name) for f in dataclasses.fields(c)} for c in self.checks],
                "notes": list(self.notes)}

    @property
    def stale(self) -> bool:
        return any(n["code"] == "stale" for n in self.notes)


def comment(verdict: Verdict, source_key: str, digest: str) -> str:
    return sign_off_marker(verdict.sha, source_key, digest) + "\n" + i18n.render_bilingual("checklist/verdict", **verdict.context()) + "\n"


def title(verdict: Verdict) -> str:
    context = {"state": verdict.state, "author": verdict.source.author if verdict.source else "",
               "failed": [c.name for c in verdict.checks if c.status == "fail"] or ["sign-off"],
               "stale": verdict.stale}
    return " / ".join(i18n.render("checklist/check-title", lang, **context) for lang in i18n.LANGUAGES)[:1000]


def summary(verdict: Verdict) -> str:
    text = i18n.render_bilingual("checklist/verdict", **verdict.context())
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 20] + "\n\n… (shortened)"
