"""Reading a rate.csv: the vectorised loader gives the very Trace the line-by-line parser gives, and every bad file
is rejected with the file's name and the 1-based line (header = line 1, blank lines counted) in the message."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workloads.traces import (
    DEFAULT_TRACES_DIR, Trace, TraceError, _parse_fast, load_trace, read_rate_csv, read_rate_csv_lines)

ROOT = Path(__file__).resolve().parents[2]
SHARED = sorted(DEFAULT_TRACES_DIR.glob("*/rate.csv")) if DEFAULT_TRACES_DIR.is_dir() else []


def write(path, text: str | bytes):
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def assert_same(a: Trace, b: Trace):
    assert a.path == b.path and a.sha256 == b.sha256
    assert a.bucket_s == b.bucket_s and a.t0_s == b.t0_s  # bit for bit: no tolerance
    assert a.counts.dtype == b.counts.dtype == np.int64 and np.array_equal(a.counts, b.counts)


def outcome(reader, path):
    """The Trace, or the exception's type and message: two readers must agree on either."""
    try:
        return reader(path)
    except Exception as exc:  # noqa: BLE001 (the line-by-line parser may raise OverflowError for huge counts)
        return type(exc), str(exc)


# ---- the same Trace both ways -----------------------------------------------------------------------------------
@pytest.mark.skipif(not SHARED, reason=f"the shared traces are not in {DEFAULT_TRACES_DIR} (../shared/traces "
                                       f"beside the checkout); the generated files below still run")
@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.parent.name)
def test_shared_traces_load_identically_both_ways(path):
    fast = _parse_fast(str(path), path.read_bytes())
    assert fast is not None, "a shared trace must take the fast path, not the fallback"
    assert_same(fast, read_rate_csv_lines(path))
    assert_same(read_rate_csv(path), read_rate_csv_lines(path))


def decimal_times(n: int, bucket: float) -> list[str]:
    return [repr(i * bucket) for i in range(n)]  # 0.30000000000000004 and friends: steps differ in the last bits


VALID = {
    "integer seconds": "t_seconds,events\n" + "".join(f"{i},{(i * 7919) % 101}\n" for i in range(1000)),
    "minute buckets from 60": "t_seconds,events\n" + "".join(f"{60 * (i + 1)},{i}\n" for i in range(500)),
    "decimal buckets": "t_seconds,events\n" + "".join(f"{t},3\n" for t in decimal_times(2000, 0.1)),
    "long decimals": "t_seconds,events\n" + "".join(f"{1e5 + i / 3!r},1\n" for i in range(2000)),
    "negative start, exponents": "t_seconds,events\n-1e1,1\n-5.,2\n0.0e0,3\n5e0,4\n1.0E+1,5\n",
    "no final newline": "t_seconds,events\n0,1\n1,2\n2,3",
    "CRLF line ends": "t_seconds,events\r\n0,1\r\n1,2\r\n2,3\r\n",
    "lone CR line ends": "t_seconds,events\r0,1\r1,2\r2,3\r",
    "blank lines": "t_seconds,events\n\n0,1\n\n\n1,2\r\n\r\n2,3\n\n",
    "leading zeros and -0": "t_seconds,events\n000,0007\n001,-0\n002,010\n",
    "plus signs (line-by-line only)": "t_seconds,events\n+0,+1\n+1,+2\n+2,3\n",
    "spaces (line-by-line only)": " t_seconds , events \n0, 1\n 1 ,2\n2,3 \n",
    "underscores (line-by-line only)": "t_seconds,events\n0,1_000\n1,2\n2,3\n",
}
LINE_BY_LINE_ONLY = {"plus signs (line-by-line only)", "spaces (line-by-line only)", "underscores (line-by-line only)"}


@pytest.mark.parametrize("name", VALID)
def test_small_files_load_identically_both_ways(tmp_path, name):
    path = write(tmp_path / "rate.csv", VALID[name])
    fast = _parse_fast(str(path), path.read_bytes())
    assert (fast is None) == (name in LINE_BY_LINE_ONLY), "which files the fast path takes"
    assert_same(read_rate_csv(path), read_rate_csv_lines(path))


def test_load_trace_uses_the_fast_loader_and_the_cache(tmp_path):
    path = write(tmp_path / "rate.csv", VALID["integer seconds"])
    first = load_trace(str(path))
    assert load_trace(str(path)) is first
    assert_same(first, read_rate_csv_lines(path.resolve()))
    write(path, VALID["integer seconds"] + "1000,5\n")  # changed file (other size): read again
    assert len(load_trace(str(path)).counts) == 1001


def test_importing_traces_does_not_import_pyarrow():
    code = "import sys, workloads.traces; assert 'pyarrow' not in sys.modules and 'pandas' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


TOKENS = ["0", "1", "2", "10", "60", "-1", "+1", "1.5", ".5", "5.", "1e1", "1E+1", "-", ".", "e", "x", " ", "",
          "nan", "inf", "1_0", "99999999999999999999", "0.1", "0.30000000000000004", ","]
LINE_ENDS = ["\n", "\n", "\n", "\r\n", "\r", "\n\n"]


@st.composite
def csv_files(draw):
    header = draw(st.sampled_from(["t_seconds,events", "t_seconds,events", " t_seconds,events", "time,count", ""]))
    rows = draw(st.lists(st.one_of(
        st.builds(lambda t, c: f"{t},{c}", st.integers(-2, 6), st.integers(-1, 50)),
        st.builds(lambda a, b: f"{a},{b}", st.sampled_from(TOKENS), st.sampled_from(TOKENS)),
        st.lists(st.sampled_from(TOKENS), max_size=4).map(",".join)), max_size=8))
    ends = draw(st.lists(st.sampled_from(LINE_ENDS), min_size=len(rows) + 1, max_size=len(rows) + 1))
    return header + "".join(end + row for end, row in zip(ends, rows)) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_files())
def test_any_file_gets_the_same_answer_both_ways(tmp_path, text):
    path = write(tmp_path / "rate.csv", text)
    fast, slow = outcome(read_rate_csv, path), outcome(read_rate_csv_lines, path)
    if isinstance(slow, Trace):
        assert isinstance(fast, Trace), fast
        assert_same(fast, slow)
    else:
        assert fast == slow


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t0=st.floats(-1e6, 1e6, allow_nan=False), bucket=st.floats(1e-3, 1e4),
       counts=st.lists(st.integers(0, 2**62), min_size=2, max_size=50))
def test_float_times_parse_bit_for_bit_as_python_does(tmp_path, t0, bucket, counts):
    rows = [f"{t0 + i * bucket!r},{c}" for i, c in enumerate(counts)]
    path = write(tmp_path / "rate.csv", "t_seconds,events\n" + "\n".join(rows) + "\n")
    slow = outcome(read_rate_csv_lines, path)
    fast = outcome(read_rate_csv, path)
    if isinstance(slow, Trace):
        assert_same(fast, slow)
        assert _parse_fast(str(path), path.read_bytes()) is not None
    else:
        assert fast == slow


# ---- bad files: file and line named -----------------------------------------------------------------------------
GOOD_ROWS = [f"{i},{i % 5}" for i in range(5000)]  # big enough that a line number is not a lucky guess


def rows_with(line: int, row: str | None = None, insert: bool = False) -> list[str]:
    """GOOD_ROWS with the data row at file line `line` (header = line 1) replaced by, or preceded by, `row`."""
    rows = list(GOOD_ROWS)
    if insert:
        rows.insert(line - 2, row)
    else:
        rows[line - 2] = row
    return rows


BAD = {
    "negative count": (rows_with(4321, "4319,-4"), ":4321: negative count -4"),
    "non-numeric count": (rows_with(777, "775,x"), ":777: events 'x' is not a whole number"),
    "decimal count": (rows_with(778, "776,2.5"), ":778: events '2.5' is not a whole number"),
    "non-numeric time": (rows_with(3000, "abc,1"), ":3000: t_seconds 'abc' is not a number"),
    "empty time": (rows_with(3001, ",1"), ":3001: t_seconds '' is not a number"),
    "not finite time": (rows_with(3002, "inf,1"), ":3002: t_seconds 'inf' is not finite"),
    "NaN time": (rows_with(3003, "nan,1"), ":3003: t_seconds 'nan' is not finite"),
    "three fields": (rows_with(2500, "2498,1,7"), ":2500: expected 2 fields (t_seconds,events), got 3: '2498,1,7'"),
    "one field": (rows_with(2501, "2499"), ":2501: expected 2 fields (t_seconds,events), got 1: '2499'"),
    "unsorted time": (rows_with(4000, "3000,1"), ":4000: non-monotonic time 3000 after 3997"),
    "duplicated time": (rows_with(4001, "3998,1", insert=True), ":4001: duplicate time 3998 after 3998"),
    "inconsistent bucket": (GOOD_ROWS[:2000] + [f"{i + 1},1" for i in range(2000, 3000)],
                            ":2002: bucket of 2 s where the file's bucket is 1 s (inconsistent bucket sizes; gaps "
                            "must be rows with 0 events)"),
    "bad header": (GOOD_ROWS, ":1: expected header t_seconds,events, got 'time,count'"),
}


def bad_text(name: str) -> str:
    rows, _ = BAD[name]
    header = "time,count" if name == "bad header" else "t_seconds,events"
    return header + "\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("reader", [read_rate_csv, read_rate_csv_lines, lambda p: load_trace(str(p))],
                         ids=["read_rate_csv", "line by line", "load_trace"])
@pytest.mark.parametrize("name", BAD)
def test_bad_files_name_the_file_and_the_line(tmp_path, name, reader):
    path = write(tmp_path / "rate.csv", bad_text(name))
    with pytest.raises(TraceError) as err:
        reader(path)
    shown = str(path.resolve()) if reader not in (read_rate_csv, read_rate_csv_lines) else str(path)
    assert str(err.value) == shown + BAD[name][1]


def test_blank_lines_are_counted_in_line_numbers(tmp_path):
    # 3 blank lines before the bad row (one of them CRLF), so row 10 of the data is on line 14
    text = "t_seconds,events\n0,1\n\n1,1\r\n\r\n2,1\n\n" + "".join(f"{i},1\n" for i in range(3, 9)) + "9,-2\n10,1\n"
    path = write(tmp_path / "rate.csv", text)
    for reader in (read_rate_csv, read_rate_csv_lines):
        with pytest.raises(TraceError, match=f"^{re.escape(str(path))}:14: negative count -2$"):
            reader(path)


def test_blank_lines_before_an_unsorted_time_on_a_large_file(tmp_path):
    rows = list(GOOD_ROWS)
    rows[100:100] = ["", "", ""]  # data row 101 is now on line 105
    rows[4000] = "10,1"  # list index 4000, line 4002: the data row of time 3997, after the row of time 3996
    path = write(tmp_path / "rate.csv", "t_seconds,events\n" + "\n".join(rows) + "\n")
    with pytest.raises(TraceError) as err:
        read_rate_csv(path)
    assert str(err.value) == f"{path}:4002: non-monotonic time 10 after 3996"


def test_empty_file_is_named(tmp_path):
    path = write(tmp_path / "rate.csv", "")
    with pytest.raises(TraceError) as err:
        read_rate_csv(path)
    assert str(err.value) == f"{path}: empty file"


@pytest.mark.parametrize("text,rows", [("t_seconds,events\n", 0), ("t_seconds,events", 0),
                                       ("t_seconds,events\n\n\n", 0), ("t_seconds,events\n0,5\n", 1)])
def test_header_only_or_one_row_is_named(tmp_path, text, rows):
    path = write(tmp_path / "rate.csv", text)
    with pytest.raises(TraceError) as err:
        read_rate_csv(path)
    assert str(err.value) == f"{path}: needs at least 2 data rows to know its bucket size, has {rows}"


def test_blank_first_line_is_a_bad_header_on_line_1(tmp_path):
    path = write(tmp_path / "rate.csv", "\nt_seconds,events\n0,1\n1,1\n")
    with pytest.raises(TraceError) as err:
        read_rate_csv(path)
    assert str(err.value) == f"{path}:1: expected header t_seconds,events, got ''"
