"""Why a run stops: errors shared by the job's rooms (batch function, actuators, the run itself)."""


class RunFailed(RuntimeError):
    """The run cannot go on (an induced failure, a broken invariant such as a gap in the events read, a cluster
    that cannot give the controller its initial executors)."""


class InputError(ValueError):
    """Bad input: reported as one line, exit code 2, before anything is started."""


def disk_full_reason(text: str, folders: dict[str, str]) -> str | None:
    """When a run failed because a disk filled up, one line naming where: the folder (of `folders`, what -> path;
    local paths only) with the least free space. Spark's and pyarrow's own messages name no path ("No space left on
    device"), and the user's question is which of the run's folders to clear."""
    if "No space left on device" not in text:
        return None
    import shutil
    from pathlib import Path

    from jobs.paths import first_existing

    free = {}
    for what, path in folders.items():
        local = (path or "").removeprefix("file://")
        if local.startswith("/"):  # a local folder (not s3://, mlflow-artifacts:/, a server)
            folder = first_existing(Path(local))
            free[what] = (shutil.disk_usage(folder).free, folder)
    if not free:
        return "disk full: no space left on device"
    what, (left, folder) = min(free.items(), key=lambda item: item[1][0])
    return f"disk full: no space left on device for the {what} in {folder} ({left // 1024} KiB free)"
