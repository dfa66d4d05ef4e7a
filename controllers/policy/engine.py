"""Evaluating a policy on a stream of readings: the thesis' rule evaluator with its intended semantics.

The SEEP thesis' §4.2.2 and §4.3.5 (pp. 36-50) fix what this does, and the policy's options settle what it
left open:
- every reading younger than a trigger's window must be on the required side (no averaging);
- the triggers of a rule are AND-ed; without a reading at or before now - (1 - history_tolerance) x window there
  is "not enough history", which leaves the trigger's state as it was;
- a rule acts on the transition to fired (edge-triggered), never again while it stays fired; an action that is
  blocked (limit, guard, floor, the run's maximum) uses up that transition too — the rule re-arms only when a
  reading breaks its condition (the thesis' `fired && changed`);
- limits block instead of clamping; guards look at the time of the operator's last action of the named type;
- rules are independent and evaluated in the order written, each seeing the sizes the earlier ones set; a wildcard
  rule is evaluated separately for every operator on that operator's readings.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from controllers.policy.model import WILDCARD, Policy, Rule

EPS = 1e-9

# readings[operator][metric][aggregate] = value; a metric the source cannot measure is simply absent
Readings = Mapping[str, Mapping[str, Mapping[str, float]]]


@dataclass(frozen=True)
class Action:
    """One firing of a rule, executed or blocked — both are logged, so a user sees why nothing happened."""
    time_s: float
    rule: str
    operator: str
    action: str
    old_size: int
    new_size: int
    executed: bool
    reason: str

    def describe(self) -> str:
        verb = "" if self.executed else "blocked: "
        change = f"{self.operator} {self.old_size}->{self.new_size}"
        return f"{verb}rule {self.rule!r} {self.action} {change} ({self.reason})"


@dataclass
class _TriggerState:
    history: deque = field(default_factory=deque)  # (time_s, value), oldest first
    fired: bool = False
    changed: bool = False


@dataclass
class _RuleState:
    triggers: list[_TriggerState]
    fired: bool = False


class PolicyEngine:
    def __init__(self, policy: Policy, operators: Sequence[str], initial_sizes: Mapping[str, int],
                 max_size: int | None = None):
        unknown = sorted(policy.operators() - set(operators) - {WILDCARD})
        if unknown:
            raise ValueError(f"policy names operator(s) {', '.join(unknown)} not in {', '.join(operators)}")
        self.policy = policy
        self.operators = tuple(operators)
        self.initial_sizes = dict(initial_sizes)
        self.max_size = max_size
        self._states: dict[tuple[int, str], _RuleState] = {}
        for i, rule in enumerate(policy.rules):
            for op in self._targets(rule):
                self._states[(i, op)] = _RuleState([_TriggerState() for _ in rule.triggers])
        self._last_action: dict[tuple[str, str], float] = {}  # (operator, action type) -> time_s

    def _targets(self, rule: Rule) -> tuple[str, ...]:
        return self.operators if rule.operator == WILDCARD else (rule.operator,)

    def observe(self, time_s: float, readings: Readings, sizes: Mapping[str, int]) -> list[Action]:
        """Feed one sampling period's readings; returns the rules that fired (executed or blocked), in order."""
        sizes = dict(sizes)
        actions = []
        options = self.policy.options
        for i, rule in enumerate(self.policy.rules):
            for op in self._targets(rule):
                state = self._states[(i, op)]
                for trigger, t_state in zip(rule.triggers, state.triggers):
                    value = readings.get(op, {}).get(trigger.metric, {}).get(trigger.aggregate)
                    self._update(t_state, trigger, rule.longest_window_s, time_s, value)
                all_fired = all(t.fired for t in state.triggers)
                if options.edge == "rule":
                    act = all_fired and not state.fired
                else:
                    act = all(t.fired and t.changed for t in state.triggers)
                state.fired = all_fired
                if act:
                    action = self._act(rule, op, time_s, sizes)
                    if action.executed:
                        sizes[op] = action.new_size
                        self._last_action[(op, rule.action)] = time_s
                    actions.append(action)
        return actions

    def _update(self, state: _TriggerState, trigger, longest_s: float, now: float, value: float | None) -> None:
        """SEEP's trigger (thesis §4.2.2, p. 39; its ActionTrigger/TimeThreshold): every reading younger than the window
        (now - T, now] must hold, and the history must reach back (1 - history_tolerance) x T — SEEP keeps the
        reading at the window's edge for that check without judging it. On Spark, where a reading only comes when a
        batch ends, the check asks that the history reaches back, however few readings the window holds."""
        state.changed = False
        if value is not None:
            state.history.append((now, value))
        while len(state.history) > 1 and state.history[1][0] <= now - longest_s + EPS:
            state.history.popleft()  # keep one reading at or before the longest window's start
        enough = now - (1.0 - self.policy.options.history_tolerance) * trigger.for_at_least_s
        window = [v for t, v in state.history if t > now - trigger.for_at_least_s + EPS]
        if not window or state.history[0][0] > enough + EPS:
            return  # not enough history: no change (thesis Alg. 4.3, p. 50)
        inclusive = self.policy.options.below == "inclusive"
        fired = all(trigger.holds(v, inclusive) for v in window)
        state.changed = fired != state.fired
        state.fired = fired

    def _act(self, rule: Rule, op: str, now: float, sizes: Mapping[str, int]) -> Action:
        old = sizes[op]
        new = rule.factor.apply(rule.action, old)

        def result(executed: bool, reason: str) -> Action:
            return Action(now, rule.name, op, rule.action, old, new, executed, reason)

        triggers = " and ".join(f"{t.metric} {t.comparator} {t.value:g} for {t.for_at_least_s:g}s"
                                for t in rule.triggers)
        if new == old:
            return result(False, f"{triggers}; already at the floor of 1" if rule.action == "scale-in"
                          else f"{triggers}; the factor does not change the size")
        if rule.limit is not None and rule.limit.blocks(rule.action, new, self.initial_sizes.get(op, 1)):
            side = "above" if rule.action == "scale-out" else "below"
            return result(False, f"{triggers}; limit: never {side} {rule.limit.kind} {rule.limit.amount:g}")
        if self.max_size is not None and new > self.max_size:
            return result(False, f"{triggers}; the run's maximum degree is {self.max_size}")
        if self.policy.options.guards == "enforced":
            for guard in rule.guards:
                last = self._last_action.get((op, guard.last_action))
                if last is not None and now - last < guard.seconds - EPS:
                    return result(False, f"{triggers}; guard: last {guard.last_action} {now - last:g}s ago "
                                         f"< {guard.seconds:g}s")
        return result(True, triggers)
