"""Units shared by schedules, the simulator and the Spark job.

Schedules count time in integer microseconds since the run's anchor (exact arithmetic for event times, no
floating-point drift over hours of events); everything else is in seconds.
"""
US = 1_000_000  # microseconds per second
