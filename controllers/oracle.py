"""The oracle: the least-cost degree vector for every batch, knowing the future. Its cost is the lower bound.

It knows what no real controller can: the whole arrival schedule (which events will be due when each batch
starts) and the operators' per-record service times, selectivities and fixed costs, measured beforehand by a
calibration run of the same job (`python -m jobs.calibrate`, whose numbers become this controller's parameters and
so are recorded with every oracle run). It plans against the same model of a micro-batch as the plant model
(simulator.plant); both use controllers.cost_model: a batch reads everything due at its start; operator i spreads its records over p_i tasks, in
waves of `slots`; the batch lasts the sum of the operators' spans plus a fixed overhead.

For the next batch it picks the least total degree Σ p_i (the slot-seconds per second the run is charged) whose
predicted duration fits the budget

    duration <= headroom × (SLO − age of the oldest event the batch will read)

so that every event it reads, the backlog it carries included, leaves within the latency objective. A degree
change costs nothing in this job (the next batch simply uses it), so deciding batch by batch loses only what a
myopic choice can: a batch allowed to run long makes the next one older and bigger. That is why the bound is checked,
not assumed: on the plant model the oracle costs no more than any static vector, DS2, the threshold rule or
AUTOSCALE that also keep every event within the objective (tests/unit/test_oracle.py). The search itself is exact:
a dynamic programme over the operators on total degree, each operator's candidate degrees reduced to those that
shorten its span.

When no vector fits (the load exceeds what the maximum degrees can do within the budget), it uses the fastest
vector and says INFEASIBLE in its reason; the run counts those batches and the analysis marks the workload
infeasible at that maximum instead of scoring the oracle as a bound.
"""
from __future__ import annotations

from typing import Any, Mapping

from controllers.base import Controller, Param, Rule, register
from controllers.common_params import MIN_DEGREE, at_most_max_degree
from controllers.cost_model import ArrivalSchedule as Arrivals
from controllers.cost_model import OperatorModel, calibrated_models, joins_predecessor, operator_timing
from controllers.types import Decision, RunContext, Snapshot, vector_text
from params.run import RUN_SETTINGS
from params.units import US

INFEASIBLE = "INFEASIBLE"



def least_cost_vector(models: tuple[OperatorModel, ...], records: int, budget_s: float, overhead_s: float,
                      slots: int, min_degree: int, max_degree: int, stage_overhead_s: float = 0.0
                      ) -> tuple[dict[str, int], float, bool]:
    """(degrees, predicted duration, feasible): the least Σp with predicted duration <= budget, exactly; when none
    fits, the vector with the shortest duration (least Σp among those). An unkeyed operator at another degree than
    its predecessor's runs a stage of its own, which costs `stage_overhead_s` (controllers.cost_model)."""
    # per operator: (degree, span) for the degrees worth trying. Without a stage cost a degree whose span is not
    # shorter than a smaller one's never helps; with one it may (it lets the operator chain with a neighbour)
    options = []
    flowing = float(records)
    for op in models:
        best, cands = None, []
        for p in range(min_degree, max_degree + 1):
            span = operator_timing(op, int(round(flowing)), p, slots)[0]
            if stage_overhead_s > 0 or best is None or span < best - 1e-12:
                cands.append((p, span))
                best = span if best is None else min(best, span)
        options.append(cands)
        flowing *= op.selectivity
    # dynamic programme: (total degree, last degree) -> (least total time beyond the batch overhead, the vector)
    frontier: dict[tuple[int, int], tuple[float, tuple[int, ...]]] = {(0, 0): (0.0, ())}
    for i, (op, cands) in enumerate(zip(models, options)):
        nxt: dict[tuple[int, int], tuple[float, tuple[int, ...]]] = {}
        for (cost, last), (time_s, vec) in frontier.items():
            for p, s in cands:
                # a keyed operator's stage is among the fewest: only an unchained unkeyed one adds a stage
                stage = stage_overhead_s if i > 0 and not op.keyed and not joins_predecessor(op.keyed, p, last) else 0.0
                key, value = (cost + p, p), (time_s + s + stage, vec + (p,))
                if key not in nxt or value[0] < nxt[key][0] - 1e-12:
                    nxt[key] = value
        frontier = nxt
    best_per_cost: dict[int, tuple[float, tuple[int, ...]]] = {}
    for (cost, _), value in frontier.items():
        if cost not in best_per_cost or value[0] < best_per_cost[cost][0] - 1e-12:
            best_per_cost[cost] = value
    names = [op.name for op in models]
    for cost in sorted(best_per_cost):
        time_s, vec = best_per_cost[cost]
        if overhead_s + time_s <= budget_s:
            return dict(zip(names, vec)), overhead_s + time_s, True
    fastest = min(best_per_cost, key=lambda c: (best_per_cost[c][0], c))
    time_s, vec = best_per_cost[fastest]
    return dict(zip(names, vec)), overhead_s + time_s, False


def _costs_cover(service_s: Mapping[str, float], operators) -> bool | str:
    missing = [op for op in operators if op not in service_s]
    return not missing or (f"parameter 'service_s' lacks operator(s) {', '.join(missing)}; run `python -m "
                           "jobs.calibrate` to measure them")


@register
class OracleController(Controller):
    name = "oracle"
    summary = "knows the schedule and the calibrated costs: the least-cost vector per batch, the cost lower bound"
    PARAMS = {
        "service_s": Param(float, {}, "busy seconds per input record of each operator (from a calibration run)",
                           minimum=0.0, per_operator=True),
        "selectivity": Param(float, {}, "records out / records in per operator (default 1)", minimum=0.0,
                             per_operator=True),
        "task_overhead_s": Param(float, 0.002, "fixed cost of one task (calibrated)", 0.0),
        "task_launch_s": Param(float, 0.0, "stage time per task outside its busy time: scheduling (calibrated)",
                               0.0),
        "batch_overhead_s": Param(float, 0.05, "fixed cost of one batch: scheduling, commit (calibrated)", 0.0),
        "stage_overhead_s": Param(float, 0.0, "fixed cost of each stage an unchained operator adds (calibrated)",
                                  0.0),
        "keyed": Param(bool, {}, "operators whose input is shuffled by key: each starts a stage (calibrated)",
                       per_operator=True),
        "slots": Param(int, 0, "tasks that can run at once (executor cores); 0: the run's max degree", 0),
        "slo_latency_s": Param(float, 0.0, "latency objective every event should meet; 0: the run's SLO", 0.0),
        "headroom": Param(float, 0.9, "plan for this fraction of the budget (calibration is not exact)", 0.05, 1.0),
        "min_degree": MIN_DEGREE,
        "calibration_run": Param(str, "", "MLflow run id of the calibration the costs come from (recorded only)"),
    }
    RULES = (
        Rule(("service_s",), lambda v, c: None if c.operators is None else _costs_cover(v["service_s"], c.operators),
             "parameter 'service_s' lacks operator(s) of the topology; run `python -m jobs.calibrate` to measure "
             "them"),
        at_most_max_degree("min_degree"),
    )

    def __init__(self, params: Mapping[str, Any], operators, max_degree: int):
        super().__init__(params, operators, max_degree)
        p = self.params
        self.models = calibrated_models(p, self.operators)
        self.slots = min(p["slots"], max_degree) if p["slots"] else max_degree
        self.arrivals: Arrivals | None = None
        self.trigger_s = 1.0
        self.slo_latency_s = self.params["slo_latency_s"] or RUN_SETTINGS["slo_latency_s"].default
        self._read = 0

    def bind(self, context: RunContext) -> None:
        """The run hands over the workload schedule, its trigger and SLO: this is what makes it an oracle."""
        super().bind(context)
        self.arrivals = context.schedule
        self.trigger_s = context.trigger_s
        self.slo_latency_s = self.params["slo_latency_s"] or context.slo_latency_s

    def plan(self, start_s: float, read: int, trigger_s: float) -> tuple[dict[str, int], dict[str, float], bool]:
        """The vector for a batch starting at `start_s` that will read everything due then, `read` events already
        read."""
        if self.arrivals is None:
            raise RuntimeError("the oracle needs the workload schedule (bind a RunContext with it) before it can plan")
        due = self.arrivals.count_due(int(start_s * US))
        records = max(0, due - read)
        age = start_s - float(self.arrivals.arrival_us(read, read + 1)[0]) / US if records else 0.0
        budget = self.params["headroom"] * (self.slo_latency_s - age)
        degrees, duration, feasible = least_cost_vector(self.models, records, budget, self.params["batch_overhead_s"],
                                                        self.slots, self.params["min_degree"], self.max_degree,
                                                        self.params["stage_overhead_s"])
        arriving = self.arrivals.count_due(int((start_s + trigger_s) * US)) - due
        return degrees, {"records": records, "budget_s": budget, "predicted_s": duration, "oldest_age_s": age,
                         # for the decision ledger (controllers/ledger.py): the schedule's rate over the next
                         # interval and the batch the vector takes on what it will read
                         "predicted.arrival_eps": arriving / trigger_s, "predicted.records": records,
                         "predicted.batch_s": duration, "predicted.vector": vector_text(degrees)}, feasible

    def initial_degrees(self) -> dict[str, int]:
        if self.arrivals is None:  # before the run hands over the schedule (e.g. while validating the config)
            return {op: self.params["min_degree"] for op in self.operators}
        return self.plan(self.trigger_s, 0, self.trigger_s)[0]  # the first batch reads about one trigger's events

    def decide(self, snapshot: Snapshot) -> Decision:
        self._read += snapshot.records_read
        started = snapshot.time_s - snapshot.batch_duration_s
        next_start = max(snapshot.time_s, started + snapshot.trigger_interval_s)
        degrees, details, feasible = self.plan(next_start, self._read, snapshot.trigger_interval_s)
        text = (f"next batch at {next_start:.1f}s reads {details['records']:.0f} events (oldest "
                f"{details['oldest_age_s']:.1f} s old): predicted {details['predicted_s']:.2f} s for budget "
                f"{details['budget_s']:.2f} s")
        if not feasible:
            return Decision(degrees, f"{INFEASIBLE}: even the fastest vector misses the budget; {text}",
                            details=details)
        return Decision(degrees, f"least-cost vector; {text}", details=details)

    def at_batch_start(self, pending: int, time_s: float, degrees: Mapping[str, int],
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        """The vector planned again for the batch that is starting, where it differs. `decide` plans for a batch at
        the next trigger, but Spark runs no batch while nothing arrives: after an idle stretch the next batch starts
        when the events do, reading a burst the plan knew nothing of (on the on/off Azure code trace the oracle met
        such bursts at degree 1 and kept 15 % of events within the SLO where the guards, sizing at the batch start,
        kept 40 %). Here the start is known, so the plan is for the batch that runs."""
        planned, details, feasible = self.plan(time_s, self._read, self.trigger_s)
        if planned == dict(degrees):
            return None
        text = (f"this batch reads {details['records']:.0f} events (oldest {details['oldest_age_s']:.1f} s old): "
                f"predicted {details['predicted_s']:.2f} s for budget {details['budget_s']:.2f} s")
        return Decision(planned, f"{INFEASIBLE}: even the fastest vector misses the budget; {text}" if not feasible
                        else f"least-cost vector; {text}", details=details)
