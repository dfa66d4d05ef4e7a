"""The Nexmark generator (workloads/nexmark.py): Beam's proportions, id rules and hot ratios, deterministic for any
range of ids."""
import numpy as np
import pandas as pd

from workloads.nexmark import (AUCTION, BID, FIRST_AUCTION_ID, FIRST_PERSON_ID, PERSON, generate, kind_of,
                               last_auction, last_person)


def times(first, stop, rate=10_000):
    return (np.arange(first, stop) * 1_000_000 // rate).astype(np.int64)


def test_each_epoch_of_50_is_one_person_three_auctions_46_bids_and_ids_follow_beam():
    ids = np.arange(0, 100)
    kinds = kind_of(ids)
    assert (kinds[:50] == PERSON).sum() == 1 and (kinds[:50] == AUCTION).sum() == 3 and (kinds[:50] == BID).sum() == 46
    assert kinds[0] == PERSON and list(kinds[1:4]) == [AUCTION] * 3 and kinds[4] == BID
    # Beam's lastBase0PersonId / lastBase0AuctionId
    assert last_person(np.array([0, 1, 49, 50, 51])).tolist() == [0, 0, 0, 1, 1]
    assert last_auction(np.array([0, 1, 2, 3, 4, 49, 50, 51])).tolist() == [-1, 0, 1, 2, 2, 2, 2, 3]


def test_the_same_ids_give_the_same_events_however_the_range_is_cut():
    whole = generate(7, 0, 5000, times(0, 5000), time_of=lambda q: np.asarray(q) * 100)
    parts = [generate(7, a, b, times(a, b), time_of=lambda q: np.asarray(q) * 100)
             for a, b in ((0, 1234), (1234, 4000), (4000, 5000))]
    for kind in ("person", "auction", "bid"):
        pd.testing.assert_frame_equal(whole[kind], pd.concat([p[kind] for p in parts], ignore_index=True))
    other_seed = generate(8, 0, 5000, times(0, 5000), time_of=lambda q: np.asarray(q) * 100)
    assert not whole["bid"]["price"].equals(other_seed["bid"]["price"])


def test_hot_auctions_bidders_and_sellers_in_beams_proportions():
    n = 200_000
    ev = generate(1, 0, n, times(0, n))
    bids, auctions, people = ev["bid"], ev["auction"], ev["person"]
    assert len(people) == n // 50 and len(auctions) == 3 * n // 50 and len(bids) == 46 * n // 50
    hot_auction = (bids["auction"] - FIRST_AUCTION_ID) % 100 == 0
    assert 0.49 < hot_auction.mean() < 0.53  # 1 - 1/2, plus the in-flight picks that land on a hot id
    hot_bidder = (bids["bidder"] - FIRST_PERSON_ID) % 100 == 1
    assert 0.74 < hot_bidder.mean() < 0.77  # 1 - 1/4
    hot_seller = (auctions["seller"] - FIRST_PERSON_ID) % 100 == 0
    assert 0.74 < hot_seller.mean() < 0.77
    # bids name auctions in flight (at most 100 back, 10 ahead) and people among the last 1,000 (+10)
    last = last_auction(bids["event_id"].to_numpy()) + FIRST_AUCTION_ID
    assert ((bids["auction"] <= last + 10) & (bids["auction"] >= last - 100)).all()
    assert set(auctions["category"]) == {10, 11, 12, 13, 14}
    assert set(people["state"]) == {"AZ", "CA", "ID", "OR", "WA", "WY"}
    assert (auctions["reserve"] > auctions["initial_bid"]).all() and (bids["price"] >= 100).all()
    assert (auctions["expires_us"] > auctions["date_time_us"]).all()


def test_auctions_last_about_as_long_as_100_auctions_take_to_arrive():
    n = 100_000
    ev = generate(3, 0, n, times(0, n, rate=10_000))
    length_s = (ev["auction"]["expires_us"] - ev["auction"]["date_time_us"]).mean() / 1e6
    # 100 auctions ahead = 1,666 events = 0.1666 s at 10,000 events/s; lengths uniform on (0, 2 x that)
    assert 0.15 < length_s < 0.18
