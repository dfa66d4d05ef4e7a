"""Workload specs and their deterministic event schedules (numpy only: no Spark, no I/O beyond reading specs)."""
from workloads.schedule import Schedule
from workloads.spec import WorkloadError, WorkloadSpec, catalogue_names, load_workload, parse_workload

__all__ = ["Schedule", "WorkloadError", "WorkloadSpec", "catalogue_names", "load_workload", "parse_workload"]
