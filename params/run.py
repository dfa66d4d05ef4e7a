"""The settings a run has (service level, trigger, bounds), declared once.

The command line (`python -m jobs.run`), the run configuration (`jobs.config.RunConfig`), suites
(`analysis.suite`) and the DAGs' Params all read their defaults, bounds and help text from here, so the SLO is
5 s everywhere because it is written once.
"""
from __future__ import annotations

from params.declare import Param

RUN_SETTINGS: dict[str, Param] = {
    "slo_latency_s": Param(float, 5.0, "latency bound, seconds, end to end from each event's scheduled arrival",
                           minimum=0.0, open_minimum=True),
    "slo_target": Param(float, 0.95, "fraction of events that must meet the latency bound", minimum=0.0,
                        maximum=1.0, open_minimum=True),
    "trigger_s": Param(float, 2.0, "micro-batch trigger interval, seconds", minimum=0.0, open_minimum=True),
    "max_degree": Param(int, 8, "largest degree of any operator (also spark.sql.shuffle.partitions)", minimum=1),
    "source": Param(str, "replay", "where the events come from: 'replay' (the project's replay source, which serves "
                    "each event when it is due) or 'kafka' (the workload produced into a topic of the run's own on "
                    "schedule and read by Spark's Kafka source; the backlog the controller sees is the consumer "
                    "lag; needs a broker: `elastic kafka start`)", choices=("replay", "kafka")),
    "source_partitions": Param(int, 2, "read tasks per micro-batch (with --source kafka: the topic's partitions)",
                               minimum=1),
    "kafka_bootstrap": Param(str, "127.0.0.1:9092", "the Kafka broker a run with --source kafka writes to and reads "
                             "from (host:port[,host:port])"),
    "max_events_per_batch": Param(int, 0, "admission cap: at most this many events read per micro-batch, the rest "
                                  "wait for the next (Kafka's maxOffsetsPerTrigger); 0 reads everything due",
                                  minimum=0),
    "lead_in_s": Param(float, 1.0, "seconds between the query's start and the first event", minimum=0.0),
    "trigger_phase": Param(str, "seeded", "where Spark's trigger grid falls against the schedule's time 0: 'seeded' "
                           "(from the workload's seed: the same seed meets the same batch boundaries in every run "
                           "and configuration), 'free' (wherever start-up ends) or seconds in [0, trigger)"),
    "drain_timeout_s": Param(float, 60.0, "seconds to keep processing backlog after the schedule ends", minimum=0.0),
    "keep_warm_s": Param(float, 30.0, "while no batch has run for this long, a tiny job through the query keeps "
                         "Spark's Python workers alive (Spark stops idle ones after 60 s, and the batch after a "
                         "longer silence pays their start again; jobs/keep_warm.py); 0: off", minimum=0.0,
                         maximum=45.0),
    "key_groups": Param(int, 128, "key groups the keyed operator's keys are hashed into, the unit a placement "
                        "controller moves between partitions (--placement)", minimum=1),
    "ledger_window_batches": Param(int, 3, "batches after an action over which the decision ledger compares what "
                                   "the controller predicted with what happened", minimum=1),
}

