"""`recipe-bot run` refuses a bad job file with one error naming the file and field, writing nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.core.results import JobResult
from bot.runner.cli import write_result
from fake_servers import fake_job


@pytest.mark.parametrize(("content", "suffix", "message"), [
    pytest.param("{not json", ".json", "cannot read it as JSON", id="broken-json"),
    pytest.param("cases: [", ".yaml", "cannot read it as YAML", id="broken-yaml"),
    pytest.param(json.dumps({"job_id": "x"}), ".json", "kind: Field required", id="missing-field"),
    pytest.param(json.dumps({**json.loads(fake_job("ok").model_dump_json()), "colour": "red"}),
                 ".json", "colour: Extra inputs are not permitted", id="unknown-key"),
])
def test_bad_job_file_is_one_clear_error(tmp_path: Path, content: str, suffix: str,
                                         message: str) -> None:
    job_file = tmp_path / f"job{suffix}"
    job_file.write_text(content)
    out = tmp_path / "out"

    result = CliRunner().invoke(main, ["run", "--job", str(job_file), "--out", str(out)])

    assert result.exit_code == 2
    assert str(job_file) in result.output and message in result.output
    assert not out.exists(), "nothing half-written"


def test_negative_concurrency_names_its_path(tmp_path: Path) -> None:
    data = json.loads(fake_job("ok").model_dump_json())
    data["cases"][0]["points"][1]["concurrency"] = 0
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(data))

    result = CliRunner().invoke(main, ["run", "--job", str(job_file), "--out",
                                       str(tmp_path / "o")])

    assert "cases.0.points.1.concurrency: Input should be greater than or equal to 1" \
        in result.output


@pytest.mark.parametrize(("change", "english", "chinese"), [
    (lambda d: d["cases"][0]["servers"][0].update(engine="trtllm"),
     "cases.0.servers.0.engine: Input should be 'vllm' or 'sglang'", "cases.0.servers.0.engine：应为 'vllm' 或 'sglang'"),
    (lambda d: d["cases"][0].update(servers=[], command=None),
     "a case starts servers or runs a command; this one has neither", "用例要么启动服务，要么运行命令"),
], ids=["unknown-engine", "case-without-servers-or-command"])
def test_a_bad_job_file_is_refused_in_both_languages(tmp_path: Path, change, english: str, chinese: str) -> None:
    data = json.loads(fake_job("ok").model_dump_json())
    change(data)
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(data))

    result = CliRunner().invoke(main, ["run", "--job", str(job_file), "--out", str(tmp_path / "o")])

    assert result.exit_code != 0 and "Traceback" not in result.output
    assert english in result.output and chinese in result.output
    assert not (tmp_path / "o" / "result.json").exists()


def test_result_file_is_replaced_whole(tmp_path: Path) -> None:
    result = JobResult(job_id="j", kind="sweep", recipe="r", recipe_fingerprint="f",
                       runner_label="cpu", status="passed")

    path = write_result(result, tmp_path)
    write_result(result.model_copy(update={"status": "failed"}), tmp_path)

    assert JobResult.model_validate_json(path.read_text()).status == "failed"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
