"""A corrupt XGBoost checkpoint is one line."""

from tests.launching import launch, one_error_line


def test_zero_byte_xgb_checkpoint_is_one_line(tiny_run_copy):
    (tiny_run_copy / "checkpoint" / "model.ubj").write_bytes(b"")
    one_error_line(
        launch("evaluate.py", f"--workdir={tiny_run_copy}"),
        f"error: {tiny_run_copy}/checkpoint/model.ubj: corrupt XGBoost model (empty file)",
    )
