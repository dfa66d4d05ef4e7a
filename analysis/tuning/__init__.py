"""Tuning: which settings of a controller, for a workload. The search space comes from the controllers' own
declarations (space), the screening searches it in the plant model calibrated to the Spark job (screening), and the
best few are what a suite then confirms on Spark."""
