"""Multi-level elasticity (Marangozova-Martin, El Rheddane, de Palma, "Multi-Level Elasticity for Data Stream
Processing", IEEE TPDS 2019, doi:10.1109/TPDS.2019.2907950): the automatic benchmark that finds,
rate by rate, the cheapest container level that still helps (phase B), the capacity table it yields, and the
application-specific controller derived from that table (phase C).

Phase B, `multilevel-benchmark`. The seed starts the application un-parallelised on one machine and raises the
injected rate step by step; when an instance's health, processed / received over a period T, falls below a
threshold, it adds an instance with the cheapest container that still improves performance, else a new machine.
Here, on Spark (the workload is the `staircase` profile; `analysis.multilevel_table` runs it and logs the table):
- health over each period of `period_s`: events read ÷ events arrived in its batches, and — the project's addition
  for a micro-batch job, which can keep up on average while every event is late — the period's worst batch p95
  latency within the run's SLO (`latency_check`). A period is judged at one offered rate (the seed injects
  constant levels): the batch that meets a new level reads the previous level's lag, so a period restarts after it
  (`steady_tolerance`); a first benchmark without this added an executor for the step from 500 to 1,000 ev/s;
- the levels, cheapest first, in the order the phase-A characterisation (docs/multilevel.csv) justifies on this
  project's cluster: (1) partitions — the bottleneck operator's degree + 1 while it is below the task slots
  registered (degree 2 on 2 slots ran 1.26x degree 1; beyond the slots degree 8 ran 0.85x); (2) executors — one
  more 1-core executor (process level), which the job's host actuator turns into (3) a new worker when no host has
  a free core (`--host-scaling`). Each level's provisioning delay is measured: the time from the request to the
  slots registered;
- after an addition the next period starts once the new capacity is there, has settled (`settle_s`) and has
  drained the backlog the addition's delay left (to one trigger's arrivals; at most `recovery_s`); no period before
  `warmup_s`, the run's start-up. Every period judges one configuration in its steady state: a benchmark run without
  the drain judged two executors by the 18 s p95 of the 12 s their second one took to register.
The paper leaves the threshold, T, the rate step and the cost model open: 0.95, 10 s and the workload's step are
the project's choices (parameters), and cost is task slots held (executor cores), then tasks.

The table (`CapacityTable`): one row per configuration judged healthy, with the highest rate it was healthy at,
cheapest first, and the topology it was measured on; `table_from_decisions` derives it from the benchmark run's
decision log, so it is reproducible from the run's record alone.

Phase C, `multilevel`. At run time it reads a table (RunContext.capacity_table; the job resolves the `table`
parameter: an MLflow run id, `latest`, a registry alias `@ALIAS`, or a JSON file), estimates the rate it must
sustain — the last batch's arrival rate plus the backlog drained within `catch_up_s`, led by the rate's trend over
`window_batches` for the provisioning delay of the row it would move to — and takes the cheapest row whose rate
covers it with `headroom`. With `predictor=registry` the rate is foreseen by the registered load predictor instead of
the trend (the seed's controller steered by a predicted rate): the mean rate it forecasts over the next `period_s`,
when above the last batch's; guarded as AUTOSCALE's is (controllers.forecast_guard): while the model does worse than
the naive last value it is set aside for the trend.
Scale-out at once; scale-in (on which the paper is silent: the project's choice) only to a row whose rate covers the
need with `scale_in_band` to spare, after that has held for `stabilisation_s`, and then to the most demanding row
wanted meanwhile. Nothing moves before `warmup_s`: the run's first batches are slow while executors warm up, and
their backlog is no load to size for.

Phase C wears the guard layer (controllers/guard_layer.py), on by default as every parallelism controller does;
`guards=false` is the seed's controller exactly. The row's degrees go through the guards' review, and the row's
executors with them: a row change the review does not take (the band: the batches say the load does not need it
yet; the cost test; a burst's return) leaves the row and its executors as they were, and the next batch proposes
it again. Each batch start is sized for the events it is about to read within the slots registered (an executor
asked for now arrives seconds after the burst's batch), and returned after it. `catch_up_s` is the controller's own
and the guards' burst sizing reads it; `stabilisation_s` is the row's scale-in hold, which the guards do not
repeat (their own would hold a row's scale-in a second time).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from controllers.base import ConfigError, Controller, Param, Rule, register
from controllers.common_params import LEARNED_PREDICTOR_PARAMS, at_most_max_degree
from controllers.forecast import LastValuePredictor, PaperPredictor
from controllers.forecast_guard import NAIVE, GuardedPredictor
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS, GUARD_RULES, vector_text
from controllers.scale_in import ScaleInHold
from controllers.types import Decision, RunContext, Snapshot
from params.declare import SearchRange

HEALTH = "multilevel.health"
RATE = "multilevel.rate_eps"
HEALTHY = "multilevel.healthy"
LEVEL = "multilevel.level"
DELAY = "multilevel.delay_s"


class TableError(ValueError):
    """A capacity table that cannot be used; the message says which field and why."""


@dataclass(frozen=True)
class TableRow:
    rate_eps: float  # the highest offered rate (events/s) this configuration was healthy at
    degrees: Mapping[str, int]
    executors: int
    level: str = "start"  # the level whose addition made this configuration: start, partitions, executors
    delay_s: float = 0.0  # that level's measured provisioning delay (partitions: in force at the next batch)

    @property
    def slots(self) -> int:
        return self.executors  # 1-core executors (controllers.slots.EXECUTOR_CORES)

    def to_dict(self) -> dict[str, Any]:
        return {"rate_eps": round(self.rate_eps, 1), "degrees": dict(self.degrees), "executors": self.executors,
                "level": self.level, "delay_s": round(self.delay_s, 3)}


@dataclass(frozen=True)
class CapacityTable:
    """Rows cheapest first; `operators` and `query` say what it was measured on."""
    rows: tuple[TableRow, ...]
    operators: tuple[str, ...]
    query: str
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # where the run found it ("table run ID", "table file PATH"), for the run's record

    def to_dict(self) -> dict[str, Any]:
        return {"operators": list(self.operators), "query": self.query, "thresholds": dict(self.thresholds),
                "rows": [r.to_dict() for r in self.rows]}

    @classmethod
    def from_dict(cls, data: Any, where: str = "capacity table") -> "CapacityTable":
        if not isinstance(data, Mapping):
            raise TableError(f"{where}: expected a mapping with operators, query and rows")
        for key in ("operators", "query", "rows"):
            if key not in data:
                raise TableError(f"{where}: field {key!r} is missing")
        operators = tuple(data["operators"])
        rows = []
        for i, raw in enumerate(data["rows"]):
            at = f"{where}: rows[{i}]"
            try:
                degrees = {str(k): int(v) for k, v in dict(raw["degrees"]).items()}
                row = TableRow(float(raw["rate_eps"]), degrees, int(raw["executors"]), str(raw.get("level", "")),
                               float(raw.get("delay_s", 0.0)))
            except (KeyError, TypeError, ValueError) as exc:
                raise TableError(f"{at}: needs rate_eps, degrees and executors ({exc})") from None
            if set(degrees) != set(operators):
                raise TableError(f"{at}: field 'degrees' names {sorted(degrees)}, the table's operators are "
                                 f"{list(operators)}")
            if row.executors < 1 or min(degrees.values()) < 1 or row.rate_eps < 0:
                raise TableError(f"{at}: executors and degrees must be >= 1 and rate_eps >= 0")
            rows.append(row)
        if not rows:
            raise TableError(f"{where}: field 'rows' is empty: the benchmark judged no configuration healthy "
                             "(a first rate level too high for one executor at degree 1?)")
        return cls(tuple(rows), operators, str(data["query"]), dict(data.get("thresholds", {})), where)

    def check_for(self, operators: Sequence[str], query: str, where: str) -> None:
        """Refuse a table measured on another topology or query: its rates say nothing about this one."""
        if tuple(operators) != self.operators:
            raise TableError(f"{where}: measured on operators {list(self.operators)}, this run has {list(operators)}")
        if query != self.query:
            raise TableError(f"{where}: measured on query {self.query!r}, this run computes {query!r}")


def table_from_decisions(records: Iterable[Mapping[str, Any]], operators: Sequence[str], query: str,
                         thresholds: Mapping[str, Any] | None = None) -> CapacityTable:
    """The capacity table of a `multilevel-benchmark` run from its decision log (decisions.jsonl as dicts): each
    configuration judged healthy at a period's end, with the highest rate it was healthy at, in the order the
    benchmark reached them (cheapest first: it only ever adds capacity). A row's level and delay are those of the
    additions that led to it from the row before — the dearest level among them (executors over partitions) and the
    longest provisioning delay — since a controller moving between the two rows pays them all, also for additions
    whose own configuration was never judged healthy."""
    rank = {"partitions": 1, "executors": 2}
    healthy: dict[tuple, float] = {}
    made_by: dict[tuple, tuple[str, float]] = {}
    order: list[tuple] = []
    since_row: list[tuple[str, float]] = []  # additions (level, delay) since the last new row
    for record in records:
        details = record.get("details", {})
        config = (tuple(record["after"].items()), record.get("executors") or 1)  # the operators' order
        if LEVEL in details:  # an addition
            since_row.append((str(details[LEVEL]), float(details.get(DELAY) or 0.0)))
        elif DELAY in details and since_row:  # the executors the last addition asked for registered
            since_row[-1] = (since_row[-1][0], float(details[DELAY]))
        if details.get(HEALTHY) == 1:  # a period judged healthy changes nothing: after is what ran
            if config not in healthy:
                order.append(config)
                made_by[config] = ((max((lv for lv, _ in since_row), key=lambda lv: rank.get(lv, 0)),
                                    max(d for _, d in since_row)) if since_row else ("start", 0.0))
                since_row = []
            healthy[config] = max(healthy.get(config, 0.0), float(details[RATE]))
    rows = [{"rate_eps": healthy[key], "degrees": dict(key[0]), "executors": int(key[1]), "level": made_by[key][0],
             "delay_s": made_by[key][1]} for key in order]
    return CapacityTable.from_dict({"operators": list(operators), "query": query, "rows": rows,
                                    "thresholds": dict(thresholds or {})}, "the benchmark's capacity table")


def period_health(batches: Sequence[Snapshot]) -> tuple[float, float, float]:
    """(health, offered rate events/s, worst batch p95 latency s) over a period's batches: health is the seed's
    processed / received, events read over events arrived (at most 1: a period that reads an earlier backlog is
    healthy, not more than healthy)."""
    received = sum(s.arrivals for s in batches)
    processed = sum(s.records_read for s in batches)
    interval = sum(s.interval_s for s in batches)
    health = min(1.0, processed / received) if received else 1.0
    rate = received / interval if interval > 0 else 0.0
    worst = max((s.latency_p95_s for s in batches if s.latency_p95_s is not None), default=0.0)
    return health, rate, worst


@register
class MultilevelBenchmark(Controller):
    name = "multilevel-benchmark"
    summary = ("phase B of the multi-level seed: on a rising staircase, add the cheapest level that still helps "
               "whenever health falls; its decisions make the capacity table")
    PARAMS = {
        "period_s": Param(float, 10.0, "T: seconds over which health is judged (project's choice)", 0.001,
                          open_minimum=True),
        "health_threshold": Param(float, 0.95, "processed / received below which capacity is added (project's "
                                               "choice)", 0.0, 1.0, open_minimum=True),
        "latency_check": Param(bool, True, "a period is healthy only if its worst batch p95 latency is within the "
                                           "SLO (the project's addition for micro-batches)"),
        "max_executors": Param(int, 4, "executors: never more (the host level adds workers when cores run out)", 1),
        "warmup_s": Param(float, 20.0, "no period is judged before this (the run's start-up transient: JVM and "
                                       "Python workers warming; project's choice)", 0.0),
        "settle_s": Param(float, 10.0, "after an addition is in force, wait this long before the next judged period "
                                       "(a new executor's first tasks start its Python workers; project's choice)",
                          0.0),
        "recovery_s": Param(float, 30.0, "after the settling time, wait at most this long for the backlog the "
                                         "addition's delay left to drain (to one trigger's arrivals) before judging "
                                         "(project's choice)", 0.0),
        "steady_tolerance": Param(float, 0.1, "a period is judged at one offered rate: a batch whose rate differs "
                                              "by more than this from the period's first restarts the period after "
                                              "it (project's choice)", 0.0, open_minimum=True),
    }

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._degrees = {op: 1 for op in self.operators}
        self._executors = 1
        self._period: list[Snapshot] = []
        self._pending: tuple[float, int] | None = None  # (requested at, slots awaited)
        self._last_delay: float | None = None
        self._settle_until = self.params["warmup_s"]
        self._recovering = False  # an addition is in force: its delay's backlog may still be draining

    def initial_degrees(self) -> dict[str, int]:
        return dict(self._degrees)

    def initial_executors(self) -> int | None:
        return 1

    def decide(self, snapshot: Snapshot) -> Decision:
        p = self.params
        t = snapshot.time_s
        if self._pending is not None:
            since, awaited = self._pending
            if (snapshot.slots or 0) < awaited:
                return Decision(dict(self._degrees), f"waiting for executor {awaited} ({t - since:.1f} s)",
                                executors=self._executors)
            self._pending, self._last_delay = None, t - since
            self._period = []  # the new configuration's first period starts with all its slots there, settled
            self._settle_until, self._recovering = t + p["settle_s"], True
            return Decision(dict(self._degrees), f"executor {awaited} registered after {self._last_delay:.1f} s",
                            executors=self._executors, details={DELAY: self._last_delay})
        if t - snapshot.interval_s < self._settle_until:  # this batch began in a warm-up or settling time
            return Decision(dict(self._degrees), f"settling until t={self._settle_until:.0f} s",
                            executors=self._executors)
        rate = snapshot.arrivals / snapshot.interval_s if snapshot.interval_s > 0 else 0.0
        if self._recovering:
            waited = t - self._settle_until
            if snapshot.backlog > rate * snapshot.trigger_interval_s and waited < p["recovery_s"]:
                return Decision(dict(self._degrees), f"draining the backlog the addition's delay left "
                                f"({snapshot.backlog} events, {waited:.0f}/{p['recovery_s']:g} s)",
                                executors=self._executors)
            self._recovering = False
            self._period = []
        if self._period:
            first = self._period[0]
            level = first.arrivals / first.interval_s if first.interval_s > 0 else 0.0
            if abs(rate - level) > p["steady_tolerance"] * max(level, 1.0):
                # the batch that meets a new level reads the old one's lag: judging it would judge the step
                self._period = []
                return Decision(dict(self._degrees), f"offered rate {level:.0f} -> {rate:.0f} ev/s: a new period "
                                f"starts after this batch", executors=self._executors)
        self._period.append(snapshot)
        if t - self._period[0].time_s + self._period[0].interval_s < p["period_s"]:
            return Decision(dict(self._degrees), "judging the period", executors=self._executors)
        health, rate, worst = period_health(self._period)
        slo = self.context.slo_latency_s if self.context is not None else math.inf
        late = p["latency_check"] and worst > slo
        healthy = health >= p["health_threshold"] and not late
        details: dict[str, Any] = {HEALTH: health, RATE: rate, HEALTHY: int(healthy), "multilevel.p95_worst_s": worst}
        said = f"period health {health:.3f} at {rate:.0f} ev/s, worst p95 {worst:.2f} s"
        spans = {op: sum(s.operator(op).span_s for s in self._period) for op in self.operators}
        self._period = []
        if healthy:
            return Decision(dict(self._degrees), f"{said}: healthy", executors=self._executors, details=details)
        why = f"health {health:.3f} < {p['health_threshold']:g}" if not late else f"p95 {worst:.2f} s > SLO {slo:g} s"
        slots = snapshot.slots or self._executors
        growable = [op for op in self.operators if self._degrees[op] < min(slots, self.max_degree)]
        if growable:
            op = max(growable, key=lambda o: spans[o])
            self._degrees[op] += 1
            self._settle_until, self._recovering = t + p["settle_s"], True
            details.update({LEVEL: "partitions", DELAY: 0.0})
            return Decision(dict(self._degrees), f"{said}: {why}; partitions: {op} -> {self._degrees[op]} (within "
                            f"{slots} slot(s))", executors=self._executors, details=details)
        if self._executors < p["max_executors"]:
            self._executors += 1
            self._pending = (t, self._executors)
            details.update({LEVEL: "executors"})
            return Decision(dict(self._degrees), f"{said}: {why}; every operator at the slots: executors -> "
                            f"{self._executors}", executors=self._executors, details=details)
        return Decision(dict(self._degrees), f"{said}: {why}; no level left (max_executors "
                        f"{p['max_executors']})", executors=self._executors, details=details)


@register
class MultilevelController(GuardLayer, Controller):
    name = "multilevel"
    summary = "phase C of the multi-level seed: move between the rows of a benchmark's capacity table"
    PARAMS = {
        "table": Param(str, "latest", "the capacity table: an MLflow run id of analysis.multilevel_table, "
                                      "'latest' (the newest for this query), '@ALIAS' (a registry alias of this "
                                      "query's registered table, e.g. @current), or a JSON file"),
        "headroom": Param(float, 1.1, "a row is taken when its rate >= the needed rate x headroom", 1.0,
                          search=SearchRange(1.0, 1.5)),
        "scale_in_band": Param(float, 0.8, "scale in only to a row whose rate x this >= the needed rate x headroom",
                               0.0, 1.0, open_minimum=True, search=SearchRange(0.5, 0.95)),
        "stabilisation_s": Param(float, 30.0, "a cheaper row must have been wanted this long", 0.0,
                                 search=SearchRange(0.0, 120.0)),
        "catch_up_s": Param(float, 10.0, "drain the backlog within this many seconds", 0.001, open_minimum=True,
                            search=SearchRange(2.0, 60.0)),
        "window_batches": Param(int, 3, "batches over which the rate's trend is read", 2, search=SearchRange(2, 10)),
        "warmup_s": Param(float, 10.0, "stay on the first row before this (the run's start-up transient; project's "
                                       "choice)", 0.0, search=SearchRange(0.0, 30.0)),
        "predictor": Param(str, "trend", "how the rate to sustain is foreseen: 'trend' (the last batch's rate, its "
                                         "rising trend led by the next row's provisioning delay) or 'registry' (the "
                                         "MLflow load predictor `predictor_model@predictor_alias`: its mean rate "
                                         "over the next period_s, when above the last batch's)",
                           choices=("trend", "registry")),
        "period_s": Param(float, 10.0, "with predictor=registry: how far ahead the predictor forecasts (whole "
                                       "triggers; the model must have been trained for this horizon)", 0.001,
                          open_minimum=True),
        # not searched here: with the default predictor (trend) they change nothing
        **{name: param.but(search=None) for name, param in LEARNED_PREDICTOR_PARAMS.items()},
        # the guard layer (controllers/guards.py), on by default; `guards=false` is the seed's controller exactly.
        # catch_up_s and stabilisation_s are the controller's own above: the guards' burst sizing reads the same
        # catch-up time, and the scale-in stabilisation is the table's (per row), which the guards do not repeat
        **{name: param for name, param in GUARD_PARAMS.items() if name not in ("catch_up_s", "stabilisation_s")},
    }
    RULES = (at_most_max_degree("min_degree"), *GUARD_RULES)
    HISTORY_BATCHES = 120  # sub-intervals kept for a learned predictor: any model's lags, and its guard's periods

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        # the row's scale-in hold (stabilisation_s) is this controller's; the guards' would hold a row change twice
        self._make_guards(own={"stabilisation_s": 0.0})
        self.table: CapacityTable | None = None
        self._row = 0
        self._window: deque[Snapshot] = deque(maxlen=self.params["window_batches"])
        self._hold = ScaleInHold(self.params["stabilisation_s"])
        self.predictor: Any = None  # a learned predictor handed over by the run (predictor=registry)
        self.predictor_note = ("registry predictor not loaded; the trend is used"
                               if self.params["predictor"] == "registry" else "")
        self._series: deque[tuple[float, float, float]] = deque(maxlen=self.HISTORY_BATCHES)
        self._trigger_s = 1.0

    def check_run(self, context: RunContext) -> None:
        if self.params["predictor"] == "registry" and self.params["period_s"] < context.trigger_s:
            raise ConfigError(f"controller {self.name!r}: period_s ({self.params['period_s']}) is shorter than the "
                              f"trigger interval ({context.trigger_s}); the predictor forecasts whole micro-batches")

    def bind(self, context: RunContext) -> None:
        super().bind(context)
        if context.capacity_table is None:
            raise ConfigError(f"controller {self.name!r}: no capacity table was resolved for parameter 'table' "
                              f"({self.params['table']!r})")
        table = context.capacity_table
        if tuple(table.operators) != self.operators:
            raise ConfigError(f"controller {self.name!r}: parameter 'table': measured on operators "
                              f"{list(table.operators)}, this run has {list(self.operators)}")
        too_high = [r for r in table.rows if max(r.degrees.values()) > self.max_degree]
        if too_high:
            raise ConfigError(f"controller {self.name!r}: parameter 'table': a row has degree "
                              f"{max(too_high[0].degrees.values())} > max_degree {self.max_degree}")
        self.table = table
        self._trigger_s = context.trigger_s
        self._bind_predictor(context)

    def _bind_predictor(self, context: RunContext) -> None:
        """A learned predictor the run loaded is used, guarded unless predictor_guard is off. A registry without the
        model hands over the paper's OLS as a fallback (for AUTOSCALE): multilevel keeps its trend then, and says so."""
        if self.params["predictor"] != "registry" or context.predictor is None:
            return
        if isinstance(context.predictor, (PaperPredictor, LastValuePredictor)):
            self.predictor_note = f"{context.predictor_warning or 'no learned predictor'}; the trend is used"
            return
        p = self.params
        self.predictor = (GuardedPredictor(context.predictor, p["guard_window"], p["guard_margin"],
                                           p["guard_min_scored"]) if p["predictor_guard"] else context.predictor)
        self.predictor_note = context.predictor_warning

    def run_tags(self) -> dict[str, str]:
        return {"predictor": self.predictor.name if self.predictor is not None else "trend"}

    def run_params(self) -> dict[str, Any]:
        if self.table is None:
            return {}
        return {"multilevel.table_source": self.table.source, "multilevel.table_rows": len(self.table.rows)}

    def run_artifacts(self) -> dict[str, Any]:
        return {"multilevel_table.json": self.table.to_dict()} if self.table is not None else {}

    def _rows(self) -> tuple[TableRow, ...]:
        if self.table is None:
            raise ConfigError(f"controller {self.name!r} used before a run bound its capacity table")
        return self.table.rows

    def initial_degrees(self) -> dict[str, int]:
        # before bind (validation) no table is known: degree 1, the table's first row in every benchmark
        return dict(self.table.rows[0].degrees) if self.table else {op: 1 for op in self.operators}

    def initial_executors(self) -> int | None:
        return self.table.rows[0].executors if self.table else 1

    def need(self, snapshot: Snapshot, lead_s: float) -> tuple[float, float]:
        """(events/s to sustain, the trend in events/s per second): the last batch's arrival rate, the backlog
        drained within catch_up_s, and the rising trend over the window carried `lead_s` ahead — or, with a learned
        predictor, its forecast mean rate over the next period_s where that is higher than the last rate."""
        window = list(self._window)
        rates = [s.arrivals / s.interval_s for s in window if s.interval_s > 0]
        rate = rates[-1] if rates else 0.0
        slope = 0.0
        if len(rates) >= 2 and window[-1].time_s > window[0].time_s:
            slope = (rates[-1] - rates[0]) / (window[-1].time_s - window[0].time_s)
        drain = snapshot.backlog / self.params["catch_up_s"]
        by_trend = rate + drain + max(0.0, slope) * lead_s
        if snapshot.interval_s > 0:
            self._series.append((snapshot.time_s, float(snapshot.arrivals), snapshot.interval_s))
        if self.predictor is None or not self._series:
            return by_trend, slope
        period = self.params["period_s"]
        times, counts, intervals = (list(column) for column in zip(*self._series))
        forecast = self.predictor.forecast(times, counts, intervals, period, max(1, round(period / self._trigger_s)))
        if self._model_set_aside():
            # the guard found the model worse than the last value: the controller's own estimate, which leads a
            # rising rate by the next row's delay, rather than the flat last value (the model is still scored)
            return by_trend, slope
        return max(rate, forecast.arrivals / period) + drain, forecast.trend

    def _model_set_aside(self) -> bool:
        return isinstance(self.predictor, GuardedPredictor) and self.predictor.using == NAIVE

    def decide(self, snapshot: Snapshot) -> Decision:
        """The row's degrees and executors, through the guards' review when they are on. A row change the review
        does not take (the band, the cost test, a burst's return) leaves the row in force as it was: the next
        batch proposes it again."""
        row = self._row
        decision = self._reviewed(snapshot, self._propose)
        if self.guards.enabled and decision.executors is None and self._row != row:
            self._row = row
        return decision

    def _propose(self, snapshot: Snapshot) -> Decision:
        p = self.params
        rows = self._rows()
        self._window.append(snapshot)
        t = snapshot.time_s
        current = self._row
        # the row the need calls for, the need led by the provisioning delay of the row above
        lead = rows[min(current + 1, len(rows) - 1)].delay_s
        need, slope = self.need(snapshot, lead)
        wanted = next((i for i, r in enumerate(rows) if r.rate_eps >= need * p["headroom"]), len(rows) - 1)
        comfortable = next((i for i, r in enumerate(rows)
                            if r.rate_eps * p["scale_in_band"] >= need * p["headroom"]), len(rows) - 1)
        self._hold.note(t, comfortable)
        if self.predictor is None or self._model_set_aside():
            said = f"need {need:.0f} ev/s (trend {slope:+.0f}/s, lead {lead:.1f} s)"
            if self.predictor is not None:
                said += f"; predictor {self.predictor.name} set aside: worse than the last value"
        else:
            said = f"need {need:.0f} ev/s (predictor {self.predictor.name}, forecast trend {slope:+.0f})"
        if self.predictor_note:
            said += f" [{self.predictor_note}]"
        details = {"multilevel.need_eps": need, "multilevel.row": current, "predicted.arrival_eps": need}
        if isinstance(self.predictor, GuardedPredictor):
            details.update({f"guard_{key}": value for key, value in self.predictor.state().items()})
        if t < p["warmup_s"]:
            wanted = comfortable = current
            said += f", warming up until t={p['warmup_s']:g} s"
        if wanted > current:
            self._row = wanted
            self._hold.reset()
            reason = f"{said}: row {current} -> {wanted} ({rows[wanted].rate_eps:.0f} ev/s, {rows[wanted].level})"
        elif comfortable < current:
            self._row, waited = self._hold.lower(comfortable, current, t)
            if waited >= p["stabilisation_s"]:
                reason = f"{said}: row {current} -> {self._row} after {waited:.0f} s"
            else:
                reason = f"{said}: row {current} kept; row {comfortable} wanted for {waited:.0f}/" \
                         f"{p['stabilisation_s']:g} s"
        else:
            self._hold.reset()
            reason = f"{said}: row {current} ({rows[current].rate_eps:.0f} ev/s) fits"
        row = rows[self._row]
        degrees = dict(row.degrees)
        if snapshot.slots:  # executors still registering: no more tasks than the slots there are
            degrees = {op: min(d, max(snapshot.slots, 1)) for op, d in degrees.items()}
        details["predicted.vector"] = vector_text(row.degrees)
        return Decision(degrees, reason, executors=row.executors, details=details)
