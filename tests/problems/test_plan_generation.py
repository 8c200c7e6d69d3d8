"""generate_plans: records, manifest, trajectories, caching, kill -9 resume, bad input end to end."""

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import read_plan, simulate
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import fast_downward
from statecentric_jax.problems.plan_generation import TRAJECTORY_KEYS, generate_plans, read_trajectories
from tests.launching import launch, one_error_line
from tests.problems.test_fast_downward import BAD_INPUT, BLOCKS, UNSOLVABLE, blocks_problem

REPO = pathlib.Path(__file__).resolve().parents[2]
TOWERS = ("ab", "ba", "abc", "cab", "bca", "abcd", "dcba", "bdac")


def make_root(root, problems, domain="blocks", domain_text=BLOCKS, split="train"):
    """A paper-splits-like tree: <root>/<domain>/domain.pddl, <root>/<domain>/<split>/<name>.pddl."""
    folder = root / domain / split
    folder.mkdir(parents=True, exist_ok=True)
    (root / domain / "domain.pddl").write_text(domain_text)
    for name, text in problems.items():
        (folder / f"{name}.pddl").write_text(text)
    return root


def towers(*names):
    return {f"t-{t}": blocks_problem(f"t-{t}", t) for t in names}


def no_planner(*args, **kwargs):
    pytest.fail("a cached problem was solved again")


def test_records_manifest_plans_and_trajectories(tmp_path):
    root = make_root(tmp_path / "pddl", {**towers("ab", "cab"), "cycle": UNSOLVABLE})
    work = tmp_path / "work"
    summary = generate_plans(root, work, splits=["train"], jobs=2)
    split = work / "blocks" / "train"

    manifest = json.loads((split / "manifest.json").read_text())
    entries = {p["problem"]: p for p in manifest["problems"]}
    assert (manifest["domain"], manifest["split"]) == ("blocks", "train")
    assert sorted(entries) == ["cycle", "t-ab", "t-cab"]
    assert entries["cycle"]["status"] == "unsolvable" and entries["cycle"]["plan"] is None
    assert "cycle.pddl: " in entries["cycle"]["message"]
    solved = entries["t-cab"]
    assert (solved["status"], solved["config"]) == ("solved", fast_downward.ASTAR_LMCUT)
    assert solved["seconds"] >= 0 and solved["attempts"][0]["status"] == "solved"
    assert read_plan(split / "plans" / "t-cab.plan") == solved["plan"]
    assert not (split / "plans" / "cycle.plan").exists()

    trajectories = read_trajectories(split / "trajectories.jsonl")
    assert [t["problem"] for t in trajectories] == ["t-ab", "t-cab"]
    for t in trajectories:
        assert tuple(t) == TRAJECTORY_KEYS
        task = load_task(t["domain_file"], t["problem_file"])
        assert t["states"] == [sorted(s) for s in simulate(task, t["plan"])]
        assert t["static"] == sorted(task.static)
    assert [o.status for o in summary.outcomes] == ["unsolvable", "solved", "solved"]
    assert summary.report().splitlines()[-1] == "total: 2 solved (0 cached), 1 unsolvable (0 cached)"
    assert (summary.exit_code, dataclasses.replace(summary, strict=True).exit_code) == (0, 1)


def test_rerun_uses_the_cache_and_resolves_only_changed_inputs(tmp_path, monkeypatch):
    root = make_root(tmp_path / "pddl", towers("ab", "abc"))
    work = tmp_path / "work"
    generate_plans(root, work, splits=["train"], jobs=1)
    outputs = {p: p.read_bytes() for p in (work / "blocks" / "train").rglob("*") if p.is_file()}

    with monkeypatch.context() as m:
        m.setattr(fast_downward, "solve", no_planner)
        summary = generate_plans(root, work, splits=["train"], jobs=1)
    assert summary.report().splitlines()[-1] == "total: 2 solved (2 cached)"
    assert {p: p.read_bytes() for p in outputs} == outputs

    (root / "blocks" / "train" / "t-ab.pddl").write_text(blocks_problem("t-ab", "ba"))
    summary = generate_plans(root, work, splits=["train"], jobs=1)
    assert {o.problem: o.cached for o in summary.outcomes} == {"t-ab": False, "t-abc": True}
    assert read_trajectories(work / "blocks" / "train" / "trajectories.jsonl")[0]["plan"] == [
        "(pick-up b)",
        "(stack b a)",
    ]


def test_timeouts_are_retried_only_under_new_limits(tmp_path, monkeypatch):
    root = make_root(tmp_path / "pddl", towers("abc"))
    work = tmp_path / "work"
    summary = generate_plans(root, work, splits=["train"], astar_time_limit=0.01, gbfs_time_limit=0.01)
    assert [o.status for o in summary.outcomes] == ["timeout"]
    assert summary.exit_code == 1  # nothing usable
    assert "t-abc.pddl: " in summary.failures[0] and "no plan within 0.01 s" in summary.failures[0]
    assert (work / "blocks" / "train" / "trajectories.jsonl").read_text() == ""

    with monkeypatch.context() as m:
        m.setattr(fast_downward, "solve", no_planner)
        again = generate_plans(root, work, splits=["train"], astar_time_limit=0.01, gbfs_time_limit=0.01)
    assert [(o.status, o.cached) for o in again.outcomes] == [("timeout", True)]
    assert [o.status for o in generate_plans(root, work, splits=["train"]).outcomes] == ["solved"]


def test_bad_input_end_to_end(tmp_path):
    """Each bad problem gets its one-line reason; good ones are solved; missing files are reported."""
    root = make_root(tmp_path / "pddl", towers("ab"))
    for case, (domain_text, problem_text, _, _) in BAD_INPUT.items():
        make_root(root, {"p": problem_text}, domain=case, domain_text=domain_text)
    (root / "missing" / "train").mkdir(parents=True)  # no domain.pddl
    work = tmp_path / "work"
    summary = generate_plans(root, work, domains=["blocks", "missing", *BAD_INPUT], splits=["train", "validation"])

    assert [o.problem for o in summary.outcomes if o.status == "solved"] == ["t-ab"]
    for case, (_, _, culprit, reason) in BAD_INPUT.items():
        if culprit == "domain":  # one line for the domain, no per-problem records
            (line,) = [f for f in summary.bad_domains if f.startswith(f"{root / case / 'domain.pddl'}: ")]
            assert reason in line and line in summary.failures
            assert not (work / case / "train" / "records" / "p.json").exists()
            continue
        record = json.loads((work / case / "train" / "records" / "p.json").read_text())
        assert record["status"] == "error"
        assert record["message"].startswith(f"{root / case / 'train/p.pddl'}: ") and reason in record["message"]
        assert record["message"] in summary.failures
        assert (work / case / "train" / "trajectories.jsonl").read_text() == ""
    assert any("no domain 'missing'" in line for line in summary.split_failures)
    assert any("no split 'validation' for domain 'blocks'" in line for line in summary.split_failures)
    assert all("\n" not in line for line in summary.failures)
    assert summary.exit_code == (2 if summary.bad_domains else 0)
    assert f"{len(summary.failures)} failure(s):" in summary.report()


def test_kill_9_then_rerun_loses_and_duplicates_nothing(tmp_path):
    root = make_root(tmp_path / "pddl", towers(*TOWERS))
    work = tmp_path / "work"
    records = work / "blocks" / "train" / "records"
    command = [
        sys.executable,
        str(REPO / "launch" / "generate_plans.py"),
        f"--pddl_root={root}",
        f"--workdir={work}",
        "--splits=train",
        "--jobs=1",
    ]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(records.glob("*.json")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = {p.name for p in records.glob("*.json")}
    assert 1 <= len(done_before) < len(TOWERS)

    summary = generate_plans(root, work, splits=["train"], jobs=2)
    assert sorted(p.name for p in records.iterdir()) == sorted(f"t-{t}.json" for t in TOWERS)
    assert {o.problem for o in summary.outcomes if o.cached} >= {n[:-5] for n in done_before}
    assert [o.status for o in summary.outcomes] == ["solved"] * len(TOWERS)
    trajectories = read_trajectories(work / "blocks" / "train" / "trajectories.jsonl")
    assert [t["problem"] for t in trajectories] == sorted(f"t-{t}" for t in TOWERS)
    for t in trajectories:
        simulate(load_task(t["domain_file"], t["problem_file"]), t["plan"])


def test_cli_reports_bad_root_in_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "launch" / "generate_plans.py"),
            f"--pddl_root={tmp_path / 'nowhere'}",
            f"--workdir={tmp_path / 'w'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"error: {tmp_path / 'nowhere'}: PDDL root is not a directory"


def test_read_trajectories_rejects_bad_files(tmp_path):
    with pytest.raises(InputError, match="cannot read trajectories"):
        read_trajectories(tmp_path / "absent.jsonl")
    path = tmp_path / "t.jsonl"
    path.write_text('{"problem": "p"}\n')
    with pytest.raises(InputError, match="line 1 lacks problem_file"):
        read_trajectories(path)
    path.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1 is not JSON"):
        read_trajectories(path)


def test_a_plan_that_does_not_replay_is_an_error(tmp_path, monkeypatch):
    root = make_root(tmp_path / "pddl", towers("ab"))
    bogus = fast_downward.SolveResult("solved", fast_downward.ASTAR_LMCUT, ["(stack a b)"], 0.1, "")
    monkeypatch.setattr(fast_downward, "solve", lambda *args: bogus)
    summary = generate_plans(root, tmp_path / "work", splits=["train"])
    [outcome] = summary.outcomes
    assert outcome.status == "error"
    assert outcome.message.startswith(
        f"{root / 'blocks' / 'train' / 't-ab.pddl'}: invalid plan from Fast Downward: step 1"
    )
    assert summary.exit_code == 1


def test_garbage_in_its_own_files_is_made_again_binary_or_not(tmp_path):
    root = make_root(tmp_path / "pddl", towers("ab", "abc"))
    work = tmp_path / "work"
    generate_plans(root, work, splits=["train"], jobs=1)
    split = work / "blocks" / "train"
    kept = [split / "trajectories.jsonl", split / "plans" / "t-ab.plan", split / "plans" / "t-abc.plan"]
    before = {path: path.read_bytes() for path in kept}
    for garbage in (b"\xff\xfe\x00\x80 garbage", b"ascii garbage {"):
        for path in (split / "manifest.json", split / "plans" / "t-ab.plan", split / "records" / "t-abc.json"):
            path.write_bytes(garbage)
        summary = generate_plans(root, work, splits=["train"], jobs=1)
        assert [(o.problem, o.status, o.cached) for o in summary.outcomes] == [
            ("t-ab", "solved", True),
            ("t-abc", "solved", False),  # its record was garbage: solved again
        ]
        assert {path: path.read_bytes() for path in kept} == before
        manifest = json.loads((split / "manifest.json").read_text())
        assert [p["problem"] for p in manifest["problems"]] == ["t-ab", "t-abc"]


@pytest.mark.parametrize(
    "args,start",
    [
        (["--domains=foo"], "error: --domains: no domain foo under"),
        (["--splits=foo"], "error: --splits: no split foo in blocks"),
        (["--astar_time_limit=-1"], "error: --astar_time_limit: -1.0 is not a positive number of seconds"),
        (["--gbfs_time_limit=0"], "error: --gbfs_time_limit: 0.0 is not a positive number of seconds"),
        (["--memory_limit_mb=0"], "error: --memory_limit_mb: 0 is not a positive number of MiB"),
    ],
)
def test_flags_are_checked_before_any_work(tmp_path, args, start):
    root = make_root(tmp_path / "pddl", towers("ab"))
    one_error_line(launch("generate_plans.py", f"--pddl_root={root}", f"--workdir={tmp_path}/plans", *args), start)
    assert not (tmp_path / "plans").exists()


def test_a_workdir_that_is_a_file_is_refused_first(tmp_path):
    root = make_root(tmp_path / "pddl", towers("ab"))
    (tmp_path / "afile").write_text("")
    with pytest.raises(InputError, match=f"{tmp_path}/afile: is a file, not a folder"):
        generate_plans(root, tmp_path / "afile", splits=["train"])


def test_bad_domain_makes_generate_plans_one_line(blocks_root, tmp_path):
    bad = tmp_path / "root"
    shutil.copytree(blocks_root, bad)
    (bad / "blocks" / "domain.pddl").write_text("(define (domain blocks)")
    proc = launch("generate_plans.py", f"--pddl_root={bad}", f"--workdir={tmp_path}/plans", "--splits=validation")
    one_error_line(proc, f"error: {bad}/blocks/domain.pddl:")
