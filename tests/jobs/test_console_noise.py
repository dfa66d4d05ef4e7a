"""The stderr filter drops only PySpark's daemon BrokenPipe blocks; every other line, and every other traceback,
reaches the console unchanged. Real file descriptors and a real child process writing to them."""
import subprocess
import sys
import textwrap

from jobs.console_noise import is_daemon_noise

DAEMON_BLOCK = [
    "Traceback (most recent call last):",
    '  File "/x/pyspark/python/lib/pyspark.zip/pyspark/daemon.py", line 262, in manager',
    '  File "/x/pyspark/python/lib/pyspark.zip/pyspark/daemon.py", line 95, in worker',
    "BrokenPipeError: [Errno 32] Broken pipe",
]


def test_only_a_whole_daemon_block_is_noise():
    assert is_daemon_noise(DAEMON_BLOCK)
    ours = [DAEMON_BLOCK[0], '  File "/opt/elastic/jobs/batch.py", line 109, in __call__', DAEMON_BLOCK[-1]]
    assert not is_daemon_noise(ours), "a broken pipe in the job's own code is a real error"
    assert not is_daemon_noise(DAEMON_BLOCK[:-1] + ["OSError: [Errno 28] No space left on device"])


def test_a_child_process_writing_to_the_filtered_stderr_keeps_everything_but_the_daemon_blocks(tmp_path):
    """As Spark's JVM and Python workers do: they inherit fd 2 from the driver and write to it."""
    block = "\n".join(DAEMON_BLOCK) + "\n"
    (tmp_path / "child.txt").write_text("before\n" + block + block + "ERROR a real one\n")
    script = textwrap.dedent(f"""
        import subprocess, sys
        from jobs.console_noise import DaemonNoiseFilter
        f = DaemonNoiseFilter()
        f.start()
        child = "import sys; sys.stderr.write(open({str(tmp_path / 'child.txt')!r}).read())"
        subprocess.run([sys.executable, "-c", child])
        try:
            raise ValueError("our own error")
        except ValueError:
            import traceback; traceback.print_exc()
        print("on stdout", flush=True)
        f.stop()
        print(f"dropped {{f.dropped}}", file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    err = done.stderr.splitlines()
    assert "BrokenPipeError: [Errno 32] Broken pipe" not in err and "before" in err and "ERROR a real one" in err
    assert "ValueError: our own error" in err and err[-1] == "dropped 2", done.stderr
    assert done.stdout == "on stdout\n"
