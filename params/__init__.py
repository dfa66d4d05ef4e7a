"""Declarations every layer shares: how a setting is declared and checked (`params.declare`), the settings a run
has (`params.run`) and the units schedules count in (`params.units`).

It sits below controllers, workloads, jobs, analysis and dags, and imports none of them, so each of those can
declare its settings the same way without importing the others.
"""
