"""Run configurations: the paper's Table 1 configs unchanged, the config files, the sections each layer
checks, and stored configs of older code read with the settings added since at their defaults."""

import hashlib
import json
import pathlib

import ml_collections
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.cli import load_config_file
from statecentric_jax.embedding.config import ENCODINGS
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import train
from statecentric_jax.learning.transitions import MODES
from statecentric_jax.problems.domains import DOMAINS

REPO = pathlib.Path(__file__).resolve().parents[1]
# sha256 of the 32 Table 1 configs' config.json text (`to_json(indent=1)`), domains x encodings x kinds x
# modes in that order, as written before the config was split into the layers' sections
TABLE1_DIGEST = "1bf5cc44102c687731bb0a62a460cbd77cda53ba123a0cb31cddd8996a8b291f"
BEST_DIGEST = "bfb08c054048b4270ef37187ad1eefd5303701238e7e8861e18ef936e56959c6"  # the 4 best(domain) likewise
# settings added since the digests were taken, each at the value that decodes as before; left out of the digest
ADDED_SINCE = {
    ("decode", "clip_cost_to_go"): True,
    ("decode", "prune_dead_ends"): False,
    ("decode", "estimate_helpful_only"): False,
    ("decode", "prune_symmetric"): False,
    ("decode", "preferred_boost"): 0,
    ("aggregation", "budget"): 0,
}


def _digest(configs) -> str:
    digest = hashlib.sha256()
    for config in configs:
        stored = json.loads(config.to_json(indent=1))
        for (section, name), value in ADDED_SINCE.items():
            assert stored[section].pop(name) == value
        digest.update(json.dumps(stored, indent=1).encode())
    return digest.hexdigest()


def test_table1_configs_are_unchanged():
    assert DOMAINS == ("blocks", "gripper", "logistics", "visitall")
    configs = [
        config_lib.table1(domain, encoding, kind, mode)
        for domain in DOMAINS
        for encoding in ENCODINGS
        for kind in learning_config.MODEL_KINDS
        for mode in MODES
    ]
    assert len(configs) == 32
    assert _digest(configs) == TABLE1_DIGEST
    assert _digest(config_lib.best(domain) for domain in DOMAINS) == BEST_DIGEST


def test_defaults_are_the_papers_hyperparameters():
    """Table 7 and the decoder of section 4, read off the paper rather than the code."""
    config = config_lib.base()
    assert config.lstm.to_dict() == dict(hidden=256, layers=2, learning_rate=1e-2, batch_size=32, epochs=250)
    assert (config.xgb.max_depth, config.xgb.learning_rate, config.xgb.rounds, config.xgb.early_stopping) == (
        8,
        0.1,
        1000,
        10,
    )
    assert config.xgb.multi_strategy == "one_output_per_tree"
    assert (config.decode.strategy, config.decode.beam_width) == ("beam", 3)
    assert (config.decode.horizon_base, config.decode.horizon_per_object) == (100, 10)
    assert (config.value.kind, config.aggregation.rounds, config.ensemble.members) == ("none", 0, "")
    assert config.seed == 13


def test_a_config_stored_by_older_code_reads_with_the_defaults_added_since(tmp_path):
    today = config_lib.table1("gripper", "fsf", "xgb", "state")
    old = json.loads(today.to_json())
    for section in ("value", "aggregation", "ensemble"):
        del old[section]
    del old["decode"]["exploration"], old["xgb"]["multi_strategy"]
    (tmp_path / train.CONFIG_FILE).write_text(json.dumps(old))
    read = config_lib.read(tmp_path)
    assert read.to_dict() == today.to_dict()
    assert config_lib.with_defaults(old) == json.loads(today.to_json())
    assert config_lib.same_run(read, today)
    # training's reader completes the sections training reads, and leaves the others as stored
    trained = train.read_config(tmp_path)
    assert trained.value.to_dict() == today.value.to_dict() and "aggregation" not in trained


def test_a_stored_setting_outside_its_range_is_one_line_naming_the_file(tmp_path):
    config = json.loads(config_lib.table1("blocks", "wl", "lstm", "state").to_json())
    config["aggregation"]["splits"] = "train,test"
    (tmp_path / train.CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(InputError, match="never a test split") as caught:
        config_lib.read(tmp_path)
    assert str(caught.value.path).endswith(train.CONFIG_FILE)
    with pytest.raises(InputError, match="not a trained model"):
        config_lib.read(tmp_path / "missing")


@pytest.mark.parametrize(
    "section, name, value, message",
    [
        ("data", "encoding", "gnn", "data.encoding='gnn' is not one of wl, fsf"),
        ("lstm", "epochs", 0, "lstm.epochs=0 must be an integer >= 1"),
        ("decode", "beam_width", 0, "decode.beam_width=0 must be at least 1"),
        ("aggregation", "walk_steps", 0, "aggregation.walk_steps=0 must be an integer >= 1"),
    ],
)
def test_each_section_is_checked(section, name, value, message):
    config = config_lib.base()
    config[section][name] = value
    with pytest.raises(InputError, match=message):
        config_lib.check(config)


def test_one_config_file_per_table1_configuration():
    files = sorted((REPO / "configs").glob("*_*_*_*.py"))
    assert len(files) == 4 * 2 * 2 * 2
    for path in files:
        config = load_config_file(path)
        assert path.stem == "_".join([config.data.domain, config.data.encoding, config.model.kind, config.model.mode])
        config_lib.check(config)
    assert load_config_file(REPO / "configs" / "base.py").to_dict() == config_lib.base().to_dict()


def test_one_recommended_config_per_domain_beside_the_paper_one():
    """configs/<domain>_best.py: valid, opt-in only through fields the paper's config leaves off."""
    for domain in DOMAINS:
        config = load_config_file(REPO / "configs" / f"{domain}_best.py")
        config_lib.check(config)
        paper = config_lib.table1(domain, "wl", "xgb", "delta")
        assert (paper.value.kind, paper.decode.strategy) == ("none", "beam")
        assert (config.value.kind, config.decode.strategy) == ("ridge", "best_first")
        settings = config_lib.BEST[domain]
        assert config.decode.value_weight == settings.value_weight
        assert config.decode.budget == settings.budget
        assert config.decode.path_weight == settings.path_weight and paper.decode.path_weight == 0.0
        assert config.aggregation.rounds == settings.aggregation_rounds
        assert config.aggregation.random_walks == settings.random_walks and paper.aggregation.random_walks == 0
        assert config.aggregation.retrain == "value" and paper.aggregation.rounds == 0
        assert (config.value.embedding == "own") == (settings.value_wl_iterations > 0)
        assert learning_config.value_goal_paths(config) == settings.value_goal_paths
        assert paper.value.goal_paths == 0  # the paper's cost-to-go-free config leaves it off
        # the strategy-only ablation of docs/results.md
        config.value.kind, config.aggregation.rounds, config.aggregation.random_walks = "none", 0, 0
        config_lib.check(config)
        assert config.model.to_dict() == paper.model.to_dict() and config.data.to_dict() == paper.data.to_dict()


@pytest.mark.parametrize(
    "key,value", [("xgb.rounds", 0), ("xgb.max_depth", -3), ("xgb.n_jobs", "x"), ("decode.beam_width", 0)]
)
def test_a_stored_config_with_a_bad_value_is_refused(key, value):
    config = ml_collections.ConfigDict(config_lib.base().to_dict(), type_safe=False)  # as read from config.json
    section, name = key.split(".")
    config[section][name] = value
    with pytest.raises(InputError, match=key):
        config_lib.check(config)
