"""The shipped policies (controllers/policy/catalogue/*.yaml): the thesis' example policies, ready to run by name."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from controllers.policy.model import Policy
from controllers.policy.parse import PolicyError, parse_policy

CATALOGUE = Path(__file__).resolve().parent / "catalogue"


def catalogue_names() -> list[str]:
    return sorted(p.stem for p in CATALOGUE.glob("*.yaml"))


def load_policy(name: str, operators: Sequence[str] | None = None) -> Policy:
    path = CATALOGUE / f"{name}.yaml"
    if not path.is_file():
        raise PolicyError(f"no policy {name!r} in the catalogue; known: {', '.join(catalogue_names())}")
    return parse_policy(path.read_text(), source=f"{name} ({path.name})", operators=operators)


def resolve_policy(value: str, operators: Sequence[str] | None = None, source: str = "(inline)") -> Policy:
    """A catalogue name, or the policy itself as YAML/JSON text."""
    text = value.strip()
    if text and "\n" not in text and ":" not in text and "{" not in text:
        return load_policy(text, operators)
    return parse_policy(value, source=source, operators=operators)
