"""Packing verdicts read shell as shell: every read of a per-point value before the server is ready, named."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.inferencex.launches import launch_groups
from bot.inferencex.packing import verdict
from bot.inferencex.repo import load_inferencex
from bot.recipes.sources import DirSource
from ix_repo_helpers import tool_rows

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"
MTP = "llama5-fp8-h100-sglang-mtp"
SCRIPT = "benchmarks/single_node/fixed_seq_len/llama5_fp8_h100_mtp.sh"


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("ix")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    repo = load_inferencex(DirSource(root))
    found = tool_rows(root, [MTP])
    group = max(launch_groups(found, {i: MTP for i in range(len(found))}), key=lambda g: len(g.rows))
    assert len(group.rows) >= 2  # one server configuration, several concurrencies
    return group.rows


def script(*server_lines: str) -> dict[str, str]:
    body = "\n".join(server_lines)
    return {SCRIPT: f"#!/usr/bin/env bash\n{body}\nserve --max-running \"$MAX\" &\nwait_for_server_ready\n"
                    "client --concurrency \"$CONC\"\n"}


@pytest.mark.parametrize("line", [
    "MAX_NUM_SEQS=$((2 * CONC))",
    "MAX_RUNNING_REQUESTS=$((2*CONC))",
    "MAX=$(( CONC ))",
    "(( CONC > 64 )) && MAX=64",
    "let MAX=CONC*2",
    "declare -i MAX=CONC",
    "MAX=$[CONC + 1]",
    "MAX=${CONC:-4}",
], ids=["arith-spaces", "arith-tight", "arith-bare", "arith-command", "let", "declare-i", "old-arith", "default"])
def test_an_arithmetic_or_builtin_read_of_conc_before_ready_does_not_pack(rows, line):
    found = verdict(rows, script(line), {}, one_server=True)
    assert not found.packs
    assert str(found.reason).startswith(f"{SCRIPT}:2 reads $CONC before the server is ready")


def test_a_read_through_indirection_names_the_assignment_and_the_expansion(rows):
    found = verdict(rows, script("which=CONC", "MAX=${!which}"), {}, one_server=True)
    assert not found.packs
    assert str(found.reason).startswith(f"{SCRIPT}:2 reads $CONC") and "also line 3 ($CONC)" in str(found.reason)


def test_every_line_that_reads_conc_is_named_not_only_the_first(rows):
    found = verdict(rows, script("A=$((2 * CONC))", "B=$CONC"), {}, one_server=True)
    assert str(found.reason).startswith(f"{SCRIPT}:2 reads $CONC") and str(found.reason).endswith("also line 3 ($CONC)")


@pytest.mark.parametrize("line", ["MAX=$(( TP * 2 ))", "MAX=CONCURRENCY_CAP", "# MAX=$((2 * CONC))", "declare -i MAX=4"])
def test_lines_that_do_not_read_conc_still_pack(rows, line):
    assert verdict(rows, script(line), {}, one_server=True).packs


def test_the_other_lines_that_read_conc_are_named_in_chinese_in_the_chinese_half(rows):
    found = verdict(rows, script("A=$CONC", "B=$CONC", "C=$CONC"), {}, one_server=True)
    assert str(found.reason).endswith("; also line 3 ($CONC), line 4 ($CONC)")
    assert found.reason.render("zh").endswith("；另有 第 3 行（$CONC）、第 4 行（$CONC）")
