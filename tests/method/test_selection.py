"""Selection of the recommended configuration's settings: training problems only, selection.json, the run."""

import builtins
import io
import json
import pathlib
import re
import shutil

import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import ensemble
from statecentric_jax.method import selection
from statecentric_jax.problems import fast_downward, layout
from tests.problems.test_layout import ipc_root

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def selected(tmp_path_factory):
    """A selection on a tiny IPC folder, every file opening and planner call recorded."""
    tmp = tmp_path_factory.mktemp("selection")
    root = ipc_root(tmp / "ipc")
    config = config_lib.recommended()
    config.data.cache_dir = str(tmp / "cache")
    config.data.ipc_train, config.data.ipc_validation, config.data.ipc_selection = "1-4", "5-6", "7-8"
    config.selection.steps = "goal_paths,value_weight"
    config.selection.budget = 500
    config.data.jobs = 1  # every file opened in this process, where it is recorded
    opened: list[str] = []
    patch = pytest.MonkeyPatch()
    for module in (builtins, io):
        original = module.open

        def recording(file, *args, _original=original, **kwargs):
            opened.append(str(file))
            return _original(file, *args, **kwargs)

        patch.setattr(module, "open", recording)
    solve = fast_downward.solve
    patch.setattr(fast_downward, "solve", lambda d, p, *a, **k: opened.append(str(p)) or solve(d, p, *a, **k))
    try:
        run = selection.train_domain(root, "blocks", tmp / "work", config)
    finally:
        patch.undo()
    return root, tmp / "work", run, opened, config


def _score(tried: dict) -> tuple[int, int, int]:
    return tried["solved"], -tried["plan_steps"], -tried["expansions"]


def _greedy_choice(tried: list[dict]) -> dict:
    """The candidate greedy selection keeps: each one kept when it scores higher than what was kept before; a
    step once kept is not tried again."""
    kept, steps_kept = tried[0], set()
    for candidate in tried[1:]:
        assert set(kept["settings"].items()) <= set(candidate["settings"].items())
        assert candidate["step"] not in steps_kept
        if _score(candidate) > _score(kept):
            kept = candidate
            steps_kept.add(candidate["step"])
    return kept


def test_selection_reads_training_problems_only(selected):
    root, _, _, opened, _ = selected
    resolved = {str(pathlib.Path(p).resolve()) for p in opened}
    assert any("training" in p for p in resolved)  # the recording saw the problems it read
    assert not [p for p in resolved if str(root / "blocks" / "testing") in p]


def test_selection_writes_what_it_tried_and_chose(selected, capsys):
    _, workdir, run, _, _ = selected
    record = json.loads((workdir / selection.SELECTION_FILE).read_text())
    assert (run / selection.SELECTION_FILE).read_text() == (workdir / selection.SELECTION_FILE).read_text()
    assert record["selection_problems"] == ["p07.pddl", "p08.pddl"]
    assert record["fitted_on"] == {"train": ["p01", "p02", "p03", "p04"], "validation": ["p05", "p06"]}
    assert record["left_out_without_expert_plan"] == {"train": [], "validation": []}
    first = [(t["pass"], t["step"]) for t in record["tried"]][:3]
    assert first == [(1, "start"), (1, "goal_paths"), (1, "value_weight")]
    assert all(t["pass"] == 2 for t in record["tried"][3:])  # tried again only where the first pass kept a step
    assert not record["tried"][3:] or _greedy_choice(record["tried"][:3]) is not record["tried"][0]
    settings = [t["settings"] for t in record["tried"]]
    assert all(a != b for i, a in enumerate(settings) for b in settings[:i])  # none tried twice
    assert {t["split"] for t in record["tried"]} == {"selection"}  # solved there: not tried on validation
    assert record["chosen"] == _greedy_choice(record["tried"])["settings"]
    loaded = ensemble.load_run(run)
    assert loaded.config.model.kind == "ridge" and loaded.config.data.domain == "blocks"
    assert loaded.config.value.goal_paths == record["chosen"].get("value.goal_paths", 0)
    assert loaded.config.decode.value_weight == record["chosen"].get("decode.value_weight", 0.0)


def test_selection_decoded_in_processes_tries_and_chooses_the_same(selected, tmp_path):
    root, workdir, _, _, config = selected
    again = tmp_path / "work"
    shutil.copytree(workdir, again, ignore=shutil.ignore_patterns("eval"))  # the trained runs, no decodings
    config = config.copy_and_resolve_references()
    config.data.jobs = 2
    selection.train_domain(root, "blocks", again, config)
    record, before = (json.loads((w / selection.SELECTION_FILE).read_text()) for w in (again, workdir))
    assert list((again / selection.SELECTION_DIR).glob("*/eval/*/shards/1-of-2/results.json"))
    assert record["tried"] == before["tried"] and record["chosen"] == before["chosen"]


def test_a_step_added_to_the_menu_trains_nothing_again_and_elimination_shortens(selected, tmp_path, monkeypatch):
    root, workdir, _, _, config = selected
    again = tmp_path / "work"
    shutil.copytree(workdir, again)
    config = config.copy_and_resolve_references()
    config.selection.steps += ",eliminated"

    def no_training(*args, **kwargs):
        raise AssertionError("a candidate was trained again")

    monkeypatch.setattr(selection.pipeline, "train_from_config", no_training)
    run = selection.train_domain(root, "blocks", again, config)
    record, before = (json.loads((w / selection.SELECTION_FILE).read_text()) for w in (again, workdir))
    first = [t for t in before["tried"] if t["pass"] == 1]
    assert record["tried"][: len(first)] == first
    eliminated = record["tried"][len(first)]
    kept = next(t for t in first if t["settings"] == _greedy_choice(first)["settings"])
    assert eliminated["step"] == "eliminated" and eliminated["settings"]["decode.action_elimination"] is True
    # the same searches, each solved plan a subsequence of the one before: as many solved, no more steps
    assert eliminated["problems"] == kept["problems"] and eliminated["expansions"] == kept["expansions"]
    assert eliminated["plan_steps"] <= kept["plan_steps"]
    assert ensemble.load_run(run).config.decode.action_elimination == (eliminated["plan_steps"] < kept["plan_steps"])


def test_steps_scored_from_the_search_without_them_score_as_decoding_them(selected, tmp_path, monkeypatch):
    """Elimination and unclipped estimates, scored from the search without them where it is the same, score as
    their own decodings; unclipped is derived only where no estimate of that search was at or below zero."""
    root, workdir, _, _, config = selected
    config = config.copy_and_resolve_references()
    config.selection.steps += ",unclipped,eliminated"
    monkeypatch.setattr(selection.pipeline, "train_from_config", lambda *a, **k: pytest.fail("trained again"))
    records = []
    for name, searched_alike in (("derived", selection._searched_alike), ("decoded", lambda settings: [])):
        again = tmp_path / name
        shutil.copytree(workdir, again)
        monkeypatch.setattr(selection, "_searched_alike", searched_alike)  # []: every candidate decoded
        selection.train_domain(root, "blocks", again, config)
        records.append(json.loads((again / selection.SELECTION_FILE).read_text()))
        decoded_with_elimination = list(again.glob("selection/*/eval/*action_elimination=True*"))
        assert bool(decoded_with_elimination) == (name == "decoded")
    derived, decoded = records
    assert {"eliminated", "unclipped"} <= {t["step"] for t in derived["tried"]}
    unclipped_decodings = list((tmp_path / "decoded").glob("selection/*/eval/*clip_cost_to_go=False*"))
    assert unclipped_decodings
    for unclipped in unclipped_decodings:  # decoded again exactly where the clipped search read an estimate <= 0
        split, _, label = unclipped.name.partition("-")
        others = [part for part in label.split("-") if part != "clip_cost_to_go=False"]
        clipped_dir = unclipped.with_name(f"{split}-{'-'.join(others) or 'default'}")
        clipped = json.loads((clipped_dir / "results.json").read_text())
        decoded_again = (tmp_path / "derived" / unclipped.relative_to(tmp_path / "decoded")).exists()
        assert decoded_again == any(r["estimates_at_most_zero"] for r in clipped)
    assert derived["tried"] == decoded["tried"] and derived["chosen"] == decoded["chosen"]


def test_a_step_that_pays_only_beside_a_later_one_is_kept_in_the_second_pass(selected, tmp_path, monkeypatch):
    """Scores from a stand-in decoder: goal paths solve nothing alone, the value weight one problem, both two."""
    root, workdir, _, _, config = selected
    monkeypatch.setattr(selection.pipeline, "train_from_config", lambda *a, **k: pytest.fail("trained again"))

    def scored(run_dir, split, out, processes, **decoding):
        paths, weighted = run_dir.name != "default", decoding.get("value_weight", 0.0) > 0
        solved = 2 if paths and weighted else int(weighted and not paths)
        results = [{"problem": f"p{i}", "solved": i < solved, "plan_length": 5, "steps": 10} for i in range(2)]
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results))

    monkeypatch.setattr(selection, "_decode", scored)
    chosen = {}
    for passes in (1, 2):
        again = tmp_path / f"passes-{passes}"
        shutil.copytree(workdir, again, ignore=shutil.ignore_patterns("eval"))
        config = config.copy_and_resolve_references()
        config.selection.passes = passes
        run = selection.train_domain(root, "blocks", again, config)
        record = json.loads((again / selection.SELECTION_FILE).read_text())
        chosen[passes] = record["chosen"]
        assert [(t["pass"], t["step"], t["solved"]) for t in record["tried"]] == [
            (1, "start", 0),
            (0, "value_weight", 1),  # the defaults solve none: a decoding step on them does, so the split is kept
            (1, "goal_paths", 0),
            *([(2, "goal_paths", 2)] if passes == 2 else []),
        ]
        assert ensemble.load_run(run).config.value.goal_paths == (4 if passes == 2 else 0)
    assert chosen == {1: {"decode.value_weight": 1.0}, 2: {"decode.value_weight": 1.0, "value.goal_paths": 4}}


def test_the_relaxed_plan_step_decodes_again_and_its_queue_is_in_the_run_where_it_scores_higher(
    selected, tmp_path, monkeypatch
):
    root, workdir, _, _, config = selected
    again = tmp_path / "work"
    shutil.copytree(workdir, again)
    config = config.copy_and_resolve_references()
    config.selection.steps += ",relaxed_plan"
    monkeypatch.setattr(selection.pipeline, "train_from_config", lambda *a, **k: pytest.fail("trained again"))
    run = selection.train_domain(root, "blocks", again, config)
    record, before = (json.loads((w / selection.SELECTION_FILE).read_text()) for w in (again, workdir))
    tried = record["tried"][-1]
    assert tried["step"] == "relaxed_plan" and tried["settings"]["decode.exploration"] == "relaxed_plan"
    assert tried["settings"]["decode.estimate_helpful_only"] is True
    kept = next(t for t in before["tried"] if t["settings"] == before["chosen"])
    better = _score(tried) > _score(kept)
    decode = ensemble.load_run(run).config.decode
    assert decode.exploration == ("relaxed_plan" if better else "none") and decode.estimate_helpful_only == better
    assert (record["chosen"] == tried["settings"]) == better


def test_where_no_decoding_solves_a_selection_problem_the_menu_is_tried_on_validation_only(
    selected, tmp_path, monkeypatch
):
    root, workdir, _, _, config = selected
    again = tmp_path / "work"
    shutil.copytree(workdir, again)
    decode = selection._decode

    def out_of_reach(run_dir, split, out, processes, **decoding):  # one expansion solves no selection problem
        decode(run_dir, split, out, processes, **{**decoding, "budget": 1 if split == "selection" else 500})

    monkeypatch.setattr(selection, "_decode", out_of_reach)
    monkeypatch.setattr(selection.pipeline, "train_from_config", lambda *a, **k: pytest.fail("trained again"))
    run = selection.train_domain(root, "blocks", again, config)
    record = json.loads((again / selection.SELECTION_FILE).read_text())
    first, second = record["tried"][:2], record["tried"][2:]
    assert [(t["split"], t["pass"], t["step"]) for t in first] == [
        ("selection", 1, "start"),
        ("selection", 0, "value_weight"),
    ]
    assert not any(t["solved"] for t in first)  # the step that trains (goal paths) is not tried on them
    assert {t["split"] for t in second} == {"validation"}
    assert [t["step"] for t in second][:3] == ["start", "goal_paths", "value_weight"]
    assert record["selection_split"] == "validation"
    assert record["selection_problems"] == ["p05.pddl", "p06.pddl"]
    assert second[0]["solved"] > 0  # the smaller problems tell the candidates apart again
    kept = _greedy_choice(second)
    assert record["chosen"] == kept["settings"]
    assert ensemble.load_run(run).config.value.goal_paths == kept["settings"].get("value.goal_paths", 0)


def test_where_a_decoding_solves_but_no_candidate_kept_does_the_menu_is_tried_again_on_validation(
    selected, tmp_path, monkeypatch
):
    """Scores from a stand-in decoder: on selection problems the value weight alone solves one, goal paths solve
    none in fewer expansions (kept), and both together none."""
    root, workdir, _, _, config = selected
    monkeypatch.setattr(selection.pipeline, "train_from_config", lambda *a, **k: pytest.fail("trained again"))

    def scored(run_dir, split, out, processes, **decoding):
        paths, weighted = run_dir.name != "default", decoding.get("value_weight", 0.0) > 0
        solved = 1 if split == "validation" or (weighted and not paths) else 0
        steps = 5 if paths else 10
        results = [{"problem": f"p{i}", "solved": i < solved, "plan_length": 5, "steps": steps} for i in range(2)]
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results))

    monkeypatch.setattr(selection, "_decode", scored)
    again = tmp_path / "work"
    shutil.copytree(workdir, again, ignore=shutil.ignore_patterns("eval"))
    selection.train_domain(root, "blocks", again, config)
    record = json.loads((again / selection.SELECTION_FILE).read_text())
    assert [(t["split"], t["pass"], t["step"], t["solved"]) for t in record["tried"]][:4] == [
        ("selection", 1, "start", 0),
        ("selection", 0, "value_weight", 1),
        ("selection", 1, "goal_paths", 0),
        ("selection", 1, "value_weight", 0),
    ]
    assert record["selection_split"] == "validation"


def test_unknown_step_or_missing_domain_is_one_line(tmp_path):
    config = config_lib.recommended()
    with pytest.raises(InputError, match="data.domain is empty"):
        selection.select_and_train(config, tmp_path)
    config.selection.steps = "value_weight,magic"
    with pytest.raises(InputError, match="unknown step"):
        selection.menu_steps(config)


def test_recommended_config_names_no_domain():
    text = (REPO / "configs" / "recommended.py").read_text()
    ipc = ["blocksworld", "childsnack", "ferry", "floortile", "miconic", "rovers", "satellite", "sokoban"]
    for name in [*layout.DOMAINS, *ipc]:
        assert not re.search(rf"\b{name}\b", text, re.IGNORECASE), name
    config = config_lib.recommended()
    assert config.data.domain == "" and config.model.kind == "ridge"
    config.data.domain = "anything"
    config_lib.check(config)
