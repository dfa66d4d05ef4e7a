"""Models of the streaming job that run the same controller objects on the same workloads without Spark.

`simulator.plant` is the micro-batch model (the costs of `controllers.cost_model`, batch by batch); it drives a
`controllers.ControlLoop` exactly as the Spark job does. Imports controllers and workloads, never Spark or MLflow.
"""
