"""Paths a run will create, checked before anything starts."""
from __future__ import annotations

from pathlib import Path


def first_existing(path: Path) -> Path:
    """The nearest part of `path` that exists (itself, or an ancestor): what decides whether it can be created."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    return probe
