"""Where a study's calibration comes from: the YAML `python -m jobs.calibrate` wrote, or the calibration's MLflow
run (tag kind=calibration), so a study can name exactly which measurement of the job its costs are."""
from __future__ import annotations

import re
import tempfile
from dataclasses import replace
from pathlib import Path

from simulator.calibration import Calibration, CalibrationError

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
CALIBRATION_FOLDER = "calibration"  # where jobs.calibrate logs the YAML it wrote (under the --out file's own name)


def load_calibration(ref: str, tracking_uri: str | None) -> Calibration:
    """A calibration file, or the MLflow run id of a calibration (the YAML it logged under calibration/)."""
    if Path(ref).exists():
        return Calibration.from_file(Path(ref))
    if not RUN_ID.match(ref):
        raise CalibrationError(f"--calibration {ref!r}: no such file, and not an MLflow run id")
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from jobs.recording.recorder import default_tracking_uri

    client = MlflowClient(tracking_uri or default_tracking_uri())
    try:
        run = client.get_run(ref)
    except MlflowException:
        raise CalibrationError(f"--calibration {ref}: no such run in {client.tracking_uri}") from None
    if run.data.tags.get("kind") != "calibration":
        raise CalibrationError(f"--calibration {ref}: run is not a calibration (tag kind = "
                               f"{run.data.tags.get('kind')!r}; make one with python -m jobs.calibrate)")
    logged = [a.path for a in client.list_artifacts(ref, CALIBRATION_FOLDER) if a.path.endswith((".yaml", ".yml"))]
    if len(logged) != 1:
        raise CalibrationError(f"--calibration {ref}: expected one YAML under {CALIBRATION_FOLDER}/ of the run, "
                               f"found {logged or 'none'}")
    with tempfile.TemporaryDirectory() as tmp:
        calibration = Calibration.from_file(Path(client.download_artifacts(ref, logged[0], tmp)))
    # a calibration made before its YAML said where and when: the run's own record does
    return replace(calibration, run_id=ref, source=f"calibration run {ref}",
                   master=calibration.master or run.data.params.get("spark.master.effective",
                                                                    run.data.params.get("spark.master", "")),
                   measured_at_s=calibration.measured_at_s or run.info.start_time / 1000)
