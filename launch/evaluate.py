"""Decode every problem of a split with a trained run and write per-instance results.

  python launch/evaluate.py --workdir=runs/blocks_wl_xgb_delta/seed13 --split=test-extrapolation

Writes <workdir>/eval/<split>/{results.jsonl,results.json,results.csv,summary.json};
an interrupted evaluation resumes with the instances not yet decoded. A workdir with ensemble.json
(config.ensemble.members) is decoded with the ensemble.

  python launch/evaluate.py --workdir=... --split=test-extrapolation --backend=ray --shards=8 --ray_address=auto
"""

import json

from absl import flags

from statecentric_jax.cli import check_backend, define_decode_flags, run_main
from statecentric_jax.method.evaluation import evaluate

_WORKDIR = flags.DEFINE_string("workdir", None, "A trained run (launch/train.py --workdir).")
_SPLIT = flags.DEFINE_string("split", "test-extrapolation", "Split to decode.")
_PDDL_ROOT = flags.DEFINE_string("pddl_root", None, "PDDL root (default: the one the run was trained on).")
_DECODE_SETTINGS = define_decode_flags()
_MAX_IN_FLIGHT = flags.DEFINE_integer(
    "max_in_flight", 256, "Instances decoded together (bounds memory).", lower_bound=1
)
_USE_VAL = flags.DEFINE_bool("use_val", False, "Also check every plan with VAL's `Validate` binary (must be on PATH).")
_BACKEND = flags.DEFINE_enum("backend", "local", ["local", "ray"], "Decode here, or in --shards Ray tasks.")
_JOBS = flags.DEFINE_integer(
    "jobs", 1, "Local backend: processes the split's problems are dealt into (one core each).", lower_bound=1
)
_SHARDS = flags.DEFINE_integer("shards", 4, "Ray backend: Ray tasks the split's problems are divided into.")
_RAY_ADDRESS = flags.DEFINE_string("ray_address", None, "Ray cluster: auto, host:port, or unset for a local one.")
flags.mark_flag_as_required("workdir")


def main(argv):
    del argv
    settings = dict(_DECODE_SETTINGS(), max_in_flight=_MAX_IN_FLIGHT.value, use_val=_USE_VAL.value)
    check_backend(_BACKEND.value)
    if _BACKEND.value == "ray":
        from statecentric_jax.experiments import distributed

        summary = distributed.evaluate_sharded(
            _WORKDIR.value, _SPLIT.value, _SHARDS.value, _PDDL_ROOT.value, _RAY_ADDRESS.value, **settings
        )
    elif _JOBS.value > 1:
        from statecentric_jax.experiments import distributed

        summary = distributed.evaluate_sharded(
            _WORKDIR.value, _SPLIT.value, _JOBS.value, _PDDL_ROOT.value, backend="processes", **settings
        )
    else:
        summary = evaluate(_WORKDIR.value, _SPLIT.value, pddl_root=_PDDL_ROOT.value, **settings)
    print(json.dumps({k: v for k, v in summary.items() if k != "time_breakdown"}, indent=1))


if __name__ == "__main__":
    run_main(main)
