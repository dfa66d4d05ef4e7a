"""The job's measured costs, as `python -m jobs.calibrate` records them, turned into a plant model of that job.

Why a calibration and not the topology's declared costs: a declared cost says what an operator is asked to do (an
emulated lookup of 150 µs), a calibration says what it took on the machine the runs use, with Spark's per-batch and
per-task overheads, which dominate at low load. A simulated trial is only worth screening with when its costs come
from the job it stands for, so a tuning study names the calibration it used (its MLflow run id).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from controllers.cost_model import OperatorModel
from simulator.plant import PlantConfig


def _is_number(value: Any, minimum: float = 0.0) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= minimum


class CalibrationError(ValueError):
    """A calibration that cannot be used; the message names the field and where it came from."""


@dataclass(frozen=True)
class Calibration:
    service_s: Mapping[str, float]
    selectivity: Mapping[str, float]
    task_overhead_s: float
    batch_overhead_s: float
    slots: int
    run_id: str = ""
    source: str = "<params>"
    task_launch_s: float = 0.0  # absent in a calibration made at one degree (it cannot be measured there)
    # each stage an unchained operator adds (controllers.cost_model.extra_stages), and the operators that always
    # start one; absent in a calibration whose batches all ran fully chained (the stage cost cannot be seen there)
    stage_overhead_s: float = 0.0
    keyed: Mapping[str, bool] = field(default_factory=dict)
    # the simulator's noise (jobs.calibrate.fit_noise); absent in a calibration made before it was measured: the
    # plant is then deterministic, and a study says so (its params record the spreads it used)
    batch_overhead_sigma: float = 0.0
    service_sigma: Mapping[str, float] = field(default_factory=dict)
    # how much longer a batch runs right after its degrees changed (jobs.calibrate.fit_change_slowdown; the plant's
    # change_slowdown); absent in a calibration made before it was measured: 0, the plant as it was
    change_slowdown: float = 0.0
    # where and when it was measured (jobs.calibrate's `measured:`, or the calibration run's params): costs hold for
    # one master on one machine, and drift (the same machine's batch overhead was 0.42-0.75 s on different days)
    master: str = ""
    measured_at_s: float | None = None  # epoch seconds

    @classmethod
    def from_params(cls, params: Mapping[str, Any], source: str = "<params>") -> "Calibration":
        """From the oracle parameters jobs.calibrate writes (service_s, selectivity, task_overhead_s,
        batch_overhead_s, slots, calibration_run)."""
        def number(key: str, minimum: float = 0.0) -> float:
            value = params.get(key)
            if not _is_number(value, minimum):
                raise CalibrationError(f"{source}: field {key!r} must be a number >= {minimum:g}, got {value!r}")
            return float(value)

        service = params.get("service_s")
        if not isinstance(service, Mapping) or not service:
            raise CalibrationError(f"{source}: field 'service_s' must map each operator to its seconds per record, "
                                   f"got {service!r}")
        for op, value in service.items():
            if not _is_number(value):
                raise CalibrationError(f"{source}: field service_s[{op!r}] must be a number >= 0, got {value!r}")
        selectivity = params.get("selectivity") or {}
        if not isinstance(selectivity, Mapping):
            raise CalibrationError(f"{source}: field 'selectivity' must map operators to numbers, got {selectivity!r}")
        slots = params.get("slots", 0)
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise CalibrationError(f"{source}: field 'slots' must be an integer >= 1 (the task slots the "
                                   f"calibration ran with), got {slots!r}")
        launch = number("task_launch_s") if "task_launch_s" in params else 0.0
        stage = number("stage_overhead_s") if "stage_overhead_s" in params else 0.0
        keyed = params.get("keyed") or {}
        if not isinstance(keyed, Mapping) or any(not isinstance(v, bool) for v in keyed.values()):
            raise CalibrationError(f"{source}: field 'keyed' must map operators to true/false, got {keyed!r}")
        return cls({str(k): float(v) for k, v in service.items()},
                   {str(k): float(v) for k, v in selectivity.items()}, number("task_overhead_s"),
                   number("batch_overhead_s"), slots, str(params.get("calibration_run", "")), source,
                   task_launch_s=launch, stage_overhead_s=stage, keyed={str(k): v for k, v in keyed.items()})

    @classmethod
    def from_file(cls, path: Path) -> "Calibration":
        """The YAML jobs.calibrate writes ({controller: oracle, params: {...}}) or its params alone."""
        try:
            raw = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise CalibrationError(f"{path}: cannot read the calibration ({exc.strerror})") from None
        except yaml.YAMLError as exc:
            raise CalibrationError(f"{path}: not YAML ({exc})") from None
        # jobs.calibrate's `calibration:` section (the first files of 2026-11-26 had its keys at the top level)
        extra = raw.get("calibration", raw) if isinstance(raw, Mapping) else {}
        extra = extra if isinstance(extra, Mapping) else {}
        noise, measured, slowdown = extra.get("noise"), extra.get("measured"), extra.get("change_slowdown", 0.0)
        if isinstance(raw, Mapping) and isinstance(raw.get("params"), Mapping):
            raw = raw["params"]
        if not isinstance(raw, Mapping):
            raise CalibrationError(f"{path}: expected the mapping jobs.calibrate writes, got {type(raw).__name__}")
        calibration = cls.from_params(raw, source=str(path))
        if not _is_number(slowdown):
            raise CalibrationError(f"{path}: field 'change_slowdown' must be a number >= 0 (how much longer a batch "
                                   f"runs right after a degree change), got {slowdown!r}")
        calibration = replace(calibration, change_slowdown=float(slowdown))
        if isinstance(measured, Mapping):
            at = measured.get("at")
            calibration = replace(calibration, master=str(measured.get("master") or ""),
                                  measured_at_s=float(at) if isinstance(at, (int, float)) else None)
        return calibration.with_noise(noise) if noise is not None else calibration

    def check_master(self, master: str | None) -> None:
        """The runs a study screens for must use the master the costs were measured on."""
        if self.master and master and self.master.strip() != master.strip():
            raise CalibrationError(f"{self.source}: measured on master {self.master}, but the runs use {master} "
                                   f"(its costs would stand for another setup: run python -m jobs.calibrate "
                                   f"--master {master})")

    def age_hours(self, now_s: float | None = None) -> float | None:
        return None if self.measured_at_s is None else ((now_s or time.time()) - self.measured_at_s) / 3600.0

    def with_noise(self, noise: Any) -> "Calibration":
        """The noise jobs.calibrate writes (calibration: noise:): batch_overhead_sigma, service_sigma per operator."""
        where = f"{self.source}: field 'noise"
        if not isinstance(noise, Mapping):
            raise CalibrationError(f"{where}' must be a mapping (batch_overhead_sigma, service_sigma), got {noise!r}")
        overhead = noise.get("batch_overhead_sigma", 0.0)
        if not _is_number(overhead):
            raise CalibrationError(f"{where}.batch_overhead_sigma' must be a number >= 0, got {overhead!r}")
        service = noise.get("service_sigma") or {}
        if not isinstance(service, Mapping):
            raise CalibrationError(f"{where}.service_sigma' must map operators to numbers, got {service!r}")
        for op, value in service.items():
            if not _is_number(value):
                raise CalibrationError(f"{where}.service_sigma[{op!r}]' must be a number >= 0, got {value!r}")
        return replace(self, batch_overhead_sigma=float(overhead),
                       service_sigma={str(k): float(v) for k, v in service.items()})

    def check_operators(self, operators: Sequence[str]) -> None:
        """The calibration must have measured exactly the topology it stands for."""
        missing = [op for op in operators if op not in self.service_s]
        extra = sorted(set(self.service_s) - set(operators))
        if missing or extra:
            raise CalibrationError(
                f"{self.source}: calibrated on operators {', '.join(self.service_s)}, but the topology has "
                f"{', '.join(operators)} (measured on another topology: run python -m jobs.calibrate for this one)")

    def plant(self, operators: Sequence[str], trigger_s: float, max_degree: int, chaining: bool = True
              ) -> PlantConfig:
        """The plant model of the calibrated job; `chaining` as the runs it stands for (jobs.run --no-chaining)."""
        self.check_operators(operators)
        models = tuple(OperatorModel(op, self.service_s[op], self.selectivity.get(op, 1.0), self.task_overhead_s,
                                     self.task_launch_s, bool(self.keyed.get(op))) for op in operators)
        return PlantConfig(models, trigger_interval_s=trigger_s, slots=self.slots,
                           batch_overhead_s=self.batch_overhead_s, max_degree=max_degree,
                           stage_overhead_s=self.stage_overhead_s, chaining=chaining,
                           batch_overhead_sigma=self.batch_overhead_sigma,
                           service_sigma={op: self.service_sigma.get(op, 0.0) for op in operators},
                           change_slowdown=self.change_slowdown,
                           trigger_phase_s=None)  # as on Spark: each (noisy) run at a phase of its own

    def oracle_params(self) -> dict[str, Any]:
        """The oracle's configuration on this calibration, told the plant's exact costs (headroom 1)."""
        return {"service_s": dict(self.service_s), "selectivity": dict(self.selectivity),
                "task_overhead_s": self.task_overhead_s, "task_launch_s": self.task_launch_s,
                "batch_overhead_s": self.batch_overhead_s, "stage_overhead_s": self.stage_overhead_s,
                "keyed": dict(self.keyed),
                "slots": self.slots, "headroom": 1.0, "calibration_run": self.run_id}
