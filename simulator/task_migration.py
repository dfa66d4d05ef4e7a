"""The task-migration model: stream tasks on nodes grouped in sub-clusters, in the setting of Souravlas,
Anastasiadou and Katsavounis (Appl. Sci. 2021, §6), driven by the same placement controller objects as the Spark
job (controllers/placement).

Why a second model: the paper's question (when a node is overloaded, where should its tasks go?) is about many
nodes (5 to 100, in sub-clusters of 5) and migrations that take 10 to 100 s, which neither a 2-core machine nor the
Sousa model (two replicas per operator, seconds-long restarts) has.

What it models, per tick of `dt_s` (fluid):
  - each sub-cluster of `nodes_per_sub_cluster` nodes runs the paper's topology, 1 spout + 4 bolts with
    `tasks_per_component` tasks each, block-distributed (Eq. 1: task i on node floor(i / t) mod N);
  - a task offers a load in units of its node's capacity (the share of the node it needs), around
    `base_utilisation` per node with a lognormal spread `task_cv` between tasks (word-count stages differ);
  - every `overload_every_s` one node (in turn, seeded) is degraded for `overload_s`: a task on it needs
    `overload_factor` times its usual share ("heavily overloaded", §4: the paper gives no figure), so moving tasks
    off it relieves it;
  - a node above its capacity builds a backlog (seconds of work); an event's latency on a node is its service time
    over (1 - utilisation), capped, plus the backlog; a task being migrated processes nothing, its events wait for the
    rest of the migration, which lasts `migration_base_s` + `migration_per_task_s` per task moved in the same step
    (the paper: migrations last 10 to 100 s);
  - the controller sees a report every `report_s` (the paper samples every 5 s): each task's load as its busy time;
  - how a migration stops the dataflow (`pause`, for the paper's baselines, Shukla and Simmhan, ICDCS 2018): "none"
    (the paper's scheme: only the moved tasks stop), "capture" (CCR: the source's sub-cluster stops for
    `checkpoint_s` while the checkpoint is taken; its arrivals wait at the sources) or "drain" (DCR: the sources
    stop, the sub-cluster drains what is in flight, then the checkpoint; arrivals wait for both).
Metrics: the standard deviation of the nodes' utilisation, averaged over the reports (the paper's load-balancing
measure), and the event-weighted mean and p99 latency.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controllers.placement import PlacementController, PlacementSnapshot
from simulator.placement import weighted_quantile


@dataclass(frozen=True)
class TaskCluster:
    sub_clusters: int = 1
    nodes_per_sub_cluster: int = 5  # the paper's sub-cluster
    tasks_per_component: int = 6  # 5 components x 6 tasks = 30 tasks per sub-cluster: 6 per node (paper: 4-16)
    components: int = 5  # 1 spout + 4 bolts
    base_utilisation: float = 0.5
    task_cv: float = 0.3
    overload_every_s: float = 60.0
    overload_factor: float = 2.5
    overload_s: float = 120.0
    migration_base_s: float = 10.0
    migration_per_task_s: float = 2.0
    service_s: float = 0.01
    checkpoint_s: float = 5.0  # a baseline's checkpoint under a paused sub-cluster (the timeout; not given)
    duration_s: float = 600.0
    dt_s: float = 1.0
    report_s: float = 5.0

    @property
    def nodes(self) -> int:
        return self.sub_clusters * self.nodes_per_sub_cluster

    @property
    def tasks_per_node(self) -> int:
        return self.components * self.tasks_per_component // self.nodes_per_sub_cluster


@dataclass
class TaskRun:
    load_std_mean: float
    latency_mean_s: float
    latency_p99_s: float
    migrations: int


def initial_placement(cluster: TaskCluster) -> np.ndarray:
    """Eq. 1 within each sub-cluster: task i on node floor(i / t) mod N."""
    per_sub = cluster.components * cluster.tasks_per_component
    t, n = cluster.tasks_per_node, cluster.nodes_per_sub_cluster
    local = (np.arange(per_sub) // t) % n
    return np.concatenate([local + s * n for s in range(cluster.sub_clusters)])


PAUSES = ("none", "capture", "drain")


def simulate_tasks(cluster: TaskCluster, controller: PlacementController | None, seed: int,
                   pause: str = "none") -> TaskRun:
    """One run; `controller` None keeps the initial placement (no migration); `pause` how a migration stops the
    dataflow of the sub-clusters it touches (PAUSES, the module's docstring)."""
    if pause not in PAUSES:
        raise ValueError(f"pause {pause!r}: expected one of {', '.join(PAUSES)}")
    rng = np.random.default_rng(seed)
    node = initial_placement(cluster)
    tasks = len(node)
    spread = rng.lognormal(0.0, cluster.task_cv, tasks)
    base = spread / spread.mean() * cluster.base_utilisation / cluster.tasks_per_node
    order = rng.permutation(cluster.nodes)  # which node is overloaded when, in turn
    backlog = np.zeros(cluster.nodes)
    arriving_at = np.full(tasks, -1.0)  # a migrating task's arrival time on its new node
    target = node.copy()
    per_report = int(round(cluster.report_s / cluster.dt_s))
    busy = np.zeros(tasks)
    sub_of_node = np.arange(cluster.nodes) // cluster.nodes_per_sub_cluster
    paused_until = np.zeros(cluster.sub_clusters)  # a sub-cluster's sources hold their arrivals until then
    held = np.zeros(cluster.nodes)  # work that arrived at the sources of a paused sub-cluster, per node
    stds, lat, weights = [], [], []
    migrations = 0
    ticks = int(round(cluster.duration_s / cluster.dt_s))
    for tick in range(ticks):
        now = (tick + 1) * cluster.dt_s
        # the nodes degraded now, each for overload_s from its turn: their tasks need factor x the capacity there
        k = int(now // cluster.overload_every_s)
        hot = [order[(j - 1) % cluster.nodes] for j in range(1, k + 1)
               if now - j * cluster.overload_every_s < cluster.overload_s]
        load = base * np.where(np.isin(node, hot), cluster.overload_factor, 1.0)
        landed = (arriving_at >= 0) & (arriving_at <= now)
        node[landed] = target[landed]
        arriving_at[landed] = -1.0
        moving = arriving_at >= 0
        util = np.bincount(node[~moving], weights=load[~moving], minlength=cluster.nodes)
        wait = np.maximum(0.0, paused_until[sub_of_node] - now)  # per node: how long its sources still hold
        stopped = wait > 0
        released = (held > 0) & ~stopped  # a pause just ended: what the sources held reaches the nodes
        backlog[released] += held[released]
        held[released] = 0.0
        held[stopped] += util[stopped] * cluster.dt_s
        draining = stopped & (pause == "drain")  # DCR's nodes finish what is in flight; CCR's stop with the sources
        backlog = np.where(stopped, np.where(draining, np.maximum(0.0, backlog - cluster.dt_s), backlog),
                           np.maximum(0.0, backlog + (util - 1.0) * cluster.dt_s))
        node_latency = cluster.service_s / (1.0 - np.minimum(util, 0.95)) + backlog + wait
        task_latency = np.where(moving, arriving_at - now + node_latency[target], node_latency[node])
        lat.append(task_latency)
        weights.append(load * cluster.dt_s)
        busy += np.where(moving | stopped[node], 0.0, load * cluster.dt_s)
        if (tick + 1) % per_report:
            continue
        stds.append(float(util.std()))
        if controller is not None:
            usage = {g: (float(busy[g]), float(busy[g]), 0.0, 0.0) for g in range(tasks)}
            snap = PlacementSnapshot(now, cluster.report_s, tuple(int(x) for x in np.where(moving, target, node)),
                                     cluster.nodes, tuple(float(x) for x in node_latency), usage,
                                     moves_in_flight=int(moving.sum()))
            decision = controller.decide(snap)
            if decision.moves:
                duration = cluster.migration_base_s + cluster.migration_per_task_s * len(decision.moves)
                if pause != "none":
                    touched = sorted({int(sub_of_node[m.source]) for m in decision.moves}
                                     | {int(sub_of_node[m.target]) for m in decision.moves})
                    for sub in touched:
                        drain = float(backlog[sub_of_node == sub].max()) if pause == "drain" else 0.0
                        paused_until[sub] = max(paused_until[sub], now + drain + cluster.checkpoint_s)
                for move in decision.moves:
                    target[move.key_group] = move.target
                    arriving_at[move.key_group] = now + duration
                migrations += len(decision.moves)
        busy[:] = 0.0
    lat_all, w_all = np.concatenate(lat), np.concatenate(weights)
    return TaskRun(load_std_mean=float(np.mean(stds)), latency_mean_s=float((lat_all * w_all).sum() / w_all.sum()),
                   latency_p99_s=weighted_quantile(lat_all, w_all, 0.99), migrations=migrations)
