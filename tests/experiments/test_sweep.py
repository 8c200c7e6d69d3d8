"""sweep: commands, data prepared once per domain and encoding, skip/resume, failures reported (no training)."""

import json
import os
import pathlib

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.experiments import sweep
from statecentric_jax.method import pipeline

CONFIGS = ["blocks_wl_xgb_delta", "blocks_wl_lstm_state", "blocks_fsf_xgb_delta", "gripper_wl_xgb_delta"]
SEEDS = [13, 14]


class Stub:
    """Stands in for the run_experiment processes and the data preparation."""

    def __init__(self, fail=(), fail_data=()):
        self.fail, self.fail_data = set(fail), set(fail_data)
        self.commands, self.prepared = [], []

    def run_command(self, command, log_path, env=None):
        self.commands.append(command)
        args = dict(arg[2:].split("=", 1) for arg in command[3:])
        run_dir = pathlib.Path(args["workdir"])
        assert log_path == run_dir / "log.txt"
        if run_dir.name in self.fail:
            log_path.write_text("Traceback: boom\n")
            return 1
        seeds = args["seeds"].split(",")
        rates = {split: {seed: 0.5 for seed in seeds} for split in pipeline.EVALUATION_SPLITS}
        for seed in seeds:
            for split in pipeline.EVALUATION_SPLITS:
                (run_dir / f"seed{seed}/eval/{split}").mkdir(parents=True, exist_ok=True)
                (run_dir / f"seed{seed}/eval/{split}/summary.json").write_text("{}")
        (run_dir / "results.json").write_text(json.dumps(rates))
        return 0

    def prepare_data(self, config):
        self.prepared.append((config.data.domain, config.data.encoding))
        if config.data.domain in self.fail_data:
            raise InputError(config.data.pddl_root, "no plan for train/p1.pddl")


@pytest.fixture
def stub(monkeypatch):
    def install(**kwargs):
        stub = Stub(**kwargs)
        monkeypatch.setattr(sweep, "run_command", stub.run_command)
        monkeypatch.setattr(sweep.pipeline, "prepare_data", stub.prepare_data)
        return stub

    return install


def launched(stub):
    return [pathlib.Path(dict(a[2:].split("=", 1) for a in c[3:])["workdir"]).name for c in stub.commands]


def test_failure_is_reported_and_a_rerun_resumes(tmp_path, stub):
    first = stub(fail={"gripper_wl_xgb_delta"})
    result = sweep.run_sweep(
        tmp_path / "sweep", CONFIGS, SEEDS, parallel=2, pddl_root="data", cache_dir=str(tmp_path / "cache")
    )
    assert sorted(result.finished) == sorted(CONFIGS[:3]) and result.skipped == []
    assert list(result.failed) == ["gripper_wl_xgb_delta"]
    assert str(tmp_path / "sweep/gripper_wl_xgb_delta/log.txt") in result.failed["gripper_wl_xgb_delta"]
    # data prepared once per (domain, encoding), before any run
    assert first.prepared == [("blocks", "wl"), ("blocks", "fsf"), ("gripper", "wl")]
    command = first.commands[0]
    assert command[1:3] == ["-m", "statecentric_jax.experiments.sweep_worker"] and "--seeds=13,14" in command
    written = json.loads((tmp_path / "sweep" / "blocks_wl_xgb_delta" / sweep.CONFIG_FILE).read_text())
    assert written["data"]["pddl_root"] == os.path.abspath("data")
    assert written["data"]["cache_dir"] == str(tmp_path / "cache")
    assert sweep.count_summaries(tmp_path / "sweep", CONFIGS, SEEDS) == 3 * len(SEEDS) * len(pipeline.EVALUATION_SPLITS)

    second = stub()
    result = sweep.run_sweep(tmp_path / "sweep", CONFIGS, SEEDS, pddl_root="data", cache_dir=str(tmp_path / "cache"))
    assert launched(second) == ["gripper_wl_xgb_delta"] and second.prepared == [("gripper", "wl")]
    assert sorted(result.skipped) == sorted(CONFIGS[:3]) and result.failed == {}
    record = json.loads((tmp_path / "sweep/sweep.json").read_text())
    assert [len(i["failed"]) for i in record["invocations"]] == [1, 0]
    assert all(i["wall_seconds"] >= 0 and i["peak_rss_mb_children"] >= 0 for i in record["invocations"])

    third = stub()  # more seeds: every configuration is incomplete again
    sweep.run_sweep(tmp_path / "sweep", CONFIGS[:1], [13, 14, 15], pddl_root="data", cache_dir=str(tmp_path / "cache"))
    assert launched(third) == ["blocks_wl_xgb_delta"]


def test_failed_data_preparation_skips_only_its_configurations(tmp_path, stub):
    fake = stub(fail_data={"gripper"})
    result = sweep.run_sweep(tmp_path, CONFIGS, SEEDS, pddl_root="data", cache_dir=str(tmp_path / "cache"))
    assert sorted(launched(fake)) == sorted(CONFIGS[:3])
    assert (
        list(result.failed) == ["gripper_wl_xgb_delta"]
        and "no plan for train/p1.pddl" in result.failed["gripper_wl_xgb_delta"]
    )


def test_completeness_needs_every_seed_and_split(tmp_path):
    assert not sweep.is_complete(tmp_path, SEEDS)
    (tmp_path / "results.json").write_text(json.dumps({split: {"13": 1.0} for split in pipeline.EVALUATION_SPLITS}))
    assert sweep.is_complete(tmp_path, [13]) and not sweep.is_complete(tmp_path, SEEDS)
    (tmp_path / "results.json").write_text("{")
    assert not sweep.is_complete(tmp_path, [13])


def test_default_configs_are_the_32_table1_files():
    assert len(sweep.TABLE1_CONFIGS) == 32 == len(set(sweep.TABLE1_CONFIGS))
    configs = [sweep.load_config(sweep.config_path(name)) for name in sweep.TABLE1_CONFIGS]
    assert {(c.data.domain, c.data.encoding, c.model.kind, c.model.mode) for c in configs} == {
        tuple(name.split("_")) for name in sweep.TABLE1_CONFIGS
    }
    assert all(os.path.isabs(c.data.pddl_root) and os.path.isabs(c.data.cache_dir) for c in configs)


def test_bad_input(tmp_path, stub):
    stub()
    with pytest.raises(InputError, match="no such config file"):
        sweep.run_sweep(tmp_path, ["blocks_wl_xgb_nope"])
    with pytest.raises(InputError, match="same name"):
        sweep.run_sweep(tmp_path, ["blocks_wl_xgb_delta", str(sweep.REPO / "configs/blocks_wl_xgb_delta.py")])
    with pytest.raises(InputError, match="at least 1"):
        sweep.run_sweep(tmp_path, parallel=0)
    (tmp_path / "broken.py").write_text("def get_config():\n    return 1 / 0\n")
    with pytest.raises(InputError, match="cannot load config"):
        sweep.run_sweep(tmp_path, [str(tmp_path / "broken.py")])


def test_parallel_processes_share_the_cores(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert sweep.thread_env(4)["OMP_NUM_THREADS"] == "2" and sweep.thread_env(16)["OMP_NUM_THREADS"] == "1"
    assert sweep.thread_env(1)["OMP_WAIT_POLICY"] == "PASSIVE"
