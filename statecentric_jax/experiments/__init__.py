"""The study around the method: sweeps over configurations, the Table-1 report, and the Ray backend."""
