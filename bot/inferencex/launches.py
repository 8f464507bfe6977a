"""What InferenceX rows cost: server launches (with and without packing), GPUs, GPU-hours, files they use."""
from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass

from bot.core.messages import Message, msg
from bot.inferencex.rowkeys import launch_key
from bot.inferencex.packing import verdict
from bot.inferencex.repo import InferenceXRepo

# Planning assumptions (seconds); InferenceX's own timeouts are far larger.
STARTUP_S = 900.0
FIXED_POINT_S = 600.0
EVAL_S = 1800.0
SHARED_FILES = ("benchmarks/benchmark_lib.sh",)
FRAMEWORK_TOKENS = {"sglang", "vllm", "trt", "atom", "dynamo", "tokenspeed", "llmd", "disagg"}


def is_eval(row: dict) -> bool:
    return bool(row.get("eval-only"))


def row_gpus(row: dict) -> int:
    if "prefill" in row:
        return sum(
            w["num-worker"] * w["tp"] * w.get("pp", 1) * w.get("pcp-size", 1) for w in (row["prefill"], row["decode"])
        )
    return row["tp"] * row.get("pp", 1) * row.get("pcp-size", 1)


def row_concurrencies(row: dict) -> list[int]:
    return list(row["conc"]) if isinstance(row["conc"], list) else [row["conc"]]


def eval_concurrencies(row: dict) -> list[int]:
    """The concurrencies an eval-only row's template runs its eval at, as InferenceX's sweep passes them
    (run-sweep.yml: `eval-conc: eval-all-concs && join(conc, ' ') || eval-conc`; benchmark-multinode-tmpl.yml:
    an empty eval-conc means the highest of the conc list): once, at the eval concurrency."""
    if row.get("eval-all-concs"):
        return row_concurrencies(row)
    given = row.get("eval-conc")
    if given not in (None, ""):
        return [int(c) for c in str(given).split()]
    return [max(row_concurrencies(row))]


def points_run(row: dict) -> int:
    """How many points the row's template runs: each listed concurrency, or an eval row's eval concurrencies."""
    return len(eval_concurrencies(row) if is_eval(row) else row_concurrencies(row))


def point_seconds(row: dict) -> float:
    if is_eval(row):
        return EVAL_S
    if row.get("scenario-type") == "agentic-coding":
        return float(row.get("duration", 3600))
    return FIXED_POINT_S


@dataclass
class LaunchGroup:
    """Rows that one server launch could serve: they differ only in concurrency."""

    config_key: str
    runner: str
    rows: list[dict]
    packs: bool = False  # whether one launch may serve every row (see bot/inferencex/packing.py)
    why: Message | str = ""

    @property
    def points(self) -> int:
        return sum(len(row_concurrencies(r)) for r in self.rows)

    @property
    def gpus(self) -> int:
        return row_gpus(self.rows[0])

    def gpu_hours(self, packed: bool) -> float:
        launches = 1 if packed and self.packs else len(self.rows)  # only an honest pack saves start-ups
        seconds = STARTUP_S * launches + sum(point_seconds(r) * points_run(r) for r in self.rows)
        return self.gpus * seconds / 3600.0


def launch_groups(rows: list[dict], key_of: dict[int, str], repo: InferenceXRepo | None = None
                  ) -> list[LaunchGroup]:
    """Throughput rows grouped by server configuration; eval and multi-node rows are launches of their own.

    With `repo`, each group of two or more rows says whether it may share one launch (honest packing)."""
    groups: dict[tuple | frozenset, LaunchGroup] = {}
    for index, row in enumerate(rows):
        own = is_eval(row) or "prefill" in row
        key = ("row", index) if own else launch_key(row)
        group = groups.get(key)
        if group is None:
            groups[key] = LaunchGroup(key_of[index], row["runner"], [row])
        else:
            group.rows.append(row)
    out = list(groups.values())
    for group in out:
        if len(group.rows) < 2:
            group.why = msg("eval or multi-node row: a launch of its own") if is_eval(group.rows[0]) or \
                "prefill" in group.rows[0] else msg("one point: nothing to pack")
        elif repo is not None:
            found = verdict(group.rows, scripts_for_row(repo, group.config_key, group.rows[0]),
                            {p: repo.launchers[p] for p in launcher_paths(repo, group.runner) if p in repo.launchers},
                            one_server=True)  # grouped by launch_key: equal but for the point's fields
            group.packs, group.why = found.packs, found.reason
    return out


def _scripts_in(repo: InferenceXRepo, directory: str) -> tuple[list[str], list[tuple[int, str, str]]]:
    """The scripts of one directory as sorted names and their (order, path, text), indexed once per repository:
    planning asks per server configuration, and the names sharing a stem are one slice of the sorted names."""
    index = repo.__dict__.setdefault("_scripts_by_dir", {})
    if not index:
        by_dir: dict[str, list[tuple[str, int, str, str]]] = {}
        for order, (path, text) in enumerate(repo.scripts.items()):
            folder, name = posixpath.split(path)
            by_dir.setdefault(folder, []).append((name, order, path, text))
        for folder, items in by_dir.items():
            items.sort()
            index[folder] = ([name for name, *_ in items], [(order, path, text) for _, order, path, text in items])
    return index.get(directory, ([], []))


def scripts_for_row(repo: InferenceXRepo, key: str, row: dict) -> dict[str, str]:
    """The benchmark scripts the fleet launcher may pick for this row (its scenario, its spec-decoding)."""
    config = repo.configs[key]
    agentic = row.get("scenario-type") == "agentic-coding"
    directory = "benchmarks/single_node/agentic" if agentic else "benchmarks/single_node/fixed_seq_len"
    mtp = row.get("spec-decoding") == "mtp"
    stem = f"{config['model-prefix']}_{config['precision']}_{_gpu_family(config['runner'])}"
    names, scripts = _scripts_in(repo, directory)
    found = []
    for index in range(bisect.bisect_left(names, stem), len(names)):
        name = names[index]
        if not name.startswith(stem):
            break  # sorted: no later name has this stem
        order, path, text = scripts[index]
        if _script_matches(config, path) and ("mtp" in re.split(r"[_.]", name)) == mtp:
            found.append((order, path, text))
    return {path: text for _, path, text in sorted(found)}  # in the repository's order, as a full scan gives


def fleets(repo: InferenceXRepo, runner_label: str) -> set[str]:
    """Runner-name prefixes (`b200-dgxc_03` → `b200-dgxc`): each picks `runners/launch_<fleet>.sh`."""
    return {name.split("_", 1)[0] for name in repo.labels.get(runner_label, [])}


def launcher_paths(repo: InferenceXRepo, runner_label: str) -> list[str]:
    return sorted(f"runners/launch_{fleet}.sh" for fleet in fleets(repo, runner_label))


def _gpu_family(runner_label: str) -> str:
    return runner_label.removeprefix("cluster:").split("-", 1)[0]


def _script_matches(config: dict, path: str) -> bool:
    directory, name = posixpath.split(path)
    if not name.endswith(".sh"):
        return False
    scenarios = config.get("scenarios", {})
    wanted_dirs = []
    if not config.get("multinode") and scenarios.get("fixed-seq-len"):
        wanted_dirs.append("benchmarks/single_node/fixed_seq_len")
    if not config.get("multinode") and scenarios.get("agentic-coding"):
        wanted_dirs.append("benchmarks/single_node/agentic")
    if directory not in wanted_dirs:
        return False
    stem = f"{config['model-prefix']}_{config['precision']}_{_gpu_family(config['runner'])}"
    if not (name == f"{stem}.sh" or name.startswith(f"{stem}_")):
        return False
    tokens = set(re.split(r"[_.]", name[len(stem):-3])) - {""}
    framework_tokens = tokens & FRAMEWORK_TOKENS
    if framework_tokens and config["framework"].split("-")[-1] not in framework_tokens:
        return False
    specs = {
        bmk.get("spec-decoding", "none")
        for scenario in scenarios.values() for block in scenario or [] for bmk in block["search-space"]
    }
    return ("mtp" in specs) if "mtp" in tokens else bool(specs - {"mtp"})


def _recipe_files(config: dict) -> set[str]:
    files = set()
    for scenario in config.get("scenarios", {}).values():
        for block in scenario or []:
            for bmk in block["search-space"]:
                for role in ("prefill", "decode", "worker"):
                    for setting in (bmk.get(role) or {}).get("additional-settings") or []:
                        if setting.startswith("CONFIG_FILE="):
                            target = setting.split("=", 1)[1]
                            if not target.startswith("benchmarks/"):
                                target = "benchmarks/multi_node/srt-slurm-recipes/" + target.removeprefix("recipes/")
                            files.add(target)
    return files


def names_file(repo: InferenceXRepo, key: str, path: str) -> bool:
    """Whether `path` is a file this config uses on its own (its benchmark script or srt-slurm recipe)."""
    config = repo.configs[key]
    return _script_matches(config, path) or path in _recipe_files(config)


def shared_reason(repo: InferenceXRepo, key: str, path: str) -> Message | None:
    """Why a change to `path` touches this config as shared infrastructure, if it does."""
    if path in SHARED_FILES:
        return msg("shared benchmark library %(path)s changed", path=path)
    if path in launcher_paths(repo, repo.configs[key]["runner"]):
        return msg("runner launch script %(path)s changed", path=path)
    return None
