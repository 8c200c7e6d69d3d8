"""report: Table 1 cells (mean, std, paper, Δ, marker), CSV, plots, plan quality, determinism, bad input."""

import csv
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.experiments import report
from statecentric_jax.method import pipeline
from statecentric_jax.problems import fast_downward
from tests.launching import launch, mounted_tmpfs, one_error_line

REPO = pathlib.Path(__file__).resolve().parents[2]
OBJECTS = {"p1": 4, "p2": 6, "p3": 8}
FD_LENGTHS = {"p1": 4, "p2": 6, "p3": 8}
PAPER = """# a comment line, as in the shipped file
domain,split,system,variant,mean,std
blocks,validation,WL-XGB,delta,0.67,0.00
blocks,test-extrapolation,WL-XGB,delta,0.50,0.00
blocks,validation,WL-LSTM,state,0.44,0.16
blocks,validation,FD,astar-lmcut,1.00,0.00
"""
FAILURE = {"validation": "dead end", "test-extrapolation": "horizon"}  # the decoder's reason for every unsolved problem
# run -> (encoding, kind, mode) and seed -> split -> per problem: decoded plan length, or None if unsolved
RUNS = {
    "blocks_wl_xgb_delta": (
        ("wl", "xgb", "delta"),
        {
            13: {"validation": [4, 9, None], "test-extrapolation": [None, None, None]},
            14: {"validation": [4, 6, 8], "test-extrapolation": [None, None, None]},
        },
    ),
    "blocks_wl_lstm_state": (
        ("wl", "lstm", "state"),
        {
            13: {"validation": [5, None, None], "test-extrapolation": [6, None, None]},
        },
    ),
}


def write_seed(run_dir, encoding, kind, mode, seed, splits, root, cache):
    config = config_lib.table1("blocks", encoding, kind, mode)
    config.seed, config.data.pddl_root, config.data.cache_dir = seed, str(root), str(cache)
    seed_dir = run_dir / f"seed{seed}"
    seed_dir.mkdir(parents=True)
    (seed_dir / "config.json").write_text(config.to_json(indent=1))
    for split, lengths in splits.items():
        records = [
            {
                "problem_file": f"{root}/blocks/{split}/{p}.pddl",
                "problem": f"pddl-name-{p}",
                "num_objects": OBJECTS[p],
                "solved": n is not None,
                "plan_length": n or 0,
                "steps": n or 0,
                "seconds": 0.1,
                "outcome": "goal" if n else FAILURE[split],
                "plan": ["(noop)"] * (n or 0),
            }
            for p, n in zip(OBJECTS, lengths, strict=True)
        ]
        out = seed_dir / "eval" / split
        out.mkdir(parents=True)
        (out / "results.json").write_text(json.dumps(records))
        solved = sum(r["solved"] for r in records)
        (out / "summary.json").write_text(json.dumps({"split": split, "success_rate": solved / len(records)}))
    return config


@pytest.fixture
def sweep(tmp_path):
    """A finished-looking sweep of 2 configurations (2 seeds and 1 seed), FD plans for validation only."""
    sweep_dir, root, cache = tmp_path / "sweep", tmp_path / "root", tmp_path / "cache"
    for name, ((encoding, kind, mode), seeds) in RUNS.items():
        for seed, splits in seeds.items():
            config = write_seed(sweep_dir / name, encoding, kind, mode, seed, splits, root, cache)
    fd_dir = pipeline.cache_dirs(config)[0] / "blocks" / "validation"
    fd_dir.mkdir(parents=True)
    (fd_dir / "trajectories.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "problem": p,
                    "problem_file": f"{p}.pddl",
                    "domain_file": "d.pddl",
                    "plan": ["(a)"] * n,
                    "static": [],
                    "states": [[]] * (n + 1),
                }
            )
            + "\n"
            for p, n in FD_LENGTHS.items()
        )
    )
    paper = tmp_path / "paper.csv"
    paper.write_text(PAPER)
    return sweep_dir, paper


def md_cells(text):
    """Markdown table -> {(domain, split): {column label: cell}}."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = dict(zip(header[2:], cells[2:], strict=True))
    return rows


def test_table_cells_csv_and_plots(sweep, tmp_path):
    sweep_dir, paper = sweep
    files = report.write_report(sweep_dir, tmp_path / "out", paper)
    assert [f.name for f in files] == [
        "table1.md",
        "table1.csv",
        "plan_quality.md",
        "plan_quality.csv",
        "failures.md",
        "failures.csv",
        "beyond_paper.md",
        "beyond_paper.csv",
        "beyond_quality.md",
        "beyond_quality.csv",
        "success_by_split.png",
        "success_vs_size.png",
    ]
    cells = md_cells((tmp_path / "out/table1.md").read_text())
    assert list(cells) == [("Blocks", "Val."), ("Blocks", "Extrap.")]
    assert list(cells[("Blocks", "Val.")]) == [c.label for c in report.COLUMNS]  # the paper's column order
    # seeds: 2/3 and 3/3 -> 0.83 ± 0.17 (population std, as the paper); |Δ| 0.16 within the stds: no marker
    assert cells[("Blocks", "Val.")]["WL-XGB delta"] == "0.83±0.17 (0.67±0.00, Δ +0.16)"
    assert cells[("Blocks", "Extrap.")]["WL-XGB delta"] == f"0.00±0.00 (0.50±0.00, Δ -0.50) {report.FLAG}"
    assert cells[("Blocks", "Val.")]["WL-LSTM state"] == "0.33±0.00 (0.44±0.16, Δ -0.11) [n=1]"
    assert cells[("Blocks", "Extrap.")]["WL-LSTM state"] == "0.33±0.00 [n=1]"  # no paper row
    assert cells[("Blocks", "Val.")]["FSF-XGB delta"] == "—"

    rows = list(csv.DictReader((tmp_path / "out/table1.csv").open()))
    assert [(r["domain"], r["split"]) for r in rows] == [("blocks", "validation"), ("blocks", "test-extrapolation")]
    assert list(rows[0])[:9] == [
        "domain",
        "split",
        "WL-LSTM state mean",
        "WL-LSTM state std",
        "WL-LSTM state seeds",
        "WL-LSTM state paper mean",
        "WL-LSTM state paper std",
        "WL-LSTM state delta",
        "WL-LSTM state differs",
    ]
    assert len(rows[0]) == 2 + 7 * len(report.COLUMNS)
    xgb = {k.removeprefix("WL-XGB delta "): v for k, v in rows[0].items() if k.startswith("WL-XGB delta")}
    assert xgb == {
        "mean": "0.8333",
        "std": "0.1667",
        "seeds": "2",
        "paper mean": "0.67",
        "paper std": "0.00",
        "delta": "+0.16",
        "differs": "0",
    }
    assert rows[1]["WL-XGB delta differs"] == "1"

    for name in ("success_by_split.png", "success_vs_size.png"):
        data = (tmp_path / "out" / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000


def test_plan_quality_ratio_over_problems_solved_by_both(sweep, tmp_path):
    sweep_dir, paper = sweep
    report.write_report(sweep_dir, tmp_path / "out", paper)
    cells = md_cells((tmp_path / "out/plan_quality.md").read_text())
    # seed 13: 4/4, 9/6 (p3 unsolved); seed 14: 4/4, 6/6, 8/8 -> (1 + 1.5 + 1 + 1 + 1) / 5
    assert cells[("Blocks", "Val.")]["WL-XGB delta"] == "1.10 (n=5)"
    assert cells[("Blocks", "Val.")]["WL-LSTM state"] == "1.25 (n=1)"
    assert cells[("Blocks", "Extrap.")]["WL-LSTM state"] == "n/a"  # no FD plans for extrapolation
    assert cells[("Blocks", "Val.")]["FSF-LSTM state"] == "—"
    rows = list(csv.DictReader((tmp_path / "out/plan_quality.csv").open()))
    assert (rows[0]["WL-XGB delta ratio"], rows[0]["WL-XGB delta pairs"]) == ("1.1000", "5")
    # an extra FD plans folder (generate_plans --workdir) adds the extrapolation plans; validation still from the cache
    extra = tmp_path / "fd-test-plans" / "blocks" / "test-extrapolation"
    extra.mkdir(parents=True)
    (extra / "trajectories.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "problem": p,
                    "problem_file": f"{p}.pddl",
                    "domain_file": "d.pddl",
                    "plan": ["(a)"] * 3,
                    "static": [],
                    "states": [[]] * 4,
                }
            )
            + "\n"
            for p in OBJECTS
        )
    )
    report.write_report(sweep_dir, tmp_path / "out2", paper, fd_plans_dir=tmp_path / "fd-test-plans")
    cells = md_cells((tmp_path / "out2/plan_quality.md").read_text())
    assert cells[("Blocks", "Extrap.")]["WL-LSTM state"] == "2.00 (n=1)"  # 6 / 3
    assert cells[("Blocks", "Val.")]["WL-XGB delta"] == "1.10 (n=5)"


def test_failures_count_unsolved_problems_by_reason(sweep, tmp_path):
    sweep_dir, paper = sweep
    report.write_report(sweep_dir, tmp_path / "out", paper)
    cells = md_cells((tmp_path / "out/failures.md").read_text())
    assert cells[("Blocks", "Val.")]["WL-XGB delta"] == "1/6: dead end 1"  # 2 seeds x 3 problems
    assert cells[("Blocks", "Extrap.")]["WL-XGB delta"] == "6/6: horizon 6"
    assert cells[("Blocks", "Val.")]["WL-LSTM state"] == "2/3: dead end 2"
    assert cells[("Blocks", "Val.")]["FSF-XGB delta"] == "—"
    rows = list(csv.DictReader((tmp_path / "out/failures.csv").open()))
    lstm = {k.removeprefix("WL-LSTM state "): v for k, v in rows[1].items() if k.startswith("WL-LSTM state")}
    assert lstm == {"problems": "3", "unsolved": "2", "dead end": "0", "horizon": "2", "other": "0"}
    # a result without a decoder reason (an instance that could not be loaded) counts as "other"
    records_file = sweep_dir / "blocks_wl_lstm_state/seed13/eval/validation/results.json"
    records = json.loads(records_file.read_text())
    records[1]["outcome"] = "cannot load: bad PDDL"
    records_file.write_text(json.dumps(records))
    report.write_report(sweep_dir, tmp_path / "out", paper)
    assert (
        md_cells((tmp_path / "out/failures.md").read_text())[("Blocks", "Val.")]["WL-LSTM state"]
        == "2/3: dead end 1, other 1"
    )


def test_rerun_gives_identical_files(sweep, tmp_path):
    sweep_dir, paper = sweep
    first = {f.name: f.read_bytes() for f in report.write_report(sweep_dir, tmp_path / "a", paper)}
    second = {f.name: f.read_bytes() for f in report.write_report(sweep_dir, tmp_path / "b", paper)}
    assert first == second
    default = report.write_report(sweep_dir, paper_csv=paper)  # default out dir, inside the sweep: not read as a run
    assert default[0].parent == sweep_dir / "report"
    assert {f.name: f.read_bytes() for f in report.write_report(sweep_dir, paper_csv=paper)} == first


def test_bad_input_is_one_input_error(sweep, tmp_path):
    sweep_dir, _paper = sweep
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no finished evaluations"):
        report.collect(tmp_path / "empty")
    with pytest.raises(InputError, match="cannot read the paper"):
        report.write_report(sweep_dir, tmp_path / "out", tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("domain,split,system,variant,mean,std\nblocks,validation,WL-XGB,delta,high,0\n")
    with pytest.raises(InputError, match="row 2"):
        report.read_paper(tmp_path / "bad.csv")
    # the same Table 1 cell in two runs
    (sweep_dir / "copy").mkdir()
    (sweep_dir / "copy/seed14").symlink_to(sweep_dir / "blocks_wl_xgb_delta/seed14")
    with pytest.raises(InputError, match="also in run"):
        report.collect(sweep_dir)
    (sweep_dir / "copy/seed14").unlink()
    (sweep_dir / "blocks_wl_xgb_delta/seed13/eval/validation/summary.json").write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        report.collect(sweep_dir)


def test_launch_report(sweep, tmp_path):
    sweep_dir, paper = sweep
    ok = subprocess.run(
        [sys.executable, str(REPO / "launch/report.py"), f"--sweep_dir={sweep_dir}", f"--paper_csv={paper}"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "| Blocks | Val. |" in ok.stdout and (sweep_dir / "report/table1.md").is_file()
    bad = subprocess.run(
        [sys.executable, str(REPO / "launch/report.py"), f"--sweep_dir={tmp_path / 'none'}"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].endswith("no such sweep directory")


# run -> (config changes beyond the paper, seed -> split -> decoded plan lengths); all on WL-XGB delta
BEYOND = {
    "blocks_best": (
        {"decode.strategy": "best_first", "value.kind": "ridge"},
        {13: {"validation": [4, 6, 8], "large": [4, 6, 8]}, 14: {"validation": [4, 6, 8]}},
    ),
    "blocks_value": ({"value.kind": "ridge"}, {13: {"validation": [4, 6, None]}}),
    "blocks_aggregation": ({"aggregation.rounds": 2}, {13: {"test-extrapolation": [4, None, None]}}),
    "blocks_ensemble": ({}, {13: {"validation": [4, None, None]}}),  # an ensemble.json beside the model
    "blocks_novelty": (
        {"decode.strategy": "best_first", "value.kind": "ridge", "decode.exploration": "novelty"},
        {13: {"validation": [4, 6, 8]}},
    ),
    "blocks_preferred": (
        {"decode.strategy": "best_first", "value.kind": "ridge", "decode.exploration": "preferred"},
        {13: {"validation": [4, 6, 8]}},
    ),
    "blocks_greedy": (
        {
            "decode.strategy": "best_first",
            "value.kind": "ridge",
            "decode.exploration": "greedy",
            "decode.path_weight": 0.2,
        },
        {13: {"validation": [4, 6, 8]}},
    ),
    "blocks_agenda": (
        {
            "decode.strategy": "best_first",
            "value.kind": "ridge",
            "decode.goal_agenda": 1,
            "decode.action_elimination": True,
        },
        {13: {"validation": [4, 6, 8]}},
    ),
    "blocks_everything": (
        {"decode.strategy": "restarts", "value.kind": "ridge", "aggregation.rounds": 1},
        {13: {"validation": [4, 6, 8]}},
    ),
}


def add_beyond_runs(sweep_dir, root, cache):
    for name, (changes, seeds) in BEYOND.items():
        for seed, splits in seeds.items():
            config = write_seed(sweep_dir / name, "wl", "xgb", "delta", seed, {}, root, cache)
            for key, value in changes.items():
                section, field = key.split(".")
                config[section][field] = value
            seed_dir = sweep_dir / name / f"seed{seed}"
            (seed_dir / "config.json").write_text(config.to_json(indent=1))
            if name in ("blocks_ensemble", "blocks_everything"):
                (seed_dir / "ensemble.json").write_text('{"format": 1, "members": []}')
            for split, lengths in splits.items():
                records = [
                    {"problem_file": f"{root}/{p}.pddl", "problem": p, "num_objects": OBJECTS[p]}
                    | {"solved": n is not None, "plan_length": n or 0, "outcome": "goal" if n else "horizon"}
                    | {"seconds": 0.3}  # three times the paper's runs (0.1 s per problem)
                    for p, n in zip(OBJECTS, lengths, strict=True)
                ]
                out = seed_dir / "eval" / split
                out.mkdir(parents=True)
                (out / "results.json").write_text(json.dumps(records))
                rate = sum(r["solved"] for r in records) / len(records)
                (out / "summary.json").write_text(json.dumps({"split": split, "success_rate": rate}))


def test_beyond_the_paper_table_leaves_table1_as_it_was(sweep, tmp_path):
    sweep_dir, paper = sweep
    before = {f.name: f.read_bytes() for f in report.write_report(sweep_dir, tmp_path / "before", paper)}
    add_beyond_runs(sweep_dir, tmp_path / "root", tmp_path / "cache")
    after = {f.name: f.read_bytes() for f in report.write_report(sweep_dir, tmp_path / "after", paper)}
    assert after.keys() == before.keys()
    assert {k: v for k, v in after.items() if not k.startswith("beyond")} == {
        k: v for k, v in before.items() if not k.startswith("beyond")
    }  # Table 1, plan quality, failures and plots: the paper's method only, byte for byte

    lines = [line for line in (tmp_path / "after/beyond_paper.md").read_text().splitlines() if line.startswith("| ")]
    assert lines[0] == "| Domain | System | Val. | Extrap. | large |"
    rows = {cells[1]: cells[2:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:])}
    assert list(rows) == [
        "paper's best, published (WL-XGB delta)",  # best extrapolation in the paper's table
        "paper's best, reproduced (WL-XGB delta) `blocks_wl_xgb_delta`",
        "recommended: strategy + value `blocks_best`",
        "value only `blocks_value`",
        "aggregation only `blocks_aggregation`",
        "ensemble only `blocks_ensemble`",
        "strategy + value + preferred exploration `blocks_preferred`",  # a learned signal, named like type
        "strategy + value + greedy exploration `blocks_greedy`",  # a learned signal too
        "strategy + value + novelty (symbolic) `blocks_novelty`",  # a symbolic signal: named, never "all"
        "all `blocks_everything`",
        # a symbolic decomposition and a symbolic post-processing: named too (fewest additions first)
        "strategy + value + goal agenda (symbolic) + action elimination (symbolic) `blocks_agenda`",
    ]
    assert rows["paper's best, published (WL-XGB delta)"] == ["0.67±0.00", "0.50±0.00", "—"]
    assert rows["paper's best, reproduced (WL-XGB delta) `blocks_wl_xgb_delta`"] == ["0.83±0.17", "0.00±0.00", "—"]
    assert rows["recommended: strategy + value `blocks_best`"] == ["1.00±0.00", "—", "1.00±0.00 [n=1]"]
    assert rows["value only `blocks_value`"] == ["0.67±0.00 [n=1]", "—", "—"]
    assert rows["aggregation only `blocks_aggregation`"] == ["—", "0.33±0.00 [n=1]", "—"]

    csv_rows = list(csv.DictReader((tmp_path / "after/beyond_paper.csv").open()))
    best = next(r for r in csv_rows if r["run"] == "blocks_best")
    assert (best["ingredients"], best["validation mean"], best["validation seeds"], best["large seeds"]) == (
        "strategy+value",
        "1.0000",
        "2",
        "1",
    )


def test_beyond_quality_gives_length_against_fast_downward_and_time_against_beam_with_the_same_model(sweep, tmp_path):
    sweep_dir, paper = sweep
    add_beyond_runs(sweep_dir, tmp_path / "root", tmp_path / "cache")
    fd_dir = next((tmp_path / "cache").rglob("blocks/validation/trajectories.jsonl")).parent
    problems = [{"problem_file": "p1.pddl", "config": fast_downward.ASTAR_LMCUT}, {"problem_file": "p2.pddl"}]
    (fd_dir / "manifest.json").write_text(json.dumps({"problems": problems}))  # p1's plan is proved optimal
    report.write_report(sweep_dir, tmp_path / "out", paper)
    rows = {r["run"]: r for r in csv.DictReader((tmp_path / "out/beyond_quality.csv").open())}
    paper_run, best = rows["blocks_wl_xgb_delta"], rows["blocks_best"]
    assert (paper_run["validation seconds per problem"], paper_run["validation time ratio"]) == ("0.1000", "")
    assert (best["validation length ratio"], best["validation pairs"]) == ("1.0000", "6")  # FD plans: 4, 6, 8
    assert (best["validation optimal length ratio"], best["validation optimal pairs"]) == ("1.0000", "2")  # 2 seeds
    assert (best["validation seconds per problem"], best["validation time ratio"]) == ("0.3000", "3.0000")
    assert best["large length ratio"] == "" and best["large time ratio"] == ""  # no FD plans, no beam run there
    assert "blocks_ensemble" in rows and "blocks_wl_lstm_state" not in rows  # not the paper's best, not built on


def test_beyond_the_paper_table_from_recommended_runs_alone(tmp_path):
    paper = tmp_path / "paper.csv"
    paper.write_text(PAPER)
    sweep_dir = tmp_path / "sweep"
    add_beyond_runs(sweep_dir, tmp_path / "root", tmp_path / "cache")
    for name in list(BEYOND)[1:]:
        shutil.rmtree(sweep_dir / name)
    files = report.write_report(sweep_dir, tmp_path / "out", paper)
    names = ["beyond_paper.md", "beyond_paper.csv", "beyond_quality.md", "beyond_quality.csv"]
    assert [f.name for f in files] == names  # no Table 1 without its runs
    text = files[0].read_text()
    assert "| Blocks | paper's best, reproduced (WL-XGB delta) | — | — |" in text
    assert "| Blocks | recommended: strategy + value `blocks_best` | 1.00±0.00 | 1.00±0.00 [n=1] |" in text


def test_the_published_table_ships_with_the_package():
    """A fresh clone's report reads the paper's Table 1 from the package: every state-centric cell is there."""
    paper = report.read_paper(report.PAPER_CSV)
    assert {(d, s, c) for d in report.DOMAIN_TITLES for s in report.SPLITS for c in report.COLUMNS} <= set(paper)
    published = REPO.parent / "shared" / "benchmarks" / "paper_table1.csv"
    if not published.is_file():
        pytest.skip("the published copy beside the clone is not on this machine")
    assert paper == report.read_paper(published)


def test_a_read_only_out_dir_is_one_line_before_any_work(sweep, tmp_path):
    sweep_dir, paper = sweep
    out = tmp_path / "report"
    with mounted_tmpfs(out, "ro"):
        proc = launch("report.py", f"--sweep_dir={sweep_dir}", f"--paper_csv={paper}", f"--out_dir={out}")
        one_error_line(proc, f"error: {out}: not writable (a read-only location, or no permission)")
