"""A silence on real Spark: Spark skips the triggers with no new data, the batch table says how long
(`idle_after_s`), and the run's cost charges that time at the vector decided after the batch before it
(jobs/recording/summary.py: charged_slot_seconds), not at the one that batch ran with. Through the silence the
driver pings the Python workers (jobs/keep_warm.py; every 3 s of no batch here, so the 10-s silence has room for
one): the pings are recorded, and they run no micro-batch and leave the batch table and the output as they were."""
import pytest

from tests.support import artifact_table, only_run, run_cli

pytestmark = pytest.mark.spark

OPS = ("parse", "enrich", "aggregate", "sink")


def test_a_silence_is_found_in_the_batch_table_and_charged_at_the_held_vector(tracking_uri, mlflow_client, tmp_path):
    trace = tmp_path / "rate.csv"  # 4 s of load, 10 s of silence, 2 s of load, silent to the end
    trace.write_text("t_seconds,events\n" + "".join(f"{t},{800 if t < 4 or 14 <= t < 16 else 0}\n" for t in range(18)))
    workload = tmp_path / "on-off.yaml"
    workload.write_text(f"name: on-off-it\nduration_s: 18\nseed: 2\ntrace: {{path: {trace}}}\n")
    # enrich alternates 2, 1, 2, ... after every batch: whichever batch precedes the silence, the vector held through
    # it differs from the one that batch ran with
    changes = "{" + ", ".join(f"{b}: {{enrich: {2 if b % 2 == 0 else 1}}}" for b in range(20)) + "}"
    proc = run_cli(["--controller", "scripted", "--param", f"changes={changes}", "--workload", str(workload),
                    "--tracking-uri", tracking_uri, "--experiment", "it-idle", "--output-dir", str(tmp_path / "job"),
                    "--keep-warm", "3", "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = only_run(mlflow_client, "it-idle")
    assert run.info.status == "FINISHED" and run.data.metrics["records_lost"] == 0
    assert run.data.metrics["records_duplicated"] == 0
    assert run.data.params["keep_warm"] == "every 3 s of no batch"
    assert run.data.metrics["keep_warm_pings"] >= 1 and run.data.metrics["keep_warm_ping_s"] > 0
    batches = artifact_table(mlflow_client, run, "batches.parquet", tmp_path)
    gap = batches["interval_in_force_s"].idxmax()  # the batch before the silence
    assert batches.loc[gap, "idle_after_s"] > 6.0, batches[["start_s", "time_s", "idle_after_s"]]
    # elsewhere Spark ran a batch at every trigger (tenths of a second where a planning delay crosses the grid)
    assert batches.drop(index=gap)["idle_after_s"].max() < 1.0
    ran = batches[[f"degree_{op}" for op in OPS]].sum(axis=1)
    held = batches[[f"next_degree_{op}" for op in OPS]].sum(axis=1)
    assert ran[gap] != held[gap]
    idle = batches["idle_after_s"]
    charged = float((ran * (batches["interval_in_force_s"] - idle) + held * idle).sum())
    assert run.data.metrics["cost_slot_seconds"] == pytest.approx(charged, rel=1e-9)
    as_ran = float((ran * batches["interval_in_force_s"]).sum())  # the charge before: the silence at the batch's vector
    assert abs(as_ran - charged) >= 6.0
