"""The method: train from solved problems, expert data aggregation, and planning and evaluation with a trained run."""
