"""Fixed degrees for the whole run: the baseline every elastic controller must beat.

With every degree at 1 it is the AUTOSCALE paper's ConfMin; with degrees sized for the peak it is ConfExpt.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from controllers.base import Controller, Param, register
from controllers.common_params import at_most_max_degree
from controllers.types import Decision, Snapshot


@register
class StaticController(Controller):
    name = "static"
    summary = "fixed per-operator degrees (ConfMin: all 1; ConfExpt: sized for the peak)"
    PARAMS = {
        "degree": Param(int, 1, "degree of every operator not listed in `degrees`", minimum=1),
        "degrees": Param(int, {}, "per-operator degrees, e.g. {enrich: 4}", minimum=1, per_operator=True),
    }
    RULES = (at_most_max_degree("degree", "degrees"),)

    def __init__(self, params: Mapping[str, Any], operators: Sequence[str], max_degree: int):
        super().__init__(params, operators, max_degree)
        self._degrees = {op: int(self.params["degrees"].get(op, self.params["degree"])) for op in operators}

    def initial_degrees(self) -> dict[str, int]:
        return dict(self._degrees)

    def decide(self, snapshot: Snapshot) -> Decision:
        return Decision(dict(self._degrees), "static configuration")
