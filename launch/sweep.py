"""Run a set of configurations (default: all 32 of Table 1) as parallel processes, resumably.

  python launch/sweep.py --sweep_dir=runs/sweep --pddl_root=<paper splits> --parallel=2
  python launch/sweep.py --sweep_dir=runs/sweep --backend=ray --ray_address=auto   # one Ray task per (config, seed)

Each configuration goes to <sweep_dir>/<name>/ (output in log.txt); a rerun skips
finished configurations, seeds and splits. Wall time and peak memory: <sweep_dir>/sweep.json.
"""

from absl import flags

from statecentric_jax.atomic import check_writable
from statecentric_jax.cli import check_backend, parse_ints, run_main
from statecentric_jax.experiments import sweep
from statecentric_jax.method import pipeline

_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None, "Where the runs go, one folder per configuration.")
_CONFIGS = flags.DEFINE_list(
    "configs", list(sweep.TABLE1_CONFIGS), "Config names in configs/, or paths to config files."
)
_PARALLEL = flags.DEFINE_integer("parallel", 1, "Configurations run at the same time.")
_SEEDS = flags.DEFINE_list("seeds", [str(s) for s in pipeline.SEEDS], "Seeds to train and evaluate.")
_PDDL_ROOT = flags.DEFINE_string("pddl_root", None, "PDDL root for every run (default: each config's data.pddl_root).")
_CACHE_DIR = flags.DEFINE_string("cache_dir", None, "Plans and datasets cache (default: each config's data.cache_dir).")
_BACKEND = flags.DEFINE_enum("backend", "local", list(sweep.BACKENDS), "local processes, or Ray tasks.")
_RAY_ADDRESS = flags.DEFINE_string(
    "ray_address", None, "Ray cluster: auto, host:port, or unset for a Ray instance started on this machine."
)
flags.mark_flags_as_required(["sweep_dir"])


def main(argv):
    del argv
    seeds = parse_ints("seeds", _SEEDS.value)
    check_backend(_BACKEND.value)
    for folder in (_SWEEP_DIR.value, _CACHE_DIR.value):
        if folder is not None:
            check_writable(folder)
    result = sweep.run_sweep(
        _SWEEP_DIR.value,
        configs=_CONFIGS.value,
        seeds=seeds,
        parallel=_PARALLEL.value,
        pddl_root=_PDDL_ROOT.value,
        cache_dir=_CACHE_DIR.value,
        backend=_BACKEND.value,
        ray_address=_RAY_ADDRESS.value,
    )
    print(
        f"{len(result.finished)} finished, {len(result.skipped)} already complete, {len(result.failed)} failed"
        f" in {result.wall_seconds:.0f} s (peak child memory {result.peak_rss_mb_children:.0f} MiB)"
    )
    for name, reason in sorted(result.failed.items()):
        print(f"FAILED {name}: {reason}")
    return 1 if result.failed else 0


if __name__ == "__main__":
    run_main(main)
