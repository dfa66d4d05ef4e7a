"""Why a run stops: errors shared by the job's rooms (batch function, actuators, the run itself)."""


class RunFailed(RuntimeError):
    """The run cannot go on (an induced failure, a broken invariant such as a gap in the events read, a cluster
    that cannot give the controller its initial executors)."""


class InputError(ValueError):
    """Bad input: reported as one line, exit code 2, before anything is started."""
