"""What a PR's diff adds: engine patches (patch files, git apply, sed on site-packages, monkey-patching) and images."""
from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class FileChange:
    filename: str
    status: str
    patch: str | None  # None when GitHub leaves it out (binary, too large)


@dataclasses.dataclass(frozen=True)
class Finding:
    path: str
    line: int | None  # line in the new file
    kind: str  # patch-file | git-apply | patch-command | site-packages | monkey-patch
    text: str


_ENGINES = r"(?:vllm|sglang|tensorrt_llm|flashinfer|transformers|torch|xformers)"
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("git-apply", re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(?:apply|am)\b")),
    ("patch-command", re.compile(r"(?:^|[\s;&|(])patch\s+(?:-\S+\s+)*-p\s?\d")),
    # "an in-place edit, later on the line site-packages": the atomic group settles on the first edit
    # (the one leaving the most line after it) instead of retrying every later one: a line of 20,000
    # `>` took 2.4 s, quadratic in a PR's own text; now one pass.
    ("site-packages", re.compile(r"^(?>.*?\b(?:sed|perl)\s+-\S*?i).*(?:site|dist)-packages"
                                 r"|^(?>.*?(?:>>?|\bcp\b|\bmv\b|\btee\b|\binstall\b)).*(?:site|dist)-packages/")),
    ("monkey-patch", re.compile(rf"^\s*(?:{_ENGINES})(?:\.\w+)+\s*=(?!=)"
                                rf"|\bsetattr\(\s*{_ENGINES}\b"
                                rf"|\b(?:mock\.)?patch(?:\.object)?\(\s*['\"]?{_ENGINES}\.")),
)
PATCH_FILES = re.compile(r"\.(?:patch|diff)$", re.I)
# `(?:-\s*)?`, not `-?\s*`: two blank runs side by side made a line of spaces quadratic (5.7 s for 20,000).
_IMAGE = re.compile(r"""(?:^\s*(?:-\s*)?(?:image|container_image|docker_image)\s*:\s*"""
                    r"""|^\s*FROM\s+(?:--\S+\s+)*)["']?([^\s"'#]+)""", re.I)


def added_lines(patch: str | None) -> list[tuple[int | None, str]]:
    """(new-file line, text) of each added line of a unified diff hunk text."""
    out: list[tuple[int | None, str]] = []
    line: int | None = None
    for raw in (patch or "").splitlines():
        if raw.startswith("@@"):
            match = re.search(r"\+(\d+)", raw)
            line = int(match.group(1)) if match else None
            continue
        if raw.startswith("+") and not raw.startswith("+++"):
            out.append((line, raw[1:]))
        if line is not None and not raw.startswith("-"):
            line += 1
    return out


def engine_patches(files: list[FileChange]) -> list[Finding]:
    found: list[Finding] = []
    for change in files:
        if change.status == "removed":
            continue
        if PATCH_FILES.search(change.filename):
            found.append(Finding(change.filename, None, "patch-file", change.filename))
            continue
        for line, text in added_lines(change.patch):
            for kind, rule in RULES:
                if rule.search(text):
                    found.append(Finding(change.filename, line, kind, text.strip()[:160]))
                    break
    return found


def unscanned(files: list[FileChange]) -> list[str]:
    """Files engine_patches would read but cannot: GitHub gives no patch (it shows the file as binary, or
    the diff is too large). One NUL byte makes a script binary, and bash still runs it: unknown, not clean."""
    return [change.filename for change in files
            if change.status != "removed" and change.patch is None and not PATCH_FILES.search(change.filename)]


def images(files: list[FileChange]) -> list[Finding]:
    found: list[Finding] = []
    for change in files:
        for line, text in added_lines(change.patch):
            match = _IMAGE.search(text)
            if match and ("/" in match.group(1) or ":" in match.group(1)) and "$" not in match.group(1):
                found.append(Finding(change.filename, line, "image", match.group(1)))
    return found


def registry_of(image: str) -> str:
    """docker.io/vllm/vllm-openai for vllm/vllm-openai:v0.9; docker.io/library/x for x (Docker's own defaults)."""
    name = image.split("@", 1)[0]
    parts = name.split("/")
    if len(parts) == 1 or not ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = ["docker.io", *(["library"] if len(parts) == 1 else []), *parts]
    if parts[0] in ("index.docker.io", "registry-1.docker.io", "hub.docker.com"):
        parts[0] = "docker.io"
    last = parts[-1].split(":", 1)[0]
    return "/".join([*parts[:-1], last]).lower()


def allowed(image: str, registries: list[str]) -> bool:
    full = registry_of(image)
    return any(full == r.lower() or full.startswith(r.lower().rstrip("/") + "/") for r in registries)
