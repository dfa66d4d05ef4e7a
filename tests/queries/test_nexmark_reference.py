"""The pandas Nexmark references (queries/nexmark_reference.py) on hand-made streams with known answers."""
import pandas as pd

from queries import nexmark_reference as ref

S = 1_000_000


def bids(rows):
    df = pd.DataFrame(rows, columns=["auction", "bidder", "price", "date_time_us"])
    return df.assign(event_id=range(len(df)))


def test_q1_q2_convert_and_select():
    b = bids([(1000, 1, 100, 0), (1107, 2, 1001, S), (1230, 3, 7, 2 * S)])
    assert ref.q1(b)["price"].tolist() == [89, 890, 6]
    assert ref.q2(b).values.tolist() == [[1107, 1001], [1230, 7]]  # 1107 = 9 x 123, 1230 = 10 x 123


def test_q3_joins_sellers_in_three_states_with_category_10_auctions():
    people = pd.DataFrame({"id": [1, 2, 3], "name": ["A", "B", "C"], "city": ["Bend", "Kent", "Boise"],
                           "state": ["OR", "WA", "ID"]})
    auctions = pd.DataFrame({"id": [10, 11, 12, 13], "seller": [1, 2, 3, 3], "category": [10, 10, 11, 10]})
    assert ref.q3(people, auctions).values.tolist() == [["A", "Bend", "OR", 10], ["C", "Boise", "ID", 13]]


def test_q4_averages_winning_bids_of_closed_auctions_per_category():
    auctions = pd.DataFrame({"id": [1, 2, 3], "date_time_us": [0, 0, 0], "expires_us": [10 * S, 10 * S, 99 * S],
                             "reserve": [50, 50, 50], "category": [10, 10, 11], "seller": [7, 7, 8]})
    b = bids([(1, 1, 60, S), (1, 2, 80, 2 * S), (1, 3, 90, 11 * S),  # the 90 comes after the close
              (2, 1, 40, S),  # below the reserve: auction 2 has no winner
              (3, 1, 500, S)])  # auction 3 is still open at 20 s
    wins = ref.winning_bids(auctions, b, until_us=20 * S)
    assert wins[["auction", "price", "bidder"]].values.tolist() == [[1, 80, 2]]
    assert ref.q4(auctions, b, until_us=20 * S).values.tolist() == [[10, 80.0]]


def test_q5_counts_bids_per_sliding_window_and_keeps_every_tied_auction():
    b = bids([(1, 1, 1, 1 * S), (1, 1, 1, 2 * S), (2, 1, 1, 6 * S), (2, 1, 1, 7 * S), (3, 1, 1, 12 * S)])
    out = ref.q5(b)
    rows = {(r.window_start_us // S, r.auction, r.bids) for r in out.itertuples()}
    # windows [-5, 5): auction 1 x2; [0, 10): 1 and 2 tie at 2; [5, 15): 2 x2; [10, 20): 3 x1
    assert rows == {(-5, 1, 2), (0, 1, 2), (0, 2, 2), (5, 2, 2), (10, 3, 1)}


def test_q7_keeps_the_highest_bids_of_each_tumbling_window():
    b = bids([(1, 1, 5, 1 * S), (2, 2, 9, 3 * S), (3, 3, 9, 4 * S), (4, 4, 7, 12 * S)])
    out = ref.q7(b)
    assert out[["window_start_us", "auction", "price"]].values.tolist() == [[0, 2, 9], [0, 3, 9], [10 * S, 4, 7]]


def test_q8_finds_people_who_sell_in_the_window_they_joined():
    people = pd.DataFrame({"id": [1, 2], "name": ["A", "B"], "date_time_us": [1 * S, 2 * S]})
    auctions = pd.DataFrame({"seller": [1, 1, 2], "date_time_us": [3 * S, 4 * S, 12 * S]})
    assert ref.q8(people, auctions).values.tolist() == [[1, "A", 0]]  # B sold only in the next window


def test_the_references_run_on_generated_streams():
    import numpy as np

    from workloads.nexmark import generate

    n = 20_000
    ev = generate(1, 0, n, (np.arange(n) * 1000).astype(np.int64))  # 1,000 events/s: 20 s
    assert len(ref.q1(ev["bid"])) == len(ev["bid"])
    assert not ref.q5(ev["bid"]).empty and not ref.q7(ev["bid"]).empty
    assert not ref.q8(ev["person"], ev["auction"]).empty  # hot sellers are recent people: some join and sell at once
    assert len(ref.q0(ev)["auction"]) == len(ev["auction"])
