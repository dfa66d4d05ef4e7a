"""Nexmark q0-q5, q7 and q8 written with the operator API (queries.api), for Spark Structured Streaming.

Every query starts with the `events` operator: it turns the replayed event ids and arrival times into Nexmark's
person, auction and bid events (workloads.nexmark, Beam's generator) in one wide table (Beam's Event: the fields of
the other kinds are null). Event time is an event's scheduled arrival in the run (`arrival_ts - anchor`), so the
pandas references (queries.nexmark_reference) compute the same answer from the workload alone. Definitions, window
sizes and tie rules are the references'; each query's docstring says where its state lives and when it emits.

What a controller can change live: every operator's degree, between two micro-batches (the stateful ones' state
is partitioned by key afresh every batch). What it cannot: the chain itself (which operators, their keys), the
window sizes, the trigger.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from queries import nexmark_reference as ref
from queries.api import BatchContext, Operator, Query, QueryError, Stateful, simple_arrow_schema, simple_ddl
from workloads.nexmark import AUCTION, BID, PERSON, generate_ids

WIDE_COLUMNS = (
    ("event_id", pa.int64(), "BIGINT"), ("kind", pa.int32(), "INT"), ("date_time_us", pa.int64(), "BIGINT"),
    ("id", pa.int64(), "BIGINT"), ("name", pa.string(), "STRING"), ("email_address", pa.string(), "STRING"),
    ("credit_card", pa.string(), "STRING"), ("city", pa.string(), "STRING"), ("state", pa.string(), "STRING"),
    ("item_name", pa.string(), "STRING"), ("description", pa.string(), "STRING"),
    ("initial_bid", pa.int64(), "BIGINT"), ("reserve", pa.int64(), "BIGINT"), ("expires_us", pa.int64(), "BIGINT"),
    ("seller", pa.int64(), "BIGINT"), ("category", pa.int64(), "BIGINT"), ("auction", pa.int64(), "BIGINT"),
    ("bidder", pa.int64(), "BIGINT"), ("price", pa.int64(), "BIGINT"), ("extra", pa.string(), "STRING"),
)
WIDE_SCHEMA = pa.schema([(n, t) for n, t, _ in WIDE_COLUMNS])
WIDE_DDL = ", ".join(f"{n} {d}" for n, _, d in WIDE_COLUMNS)
KIND_NAMES = {PERSON: "person", AUCTION: "auction", BID: "bid"}


# ---- the schedule's times for any event id -------------------------------------------------------------------
def schedule_time_of(schedule) -> Callable[[np.ndarray], np.ndarray]:
    """Scheduled time (us from the start) of any event id; past the schedule's last event, at its mean spacing
    (an auction's expiry looks 1,667 events ahead)."""
    total = schedule.total_events
    last = int(schedule.arrival_us(total - 1, total)[0]) if total else 0
    spacing = schedule.spec.duration_s * 1e6 / max(total, 1)

    def time_of(query: np.ndarray) -> np.ndarray:
        query = np.asarray(query, np.int64)
        out = np.empty(len(query), np.int64)
        inside = query < total
        if inside.any():
            lo, hi = int(query[inside].min()), int(query[inside].max()) + 1
            out[inside] = schedule.arrival_us(lo, hi)[query[inside] - lo]
        past = ~inside
        out[past] = last + ((query[past] - (total - 1)) * spacing).astype(np.int64)
        return out

    return time_of


def wide_events(tables: dict[str, pd.DataFrame]) -> pa.Table:
    """The three kinds' tables as one table of WIDE_SCHEMA, ordered by event id."""
    parts = []
    for kind, name in KIND_NAMES.items():
        df = tables[name]
        if df.empty:
            continue
        cols = {"kind": pa.array(np.full(len(df), kind, np.int32))}
        for column, arrow_type, _ in WIDE_COLUMNS:
            if column == "kind":
                continue
            cols[column] = (pa.array(df[column].to_numpy(), arrow_type) if column in df.columns
                            else pa.nulls(len(df), arrow_type))
        parts.append(pa.table(cols).select(WIDE_SCHEMA.names))
    if not parts:
        return WIDE_SCHEMA.empty_table()
    return pa.concat_tables(parts).sort_by("event_id")


def reference_events(schedule, first: int = 0, stop: int | None = None) -> dict[str, pd.DataFrame]:
    """The events [first, stop) of a schedule as the references read them (three tables)."""
    stop = schedule.total_events if stop is None else stop
    ids = np.arange(first, stop, dtype=np.int64)
    return generate_ids(schedule.spec.seed, ids, schedule.arrival_us(first, stop), schedule_time_of(schedule))


def _events(table: pa.Table, ctx: BatchContext) -> pa.Table:
    schedule = ctx.schedule.get()
    ids = table.column("event_id").to_numpy()
    times = pc.cast(table.column("arrival_ts"), pa.int64()).to_numpy() - ctx.anchor_us
    return wide_events(generate_ids(ctx.seed, ids, times, schedule_time_of(schedule)))


EVENTS = Operator("events", _events, WIDE_DDL)


def _kind(table: pa.Table, kind: int) -> pa.Table:
    return table.filter(pc.equal(table.column("kind"), kind))


def _empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def _arrow(df: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)


# ---- q0, q1, q2: stateless -----------------------------------------------------------------------------------
def q0() -> Query:
    """Pass-through: every event, unchanged (what the pipeline itself costs)."""
    return Query("q0", (EVENTS, Operator("pass", lambda t, ctx: t, WIDE_DDL)), description=q0.__doc__,
                 counts_events=lambda t: (t.num_rows, int(pc.sum(t.column("event_id")).as_py() or 0)))


Q1_SCHEMA = pa.schema([("auction", pa.int64()), ("bidder", pa.int64()), ("price", pa.int64()),
                       ("date_time_us", pa.int64())])


def _convert(table: pa.Table, ctx: BatchContext) -> pa.Table:
    bids = _kind(table, BID)
    euros = pc.divide(pc.multiply(bids.column("price"), 89), 100)  # integer division on int64, as Beam does
    return pa.table({"auction": bids.column("auction"), "bidder": bids.column("bidder"), "price": euros,
                     "date_time_us": bids.column("date_time_us")}, schema=Q1_SCHEMA)


def q1() -> Query:
    """Currency conversion: each bid's price in euros (price * 89 / 100, integer)."""
    return Query("q1", (EVENTS, Operator("convert", _convert,
                                         "auction BIGINT, bidder BIGINT, price BIGINT, date_time_us BIGINT")),
                 description=q1.__doc__)


def _select_q2(table: pa.Table, ctx: BatchContext) -> pa.Table:
    bids = _kind(table, BID)
    bids = bids.filter(pa.array(bids.column("auction").to_numpy() % ref.AUCTION_SKIP == 0))
    return bids.select(["auction", "price"])


def q2() -> Query:
    """Selection: (auction, price) of the bids on every 123rd auction."""
    return Query("q2", (EVENTS, Operator("select", _select_q2, "auction BIGINT, price BIGINT")),
                 description=q2.__doc__)


# ---- q3: incremental join, state kept for ever ---------------------------------------------------------------
Q3_SIDE = pa.schema([("side", pa.int32()), ("key", pa.int64()), ("name", pa.string()), ("city", pa.string()),
                     ("state", pa.string()), ("auction", pa.int64())])
Q3_OUT = "name STRING, city STRING, state STRING, auction BIGINT"


def _select_q3(table: pa.Table, ctx: BatchContext) -> pa.Table:
    people = _kind(table, PERSON)
    people = people.filter(pc.is_in(people.column("state"), value_set=pa.array(ref.Q3_STATES)))
    auctions = _kind(table, AUCTION)
    auctions = auctions.filter(pc.equal(auctions.column("category"), ref.Q3_CATEGORY))
    p = pa.table({"side": pa.array(np.zeros(people.num_rows, np.int32)), "key": people.column("id"),
                  "name": people.column("name"), "city": people.column("city"), "state": people.column("state"),
                  "auction": pa.nulls(people.num_rows, pa.int64())}, schema=Q3_SIDE)
    a = pa.table({"side": pa.array(np.ones(auctions.num_rows, np.int32)), "key": auctions.column("seller"),
                  "name": pa.nulls(auctions.num_rows, pa.string()), "city": pa.nulls(auctions.num_rows, pa.string()),
                  "state": pa.nulls(auctions.num_rows, pa.string()), "auction": auctions.column("id")},
                 schema=Q3_SIDE)
    return pa.concat_tables([p, a])


def _join_q3(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    """New auctions meet every seller seen (before or now); new sellers meet the auctions seen before: each pair
    once, whatever the batch boundaries."""
    new, old = rows.to_pandas(), state.to_pandas()
    people_new, auctions_new = new[new.side == 0], new[new.side == 1]
    people_all = pd.concat([old[old.side == 0], people_new])
    a = auctions_new[["key", "auction"]].merge(people_all[["key", "name", "city", "state"]], on="key")
    b = old[old.side == 1][["key", "auction"]].merge(people_new[["key", "name", "city", "state"]], on="key")
    out = pd.concat([a, b])[["name", "city", "state", "auction"]]
    return pa.Table.from_pandas(out, preserve_index=False), pa.concat_tables([state, rows.cast(Q3_SIDE)])


def q3() -> Query:
    """Local item suggestion: people in OR, ID or CA who sell an auction in category 10 (name, city, state,
    auction). An incremental join keyed by person: both sides' rows are state, kept for ever (as Beam keeps them)."""
    return Query("q3", (EVENTS, Operator("select", _select_q3, "side INT, key BIGINT, name STRING, city STRING, "
                                                               "state STRING, auction BIGINT"),
                        Operator("join", None, Q3_OUT, key="key", state=Stateful(Q3_SIDE, _join_q3))),
                 description=q3.__doc__)


# ---- q4: winning bids (state per open auction), average per category -----------------------------------------
Q4_IN = pa.schema([("side", pa.int32()), ("key", pa.int64()), ("date_time_us", pa.int64()),
                   ("expires_us", pa.int64()), ("reserve", pa.int64()), ("category", pa.int64()),
                   ("seller", pa.int64()), ("price", pa.int64()), ("bidder", pa.int64()), ("event_id", pa.int64())])
Q4_STATE = pa.schema([("key", pa.int64()), ("date_time_us", pa.int64()), ("expires_us", pa.int64()),
                      ("reserve", pa.int64()), ("category", pa.int64()), ("seller", pa.int64()),
                      ("best_price", pa.int64()), ("best_bidder", pa.int64()), ("best_time_us", pa.int64()),
                      ("best_event_id", pa.int64())])
Q4_OUT = pa.schema([("auction", pa.int64()), ("category", pa.int64()), ("seller", pa.int64()),
                    ("price", pa.int64()), ("bidder", pa.int64()), ("date_time_us", pa.int64())])


def _select_q4(table: pa.Table, ctx: BatchContext) -> pa.Table:
    auctions, bids = _kind(table, AUCTION), _kind(table, BID)
    na, nb = auctions.num_rows, bids.num_rows
    a = pa.table({"side": pa.array(np.full(na, AUCTION, np.int32)), "key": auctions.column("id"),
                  "date_time_us": auctions.column("date_time_us"), "expires_us": auctions.column("expires_us"),
                  "reserve": auctions.column("reserve"), "category": auctions.column("category"),
                  "seller": auctions.column("seller"), "price": pa.nulls(na, pa.int64()),
                  "bidder": pa.nulls(na, pa.int64()), "event_id": auctions.column("event_id")}, schema=Q4_IN)
    b = pa.table({"side": pa.array(np.full(nb, BID, np.int32)), "key": bids.column("auction"),
                  "date_time_us": bids.column("date_time_us"), "expires_us": pa.nulls(nb, pa.int64()),
                  "reserve": pa.nulls(nb, pa.int64()), "category": pa.nulls(nb, pa.int64()),
                  "seller": pa.nulls(nb, pa.int64()), "price": bids.column("price"), "bidder": bids.column("bidder"),
                  "event_id": bids.column("event_id")}, schema=Q4_IN)
    return pa.concat_tables([a, b])


def _best_bids(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    """Each open auction keeps its best valid bid so far: the highest at or above the reserve made while it was
    open, the earliest (then the first event) of equal prices. A bid on an auction not yet created can never be
    valid (it came first), so it is dropped."""
    new, held = rows.to_pandas(), state.to_pandas()
    info = ["key", "date_time_us", "expires_us", "reserve", "category", "seller"]
    best_columns = ["key", "best_price", "best_bidder", "best_time_us", "best_event_id"]
    auctions = pd.concat([held[info], new[new.side == AUCTION][info]], ignore_index=True)
    bids = new[new.side == BID][["key", "date_time_us", "price", "bidder", "event_id"]]
    m = bids.merge(auctions[["key", "date_time_us", "expires_us", "reserve"]], on="key", suffixes=("", "_a"))
    valid = m[(m.date_time_us >= m.date_time_us_a) & (m.date_time_us < m.expires_us) & (m.price >= m.reserve)]
    valid = valid.rename(columns={"price": "best_price", "bidder": "best_bidder", "date_time_us": "best_time_us",
                                  "event_id": "best_event_id"})[best_columns]
    parts = [df.astype("int64") for df in (valid, held.dropna(subset=["best_price"])[best_columns]) if len(df)]
    candidates = pd.concat(parts) if parts else pd.DataFrame(columns=best_columns, dtype="int64")
    best = (candidates.sort_values(["key", "best_price", "best_time_us", "best_event_id"],
                                   ascending=[True, False, True, True], kind="mergesort")
            .drop_duplicates("key"))
    auctions = auctions.merge(best, on="key", how="left")
    return _empty(Q4_OUT), pa.Table.from_pandas(auctions[Q4_STATE.names], schema=Q4_STATE, preserve_index=False)


def _close_auctions(state: pa.Table, watermark_us: int, final: bool) -> tuple[pa.Table, pa.Table]:
    """Auctions expired by the watermark close: those with a valid bid emit it (Beam's WinningBids); all leave the
    state. At the end, auctions still open stay unemitted, as the reference's `until_us` (the last event) says."""
    closed = pc.less_equal(state.column("expires_us"), watermark_us)
    done = state.filter(closed)
    won = done.filter(pc.is_valid(done.column("best_price")))
    out = pa.table({"auction": won.column("key"), "category": won.column("category"), "seller": won.column("seller"),
                    "price": won.column("best_price"), "bidder": won.column("best_bidder"),
                    "date_time_us": won.column("best_time_us")}, schema=Q4_OUT)
    return out, state.filter(pc.invert(closed))


def q4_average(winning: pa.Table) -> pd.DataFrame:
    """q4's last step, on the committed winning bids: average selling price per category."""
    df = winning.to_pandas()
    out = df.groupby("category", as_index=False)["price"].mean().rename(columns={"price": "average_price"})
    return out.sort_values(list(out.columns), ignore_index=True)


def q4() -> Query:
    """Average selling price per category. The stream computes each auction's winning bid (state: one row per open
    auction, keyed by auction) and emits it when the auction closes; the average over the closed auctions is read
    from the committed winning bids (`answer`)."""
    return Query("q4", (EVENTS, Operator("select", _select_q4, simple_ddl(Q4_IN)),
                        Operator("winning_bids", None, simple_ddl(Q4_OUT), key="key",
                                 state=Stateful(Q4_STATE, _best_bids, _close_auctions))),
                 answer=q4_average, description=q4.__doc__)


# ---- q5: hot items over sliding windows ----------------------------------------------------------------------
Q5_STATE = pa.schema([("key", pa.int64()), ("window_start_us", pa.int64()), ("bids", pa.int64())])
Q5_OUT = pa.schema([("window_start_us", pa.int64()), ("auction", pa.int64()), ("bids", pa.int64())])


def _windows_q5(table: pa.Table, ctx: BatchContext) -> pa.Table:
    bids = _kind(table, BID)
    t = bids.column("date_time_us").to_numpy()
    last = (t // ref.SLIDE_US) * ref.SLIDE_US
    starts = [last - k * ref.SLIDE_US for k in range(ref.WINDOW_US // ref.SLIDE_US)]
    key = bids.column("auction").to_numpy()
    return pa.table({"key": np.tile(key, len(starts)), "window_start_us": np.concatenate(starts)})


def _count_q5(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    counts = rows.group_by(["key", "window_start_us"]).aggregate([("key", "count")]).rename_columns(
        ["key", "window_start_us", "bids"])
    merged = pa.concat_tables([state, counts.cast(Q5_STATE)]).group_by(["key", "window_start_us"]).aggregate(
        [("bids", "sum")]).rename_columns(["key", "window_start_us", "bids"])
    return _empty(Q5_OUT), merged


def top_per_window(state: pa.Table, watermark_us: int, final: bool, value: str, out_schema: pa.Schema,
                   window_us: int) -> tuple[pa.Table, pa.Table]:
    """Windows the watermark closed (all, at the end): their rows with the window's highest `value`, every tie."""
    closed = pc.less_equal(pc.add(state.column("window_start_us"), window_us), watermark_us)
    if final:
        closed = pa.array(np.ones(state.num_rows, bool))
    done = state.filter(closed).to_pandas()
    top = done[done[value] == done.groupby("window_start_us")[value].transform("max")]
    return (_arrow(top.rename(columns={"key": "auction"}), out_schema), state.filter(pc.invert(closed)))


def q5() -> Query:
    """Hot items: per sliding window (10 s every 5 s), the auction(s) with the most bids (every tie). State: bid
    counts per (auction, window), keyed by auction; a window is emitted when the watermark passes its end."""
    return Query("q5", (EVENTS, Operator("windows", _windows_q5, "key BIGINT, window_start_us BIGINT"),
                        Operator("count", None, simple_ddl(Q5_OUT), key="key", state=Stateful(
                            Q5_STATE, _count_q5,
                            lambda s, w, f: top_per_window(s, w, f, "bids", Q5_OUT, ref.WINDOW_US)))),
                 description=q5.__doc__)


# ---- q7: highest bid per tumbling window ---------------------------------------------------------------------
Q7_STATE = pa.schema([("key", pa.int64()), ("window_start_us", pa.int64()), ("bidder", pa.int64()),
                      ("price", pa.int64()), ("date_time_us", pa.int64())])
Q7_OUT = pa.schema([("window_start_us", pa.int64()), ("auction", pa.int64()), ("bidder", pa.int64()),
                    ("price", pa.int64()), ("date_time_us", pa.int64())])


def _windows_q7(table: pa.Table, ctx: BatchContext) -> pa.Table:
    bids = _kind(table, BID)
    t = bids.column("date_time_us")
    return pa.table({"key": bids.column("auction"),
                     "window_start_us": pc.multiply(pc.divide(t, ref.WINDOW_US), ref.WINDOW_US),
                     "bidder": bids.column("bidder"), "price": bids.column("price"), "date_time_us": t},
                    schema=Q7_STATE)


def _max_q7(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    """Per (auction, window) only the highest-priced bids can be a window's highest: keep them, every tie."""
    both = pd.concat([state.to_pandas(), rows.to_pandas()], ignore_index=True)
    top = both[both.price == both.groupby(["key", "window_start_us"]).price.transform("max")]
    return _empty(Q7_OUT), _arrow(top, Q7_STATE)


def q7() -> Query:
    """Highest bid: per tumbling window of 10 s, the bid(s) with the highest price (every tie). State: the top bids
    per (auction, window), keyed by auction, so the work spreads over auctions; the window's maximum over auctions
    is taken when the watermark passes its end."""
    return Query("q7", (EVENTS, Operator("windows", _windows_q7, simple_ddl(Q7_STATE)),
                        Operator("max", None, simple_ddl(Q7_OUT), key="key", state=Stateful(
                            Q7_STATE, _max_q7,
                            lambda s, w, f: top_per_window(s, w, f, "price", Q7_OUT, ref.WINDOW_US)))),
                 description=q7.__doc__)


# ---- q8: new users, a windowed join ---------------------------------------------------------------------------
Q8_STATE = pa.schema([("side", pa.int32()), ("key", pa.int64()), ("name", pa.string()),
                      ("window_start_us", pa.int64())])
Q8_OUT = pa.schema([("id", pa.int64()), ("name", pa.string()), ("window_start_us", pa.int64())])


def _select_q8(table: pa.Table, ctx: BatchContext) -> pa.Table:
    people, auctions = _kind(table, PERSON), _kind(table, AUCTION)

    def window(t):
        return pc.multiply(pc.divide(t.column("date_time_us"), ref.WINDOW_US), ref.WINDOW_US)

    p = pa.table({"side": pa.array(np.zeros(people.num_rows, np.int32)), "key": people.column("id"),
                  "name": people.column("name"), "window_start_us": window(people)}, schema=Q8_STATE)
    a = pa.table({"side": pa.array(np.ones(auctions.num_rows, np.int32)), "key": auctions.column("seller"),
                  "name": pa.nulls(auctions.num_rows, pa.string()), "window_start_us": window(auctions)},
                 schema=Q8_STATE)
    return pa.concat_tables([p, a])


def _join_q8(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    """A person is emitted once per window in which they also created an auction: the pairs matched now that
    were not matched before this batch."""
    old = state.to_pandas()
    both = pd.concat([old, rows.to_pandas()], ignore_index=True)

    def matched(df):
        p, a = df[df.side == 0], df[df.side == 1][["key", "window_start_us"]].drop_duplicates()
        return p[["key", "name", "window_start_us"]].merge(a, on=["key", "window_start_us"])

    now, before = matched(both), matched(old)
    new = now.merge(before, on=["key", "name", "window_start_us"], how="left", indicator=True)
    new = new[new["_merge"] == "left_only"].rename(columns={"key": "id"})
    kept = pd.concat([both[both.side == 0], both[both.side == 1].drop_duplicates(["key", "window_start_us"])])
    return _arrow(new, Q8_OUT), _arrow(kept, Q8_STATE)


def _expire_q8(state: pa.Table, watermark_us: int, final: bool) -> tuple[pa.Table, pa.Table]:
    """Windows the watermark passed can match nothing more: their rows leave the state."""
    open_ = pc.greater(pc.add(state.column("window_start_us"), ref.WINDOW_US), watermark_us)
    return _empty(Q8_OUT), state.filter(open_)


def q8() -> Query:
    """New users: people who created an auction in the 10 s tumbling window in which they registered (id, name,
    window start). A windowed join keyed by person; a window's rows leave the state once the watermark passes it."""
    return Query("q8", (EVENTS, Operator("select", _select_q8, simple_ddl(Q8_STATE)),
                        Operator("join", None, simple_ddl(Q8_OUT), key="key", state=Stateful(Q8_STATE, _join_q8,
                                                                                        _expire_q8))),
                 description=q8.__doc__)


def _dataframe_version(name: str) -> Callable[[], Query]:
    def build() -> Query:
        from queries import nexmark_dataframe  # it imports this module's operators

        return getattr(nexmark_dataframe, name)()

    build.__doc__ = f"{name}: queries.nexmark_dataframe.{name}"
    return build


# the queries written with Arrow operators, which also run without Spark (tests/queries/local_runner.py)
ARROW_QUERIES: dict[str, Callable[[], Query]] = {"q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5,
                                                 "q7": q7, "q8": q8}
# the same queries written with DataFrame operators (queries.nexmark_dataframe), and whose answer each computes
SAME_ANSWER_AS = {"q1df": "q1", "q2df": "q2", "q5df": "q5"}
QUERIES: dict[str, Callable[[], Query]] = {**ARROW_QUERIES,
                                           **{name: _dataframe_version(name) for name in SAME_ANSWER_AS}}


def expected(name: str, schedule) -> pd.DataFrame:
    """The pandas reference's answer to query `name` over the whole schedule (q4: at its last event's time)."""
    name = SAME_ANSWER_AS.get(name, name)
    events = reference_events(schedule)
    total = schedule.total_events
    last = int(schedule.arrival_us(total - 1, total)[0]) if total else 0
    people, auctions, bids = events["person"], events["auction"], events["bid"]
    answers = {"q0": lambda: wide_events(events).to_pandas(), "q1": lambda: ref.q1(bids), "q2": lambda: ref.q2(bids),
               "q3": lambda: ref.q3(people, auctions), "q4": lambda: ref.q4(auctions, bids, last),
               "q5": lambda: ref.q5(bids), "q7": lambda: ref.q7(bids), "q8": lambda: ref.q8(people, auctions)}
    return answers[name]()


def answer(name: str, output: pa.Table | None) -> pd.DataFrame:
    """The query's answer from its committed output (every batch and the final flush, concatenated)."""
    query = build(name)
    if output is None:
        output = simple_arrow_schema(query.output_schema()).empty_table()
    return query.answer(output) if query.answer is not None else output.to_pandas()


def same_rows(got: pd.DataFrame, want: pd.DataFrame) -> tuple[bool, str]:
    """Exact equality of two answers as sets of rows with repetitions (order is not part of a streaming answer);
    the reason when they differ."""
    if sorted(got.columns) != sorted(want.columns):
        return False, f"columns {sorted(got.columns)} != {sorted(want.columns)}"
    cols = list(want.columns)
    a = got[cols].sort_values(cols, ignore_index=True)
    b = want[cols].sort_values(cols, ignore_index=True)
    if a.shape != b.shape:
        return False, f"{len(a)} rows, the reference has {len(b)}"
    diff = ~((a.values == b.values) | (a.isna().values & b.isna().values)).all(axis=1)  # null matches null
    if diff.any():
        i = int(np.argmax(diff))
        return False, f"{int(diff.sum())} rows differ; first: {a.iloc[i].to_dict()} vs {b.iloc[i].to_dict()}"
    return True, f"{len(a)} rows equal"


def build(name: str) -> Query:
    if name not in QUERIES:
        raise QueryError(f"nexmark query {name!r} is not one of {', '.join(QUERIES)}")
    return QUERIES[name]()
