"""Experiments: evaluation, the train-and-evaluate pipeline, sweeps and the Table-1 report."""
