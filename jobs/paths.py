"""Paths a run will create, checked before anything starts."""
from __future__ import annotations

from pathlib import Path


def first_existing(path: Path) -> Path:
    """The nearest part of `path` that exists (itself, or an ancestor): what decides whether it can be created."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    return probe


# in every run's output folder (its content: the MLflow run id): a run replaces its output folder, and replaces only
# a folder that holds this marker, so a mistyped --output-dir never deletes a user's files
OUTPUT_MARKER = ".elastic-run"
