"""The recipe format: shipped recipes validate and say what they must; broken ones get one located error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.recipes import RecipeError
from bot.inferencex.catalog import load_catalog
from bot.recipes.schema import E2ESuite, SweepRecipe
from bot.recipes.yamlsrc import load_yaml

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [
    "gpu-smoke-e2e", "gpu-smoke-vllm", "qwen3.5-122b-a10b-afd", "qwen3.5-397b-fp4-b200-sglang-mtp-agentx",
    "tiny-cpu", "tiny-cpu-e2e",
]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT, inferencex=False)


def test_every_shipped_recipe_validates(catalog):
    assert set(SHIPPED) <= set(catalog.names())


def test_tiny_cpu_is_a_packable_sweep_of_at_least_six_points_on_the_cpu_runner(catalog):
    recipe = catalog.entries["tiny-cpu"].recipe
    assert isinstance(recipe, SweepRecipe)
    assert recipe.runner == "cpu" and recipe.engine.name == "vllm"
    assert not recipe.launch.depends_on_concurrency
    assert len(recipe.arm_concurrency(recipe.search_space[0])) >= 6
    assert recipe.model.path == "${RECIPE_BOT_TINY_MODEL}" and recipe.model.served_name == "tiny"
    assert {"--max-model-len", "--distributed-executor-backend", "--enforce-eager"} <= set(recipe.launch.args)
    assert recipe.launch.env == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    assert recipe.workload.isl == 128 and recipe.workload.osl <= 64
    assert recipe.workload.prompts(32) <= 64  # a point takes seconds on two cores


def test_tiny_cpu_e2e_runs_a_small_gsm8k_with_a_zero_threshold(catalog):
    suite = catalog.entries["tiny-cpu-e2e"].recipe
    assert isinstance(suite, E2ESuite)
    gate = suite.accuracy
    assert (gate.num_samples, gate.num_shots, gate.threshold) == (5, 2, 0.0)
    assert gate.max_tokens <= 64


def test_afd_suite_runs_afd_plugins_own_node_ids_and_restates_nothing(catalog):
    suite = catalog.entries["qwen3.5-122b-a10b-afd"].recipe
    assert isinstance(suite, E2ESuite)
    assert [c.name for c in suite.cases] == ["baseline-eager", "afd-eager-4a4f"]
    assert [c.node for c in suite.cases] == [
        f"tests/e2e/models/qwen3_5/test_qwen3_5_122b.py::test_qwen3_5_122b[{c.name}]" for c in suite.cases]
    assert all(not c.servers for c in suite.cases) and suite.accuracy is None  # the harness runs lm-eval
    assert suite.engine.version == "0.26.0" and suite.model.path == "${AFD_GPU_E2E_MODEL}"
    assert suite.required_env == ["AFD_E2E_BACKEND=gpu", "AFD_E2E_LARGE_MODEL=1", "AFD_GPU_E2E_MODEL",
                                  "AFD_E2E_DEVICES"]
    assert set(suite.unset_env) == {"VLLM_MOE_ROUTING_SIMULATION_STRATEGY", "AFD_BENCHMARK_FORCE_LB_TOPN_PER_RANK"}
    assert suite.manual and "E2E-INV-002" in suite.manual  # out of the required gate
    harness = suite.harness
    assert harness.ports == [8000, 8001, 1239] and harness.devices == 8
    assert harness.opt_in.device_count == 8 and harness.opt_in.model_dir_env == "AFD_GPU_E2E_MODEL"
    assert ["python", "-m", "pip", "install", "lm_eval[api]==0.4.12"] in harness.setup
    # The comparison: native DP8 against AFD 4A4F on the same eight GPUs; AFD's sync connector starts FFN first.
    native, afd = suite.compare.arms
    assert native.servers[0].devices == list(range(8))
    assert [s.name for s in afd.servers] == ["ffn", "attention"]
    assert all("P2pNcclAFDConnector" in " ".join(s.args) for s in afd.servers)
    assert all("--enable-expert-parallel" in s.args for s in afd.servers)
    assert suite.launch.env["HF_HUB_OFFLINE"] == "1"  # never downloads


def test_agentx_recipe_matches_the_inferencex_entry(catalog):
    recipe = catalog.entries["qwen3.5-397b-fp4-b200-sglang-mtp-agentx"].recipe
    assert recipe.engine.name == "sglang" and recipe.model.precision == "fp4"
    arms = {arm.label: (arm.tp, arm.kv_offload, recipe.arm_concurrency(arm)) for arm in recipe.search_space}
    assert arms == {
        "tp4": (4, "none", [1, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 60, 62, 64]),
        "tp4-hicache": (4, "dram", [64, 66, 68, 70, 72]),
        "tp2": (2, "none", [1, 4, 8, 12, 14]),
        "tp2-hicache": (2, "dram", [16, 18, 20, 22, 24, 28, 32]),
    }
    assert recipe.launch.env["SGLANG_SIMULATE_ACC_LEN"] == "3.39"
    assert "NEXTN" in recipe.launch.args
    assert recipe.workload.dataset == "trace" and recipe.workload.trace.endswith("256k")
    assert recipe.accuracy.separate_launch and "SGLANG_SIMULATE_ACC_LEN" in recipe.accuracy.drop_env


def test_gpu_smoke_recipes_use_dummy_weights_and_share_devices_in_order(catalog):
    sweep = catalog.entries["gpu-smoke-vllm"].recipe
    assert sweep.engine.version == "0.26.0" and "dummy" in sweep.launch.args
    assert sweep.arm_concurrency(sweep.search_space[0]) == [1, 16, 64]
    assert (sweep.workload.isl, sweep.workload.osl) == (1024, 128)
    suite = catalog.entries["gpu-smoke-e2e"].recipe
    assert [c.name for c in suite.cases] == ["dp2", "side-by-side"]
    assert [s.devices for s in suite.cases[0].servers] == [[0, 1]]
    assert [s.devices for s in suite.cases[1].servers] == [[0], [1]]
    assert suite.accuracy.num_samples == 7 and suite.accuracy.threshold == 0.0


# ---- broken recipes: one error, naming the file, the line and the field ---------------------------

GOOD = """\
include: _base/tiny-cpu.yaml
name: broken
kind: sweep
concurrency: [1, 2]
search_space:
  - name: tp1
    tp: 1
workload:
  dataset: random
  isl: 128
  osl: 32
  num_prompts: 8
"""


def _repo_with(tmp_path: Path, text: str, name: str = "broken") -> Path:
    shutil.copytree(ROOT / "recipes" / "_base", tmp_path / "recipes" / "_base")
    shutil.copy(ROOT / "recipes" / "_runners.yaml", tmp_path / "recipes" / "_runners.yaml")
    (tmp_path / "recipes" / f"{name}.yaml").write_text(text)
    return tmp_path


BROKEN = [
    # (id, replace this, with this, file, line, field, words in the message, an accepted value)
    ("unknown-top-level-key", "kind: sweep\n", "kind: sweep\nconcurency: [1]\n",
     "recipes/broken.yaml", 4, "concurency", "unknown key", "concurrency"),
    ("unknown-nested-key", "    tp: 1\n", "    tp: 1\n    tpp: 2\n",
     "recipes/broken.yaml", 8, "search_space[0].tpp", "unknown key", "dp_attn"),
    ("wrong-type", "  isl: 128\n", "  isl: lots\n",
     "recipes/broken.yaml", 10, "workload.isl", "integer", None),
    ("bad-literal", "  dataset: random\n", "  dataset: sharegpt\n",
     "recipes/broken.yaml", 9, "workload.dataset", "not accepted", "trace"),
    ("missing-include", "include: _base/tiny-cpu.yaml\n", "include: _base/nope.yaml\n",
     "recipes/broken.yaml", 1, "include", "not found", None),
    ("missing-field", "  num_prompts: 8\n", "",
     "recipes/broken.yaml", 8, "workload", "num_prompts", None),
    ("bad-kind", "kind: sweep\n", "kind: bench\n",
     "recipes/broken.yaml", 3, "kind", "not accepted", "e2e"),
    ("name-not-file-name", "name: broken\n", "name: other\n",
     "recipes/broken.yaml", 2, "name", "file name", "broken"),
    ("unknown-runner", "kind: sweep\n", "kind: sweep\nrunner: h100\n",
     "recipes/broken.yaml", 4, "runner", "unknown runner", "cpu"),
    ("duplicate-key", "  isl: 128\n", "  isl: 128\n  isl: 256\n",
     "recipes/broken.yaml", 11, "isl", "duplicate key", None),
    ("yaml-syntax", "  osl: 32\n", "  osl: [32\n",
     "recipes/broken.yaml", None, None, "YAML syntax error", None),
    ("concurrency-template-not-declared", "    tp: 1\n", "    tp: 1\n    args: [--max-num-seqs, '{concurrency}']\n",
     "recipes/broken.yaml", 8, "search_space[0].args[1]", "depends_on_concurrency", None),
    ("repeated-arm-name", "    tp: 1\n", "    tp: 1\n  - name: tp1\n    tp: 2\n",
     "recipes/broken.yaml", 8, "search_space[1]", "used twice", None),
]


@pytest.mark.parametrize(
    "old,new,file,line,field,words,accepted", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN]
)
def test_a_broken_recipe_gives_one_error_naming_file_line_and_field(
    tmp_path, old, new, file, line, field, words, accepted
):
    assert old in GOOD
    repo = _repo_with(tmp_path, GOOD.replace(old, new))
    with pytest.raises(RecipeError) as caught:
        load_catalog(repo, inferencex=False)
    problems = caught.value.problems
    assert len(problems) == 1, problems
    problem = problems[0]
    assert problem.file == file
    if line is not None:
        assert problem.line == line, str(problem)
    else:
        assert problem.line is not None or field is None
    if field is not None:
        assert problem.field == field
    assert words in str(problem)
    if accepted is not None:
        assert accepted in problem.accepted
    assert problem.file in str(problem) and (problem.line is None or f":{problem.line}" in str(problem))


def test_the_good_recipe_of_the_broken_table_loads(tmp_path):
    catalog = load_catalog(_repo_with(tmp_path, GOOD), inferencex=False)
    assert catalog.names() == ["broken"]


def test_an_error_in_an_included_base_names_the_base_file_and_line(tmp_path):
    repo = _repo_with(tmp_path, GOOD)
    base = repo / "recipes" / "_base" / "tiny-cpu.yaml"
    base.write_text(base.read_text().replace("  precision: bf16\n", "  precision: fp3\n"))
    with pytest.raises(RecipeError) as caught:
        load_catalog(repo, inferencex=False)
    (problem,) = caught.value.problems
    assert problem.file == "recipes/_base/tiny-cpu.yaml"
    assert problem.field == "model.precision" and "bf16" in problem.accepted
    assert base.read_text().splitlines()[problem.line - 1].strip() == "precision: fp3"


def test_include_cycles_are_refused(tmp_path):
    repo = _repo_with(tmp_path, GOOD.replace("include: _base/tiny-cpu.yaml", "include: _base/a.yaml"))
    (repo / "recipes/_base/a.yaml").write_text("include: b.yaml\n")
    (repo / "recipes/_base/b.yaml").write_text("include: a.yaml\n")
    with pytest.raises(RecipeError) as caught:
        load_catalog(repo, inferencex=False)
    assert "include cycle" in str(caught.value)


def test_local_keys_win_over_the_base_and_mappings_merge_deeply(tmp_path):
    text = GOOD + "model:\n  served_name: mine\n"
    catalog = load_catalog(_repo_with(tmp_path, text), inferencex=False)
    model = catalog.entries["broken"].recipe.model
    assert model.served_name == "mine"
    assert model.path == "${RECIPE_BOT_TINY_MODEL}"  # kept from the base


def test_two_broken_recipes_give_one_error_each(tmp_path):
    repo = _repo_with(tmp_path, GOOD.replace("  isl: 128\n", "  isl: x\n"))
    (repo / "recipes" / "other.yaml").write_text(GOOD.replace("name: broken", "name: other").replace("tp: 1", "tp: 0"))
    with pytest.raises(RecipeError) as caught:
        load_catalog(repo, inferencex=False)
    assert sorted(p.file for p in caught.value.problems) == ["recipes/broken.yaml", "recipes/other.yaml"]


def test_fingerprint_ignores_layout_and_description_but_not_args(tmp_path):
    first = load_catalog(_repo_with(tmp_path / "a", GOOD), inferencex=False).entries["broken"].fingerprint
    reformatted = GOOD.replace("concurrency: [1, 2]", "concurrency:\n  - 1\n  - 2") + "description: same run\n"
    second = load_catalog(_repo_with(tmp_path / "b", reformatted), inferencex=False).entries["broken"].fingerprint
    changed = GOOD + "launch:\n  args: [--max-num-seqs, '4']\n"
    third = load_catalog(_repo_with(tmp_path / "c", changed), inferencex=False).entries["broken"].fingerprint
    assert first == second
    assert first != third


@pytest.mark.parametrize("devices,words", [
    ("[0, 2]", "device 2 does not exist"),
    ("[0, 0]", "distinct"),
], ids=["device-beyond-the-runner", "repeated-device"])
def test_e2e_devices_are_checked_against_the_runner(tmp_path, devices, words):
    text = (
        "include: _base/gpu-smoke.yaml\nname: broken\nkind: e2e\nrunner: h200-x2\n"
        f"cases:\n  - name: one\n    servers:\n      - devices: {devices}\n"
    )
    with pytest.raises(RecipeError) as caught:
        load_catalog(_repo_with(tmp_path, text), inferencex=False)
    (problem,) = caught.value.problems
    assert words in str(problem.message) and problem.line == 8


def test_side_by_side_servers_cannot_share_a_device(tmp_path):
    text = (
        "include: _base/gpu-smoke.yaml\nname: broken\nkind: e2e\nrunner: h200-x2\n"
        "cases:\n  - name: one\n    servers:\n      - {name: a, devices: [0]}\n      - {name: b, devices: [0]}\n"
    )
    with pytest.raises(RecipeError) as caught:
        load_catalog(_repo_with(tmp_path, text), inferencex=False)
    assert "cannot share a device" in str(caught.value)


# ---- the located YAML loader reads what PyYAML's safe loader reads ----------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "inferencex"
YAML_FILES = sorted([*(ROOT / "recipes").rglob("*.yaml"), *FIXTURES.rglob("*.yaml")])


@pytest.mark.parametrize("path", YAML_FILES, ids=[p.name for p in YAML_FILES])
def test_loader_agrees_with_pyyaml_on_real_files(path):
    assert load_yaml(path.read_bytes(), path.name).data == yaml.safe_load(path.read_text())


TRICKY = "a: 0x1F\nb: 0o17\nc: 1_000\nd: 1:30\ne: 1.5e3\nf: .inf\ng: yes\nh: ~\ni: 2026-08-21\nj: !!str 12\n" \
    "k: &x {p: 1}\nl: {<<: *x, q: 2}\nm: '007'\nn: 007\no: [+1, -0, '']\n"


def test_loader_agrees_with_pyyaml_on_rarer_scalars_and_merge_keys():
    assert load_yaml(TRICKY, "t.yaml").data == yaml.safe_load(TRICKY)


scalars = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(max_size=12),
                    st.floats(allow_nan=False, allow_infinity=False))
documents = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_loader_agrees_with_pyyaml_on_generated_documents(document):
    text = yaml.safe_dump(document, default_flow_style=bool(hash(str(document)) % 2))
    assert load_yaml(text, "g.yaml").data == yaml.safe_load(text)
