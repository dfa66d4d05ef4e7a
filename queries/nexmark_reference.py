"""Nexmark queries in pandas, on whole generated streams: the reference every Spark version must equal exactly.

Why pandas and whole streams: a reference has to be obviously right, so it computes each query's definition over
all events at once, with no state, windows carried across batches or degrees, and no Spark. The definitions are
Apache Beam's Nexmark queries (sdks/java/testing/nexmark, queries/Query0..8), with the default window of 10 s
(sliding every 5 s for q5) and auctionSkip 123; event time is each event's `date_time_us` (its scheduled
arrival, workloads/nexmark.py). Where Beam's output order or tie-break is an accident of its runner, the reference
says which rows it returns (every tied row) and returns them sorted, so a comparison is of sets of rows.
"""
from __future__ import annotations

import pandas as pd

WINDOW_US = 10_000_000
SLIDE_US = 5_000_000
AUCTION_SKIP = 123
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), ignore_index=True)


def q0(events: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Pass-through: every event, unchanged (what the pipeline itself costs)."""
    return {kind: _sorted(table) for kind, table in events.items()}


def q1(bids: pd.DataFrame) -> pd.DataFrame:
    """Currency conversion: each bid's price in euros, Beam's integer form price * 89 / 100."""
    out = bids[["auction", "bidder", "price", "date_time_us"]].copy()
    out["price"] = out["price"] * 89 // 100
    return _sorted(out)


def q2(bids: pd.DataFrame, skip: int = AUCTION_SKIP) -> pd.DataFrame:
    """Selection: (auction, price) of the bids on every `skip`-th auction."""
    return _sorted(bids.loc[bids["auction"] % skip == 0, ["auction", "price"]])


def q3(people: pd.DataFrame, auctions: pd.DataFrame) -> pd.DataFrame:
    """Local item suggestion: people in OR, ID or CA who sell an auction in category 10 (name, city, state, auction
    id), the join of the whole streams (Beam keeps both sides' state for ever)."""
    sellers = people.loc[people["state"].isin(Q3_STATES), ["id", "name", "city", "state"]]
    items = auctions.loc[auctions["category"] == Q3_CATEGORY, ["id", "seller"]].rename(columns={"id": "auction"})
    joined = items.merge(sellers, left_on="seller", right_on="id")
    return _sorted(joined[["name", "city", "state", "auction"]])


def winning_bids(auctions: pd.DataFrame, bids: pd.DataFrame, until_us: int) -> pd.DataFrame:
    """Each auction closed by `until_us` (expired) that has a valid bid: the highest bid at or above its reserve
    made while it was open, the earliest of equal prices, then the first event (Beam's WinningBids)."""
    closed = auctions[auctions["expires_us"] <= until_us]
    m = bids.merge(closed[["id", "date_time_us", "expires_us", "reserve", "category", "seller"]],
                   left_on="auction", right_on="id", suffixes=("", "_auction"))
    valid = m[(m["date_time_us"] >= m["date_time_us_auction"]) & (m["date_time_us"] < m["expires_us"])
              & (m["price"] >= m["reserve"])]
    best = valid.sort_values(["auction", "price", "date_time_us", "event_id"], ascending=[True, False, True, True],
                             kind="mergesort")
    return best.drop_duplicates("auction", keep="first")[["auction", "category", "seller", "price", "bidder",
                                                          "date_time_us"]]


def q4(auctions: pd.DataFrame, bids: pd.DataFrame, until_us: int) -> pd.DataFrame:
    """Average selling price per category, over the auctions closed by `until_us`."""
    wins = winning_bids(auctions, bids, until_us)
    out = wins.groupby("category", as_index=False)["price"].mean().rename(columns={"price": "average_price"})
    return _sorted(out)


def q5(bids: pd.DataFrame) -> pd.DataFrame:
    """Hot items: per sliding window (10 s every 5 s), the auction(s) with the most bids (every tied auction)."""
    rows = []
    if bids.empty:
        return pd.DataFrame(columns=["window_start_us", "auction", "bids"])
    t = bids["date_time_us"]
    start = (t.min() // SLIDE_US) * SLIDE_US - WINDOW_US + SLIDE_US  # the first window holding the first bid
    while start <= t.max():
        inside = bids[(t >= start) & (t < start + WINDOW_US)]
        if len(inside):
            counts = inside.groupby("auction").size()
            top = counts[counts == counts.max()]
            rows += [(start, auction, int(n)) for auction, n in top.items()]
        start += SLIDE_US
    return _sorted(pd.DataFrame(rows, columns=["window_start_us", "auction", "bids"]))


def q7(bids: pd.DataFrame) -> pd.DataFrame:
    """Highest bid: per tumbling window of 10 s, the bid(s) with the highest price (every tied bid)."""
    b = bids.assign(window_start_us=(bids["date_time_us"] // WINDOW_US) * WINDOW_US)
    top = b[b["price"] == b.groupby("window_start_us")["price"].transform("max")]
    return _sorted(top[["window_start_us", "auction", "bidder", "price", "date_time_us"]])


def q8(people: pd.DataFrame, auctions: pd.DataFrame) -> pd.DataFrame:
    """New users: people who created an auction in the tumbling window of 10 s in which they registered (id, name,
    window start), once per person and window."""
    p = people.assign(window_start_us=(people["date_time_us"] // WINDOW_US) * WINDOW_US)
    a = auctions.assign(window_start_us=(auctions["date_time_us"] // WINDOW_US) * WINDOW_US)
    joined = p.merge(a[["seller", "window_start_us"]], left_on=["id", "window_start_us"],
                     right_on=["seller", "window_start_us"])
    return _sorted(joined[["id", "name", "window_start_us"]].drop_duplicates())
