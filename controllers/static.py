"""Fixed degrees for the whole run: the baseline every elastic controller must beat.

With every degree at 1 it is the AUTOSCALE paper's ConfMin; with degrees sized for the peak it is ConfExpt.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from controllers.base import ConfigError, Controller, Param, register
from controllers.types import Decision, Snapshot


@register
class StaticController(Controller):
    name = "static"
    summary = "fixed per-operator degrees (ConfMin: all 1; ConfExpt: sized for the peak)"
    PARAMS = {
        "degree": Param(int, 1, "degree of every operator not listed in `degrees`", minimum=1),
        "degrees": Param(dict, {}, "per-operator degrees, e.g. {enrich: 4}"),
    }

    def __init__(self, params: Mapping[str, Any], operators: Sequence[str], max_degree: int):
        super().__init__(params, operators, max_degree)
        unknown = sorted(set(self.params["degrees"]) - set(operators))
        if unknown:
            raise ConfigError(
                f"controller 'static': parameter 'degrees' names unknown operator(s) {', '.join(unknown)}; "
                f"operators: {', '.join(operators)}"
            )
        for op, degree in self.params["degrees"].items():
            if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
                raise ConfigError(f"controller 'static': degree of operator {op!r} must be an integer >= 1, got {degree!r}")
        self._degrees = {op: int(self.params["degrees"].get(op, self.params["degree"])) for op in operators}

    def initial_degrees(self) -> dict[str, int]:
        return dict(self._degrees)

    def decide(self, snapshot: Snapshot) -> Decision:
        return Decision(dict(self._degrees), "static configuration")
