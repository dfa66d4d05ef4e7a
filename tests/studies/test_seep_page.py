"""docs/seep.md is written from the store and the models: it says when and on what machine its Spark rows ran, or
that they are not in the store and how to run them."""
from mlflow.tracking import MlflowClient

from studies.seep_timings import page


def test_without_a_spark_suite_the_page_says_how_to_run_it_and_quotes_the_plant_instead(tmp_path):
    text = page(f"sqlite:///{tmp_path / 'm.db'}", "x", tmp_path / "seep" / "t5.png")
    assert "**Regenerate**: `make reproduce` runs T5's 2 Spark runs (180 s each, about" in text
    assert "**Measured**: the Spark rows are not in this MLflow store: `make reproduce`" in text
    assert "| Spark (local" not in text and "in the micro-batch plant against 15 s in the queue model" in text
    assert (tmp_path / "seep" / "t5.png").exists()


def test_the_spark_rows_say_when_and_on_what_machine_they_ran(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("x", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp, start_time=1_764_000_000_000, tags={
        "kind": "seep-timings", "machine.cpus": "2", "machine.memory_gib": "23.4", "machine.os": "Debian 12",
        "machine.python": "3.11.2", "machine.spark": "4.2.0"}).info.run_id
    client.set_terminated(parent, "FINISHED", end_time=1_764_000_480_000)
    text = page(uri, "x", tmp_path / "seep" / "t5.png")
    assert "**Measured**: the Spark rows 2025-11-24 (UTC date of the suite's runs, 8 min), on:" in text
    assert f"- 2 cores, 23.4 GiB RAM, Debian 12, Python 3.11.2, Spark 4.2.0: T5 on Spark (2025-11-24, suite " \
           f"`{parent[:8]}`)" in text
