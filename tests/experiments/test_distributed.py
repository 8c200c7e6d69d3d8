"""Ray backend on a real local Ray instance: sweep and sharded evaluation give what the local backend gives,
a worker killed mid-task is retried without lost or duplicated results, an unreachable cluster fails fast."""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")

from statecentric_jax.errors import InputError  # noqa: E402
from statecentric_jax.experiments import distributed, sweep  # noqa: E402
from statecentric_jax.method import evaluation, pipeline, shards  # noqa: E402

pytestmark = [
    pytest.mark.ray,
    # Ray starts its processes with subprocess (fork, then exec at once), which trips JAX's fork warning;
    # nothing runs JAX between the fork and the exec, so there is nothing to deadlock.
    pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning"),
]
REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = """
from statecentric_jax import config as config_lib


def get_config():
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.xgb.rounds = 4
    return config
"""


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def sweeps(cluster, blocks_root, tmp_path_factory):
    """The same 1-config x 1-seed sweep on both backends, sharing one data cache."""
    base = tmp_path_factory.mktemp("sweeps")
    (base / "tiny_blocks.py").write_text(CONFIG)
    out = {}
    for backend in sweep.BACKENDS:
        result = sweep.run_sweep(
            base / backend, [str(base / "tiny_blocks.py")], [13], pddl_root=str(blocks_root),
            cache_dir=str(base / "cache"), backend=backend,
        )  # fmt: skip
        assert result.finished == ["tiny_blocks"] and result.failed == {}
        out[backend] = base / backend / "tiny_blocks"
    return out


def plans(out_dir: pathlib.Path) -> list[tuple]:
    records = json.loads((out_dir / "results.json").read_text())
    return [(pathlib.Path(r["problem_file"]).name, r["solved"], r["plan"]) for r in records]


def test_sweep_on_ray_gives_the_local_plans(sweeps, tmp_path):
    local, on_ray = sweeps["local"], sweeps["ray"]
    assert json.loads((local / "results.json").read_text()) == json.loads((on_ray / "results.json").read_text())
    for split in pipeline.EVALUATION_SPLITS:
        assert plans(local / "seed13/eval" / split) == plans(on_ray / "seed13/eval" / split)
    record = json.loads((on_ray.parent / sweep.SWEEP_FILE).read_text())["invocations"][-1]
    assert record["backend"] == "ray" and list(record["task_seconds"]) == ["tiny_blocks/13"]
    # a rerun skips the finished configuration without starting a task
    assert sweep.run_sweep(on_ray.parent, [str(on_ray.parent.parent / "tiny_blocks.py")], [13], backend="ray").skipped


def _run(sweeps, tmp_path) -> pathlib.Path:
    """A copy of the trained run without its evaluations."""
    run = tmp_path / "run"
    shutil.copytree(sweeps["local"] / "seed13", run, ignore=shutil.ignore_patterns("eval"))
    return run


def test_sharded_evaluation_gives_the_local_outputs(sweeps, tmp_path):
    local = sweeps["local"] / "seed13/eval/test-extrapolation"
    run = _run(sweeps, tmp_path)
    summary = distributed.evaluate_sharded(run, "test-extrapolation", shards=3)
    out = run / "eval/test-extrapolation"
    assert plans(out) == plans(local) and summary["shards"] == 3
    expected = json.loads((local / "summary.json").read_text())
    for key in ("problems", "solved", "success_rate", "mean_plan_length", "beam_width", "metric"):
        assert summary[key] == expected[key] == json.loads((out / "summary.json").read_text())[key]
    assert len((out / "results.jsonl").read_text().splitlines()) == expected["problems"]
    assert (out / "results.csv").read_text().splitlines()[0] == (local / "results.csv").read_text().splitlines()[0]


def _killed_once(marker: str, workdir: str, split: str, root: str, files: list, out: str, kwargs: dict) -> dict:
    """First attempt: decode one problem of the shard, then the worker process dies; the retry finishes it."""
    if not os.path.exists(marker):
        pathlib.Path(marker).touch()
        evaluation.evaluate(workdir, split, root, problem_files=files[:1], out_dir=out)
        os._exit(1)
    return shards.evaluate_shard(workdir, split, root, files, out, kwargs)


def test_a_killed_worker_is_retried_without_lost_or_duplicated_results(sweeps, blocks_root, tmp_path):
    run = _run(sweeps, tmp_path)
    files = [str(p) for p in sorted((blocks_root / "blocks/test-extrapolation").glob("*.pddl"))]
    out = shards.shard_dir(run / "eval" / "test-extrapolation", 0, 1)
    done = {}
    args = (str(tmp_path / "killed"), str(run), "test-extrapolation", str(blocks_root), files, str(out), {})
    distributed.run_tasks(_killed_once, {"shard": args}, lambda key, value, error: done.update({key: (value, error)}))
    assert (tmp_path / "killed").exists() and done["shard"][1] is None and done["shard"][0]["problems"] == len(files)
    lines = [json.loads(line)["problem_file"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(lines) == files  # the killed attempt's problem is kept once, the others decoded by the retry
    local = sweeps["local"] / "seed13/eval/test-extrapolation"
    assert plans(out) == plans(local)


def test_unreachable_ray_address_is_one_line_and_exit_code_2(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError, match="cannot reach the Ray cluster"):
        distributed.init(f"127.0.0.1:{port}")
    proc = subprocess.run(
        [sys.executable, "launch/sweep.py", f"--sweep_dir={tmp_path}", "--configs=blocks_wl_xgb_delta", "--backend=ray",
         f"--ray_address=127.0.0.1:{port}"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot reach the Ray cluster at 127.0.0.1:{port}" in errors[0]
