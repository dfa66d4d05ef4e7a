"""The Nexmark event streams (people, auctions, bids), generated deterministically for any range of event ids.

Why a port and not a new model: Nexmark is the yardstick Flink, Beam and others report on, so the streams must
be the standard ones. This follows Apache Beam's generator (sdks/java/testing/nexmark, sources/generator/model:
PersonGenerator, AuctionGenerator, BidGenerator, PriceGenerator) and its default configuration:
  - each epoch of 50 events holds 1 person, 3 auctions, 46 bids, in that order (ids 0, 1-3, 4-49);
  - a new auction's seller is a hot seller (the first of the last 100 people) with probability 1 - 1/4, otherwise
    one of the 1,000 most recent people (plus 10 not yet created); a bid's auction is a hot auction (the first of
    the last 100 auctions) with probability 1 - 1/2, otherwise one of the 100 in flight (plus 10 ahead); its bidder
    a hot bidder (the second of the last 100 people) with probability 1 - 1/4, otherwise an active person;
  - prices are round(10^(6u) x 100) cents; categories 10-14; states AZ, CA, ID, OR, WA, WY; Beam's cities and names;
  - an auction expires after 1 + uniform(0, 2 x the time until the auction 100 ahead is created) ms, so that about
    100 auctions are in flight whatever the rate.
What differs from Beam, on purpose: event times are the workload's scheduled arrivals (any rate profile, the same
replay as every other workload, so latency is measured from the scheduled arrival); randomness is counter-based
(workloads/rng.py: a field is a function of (seed, event id), so any id range, in any task, regenerates the same
events; Beam seeds java.util.Random with the event id, which a Python port cannot match bit for bit); the free-text
fields (item names, descriptions, e-mails, `extra` padding) are deterministic filler of Beam's average sizes, since
no query reads their content.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workloads.rng import STREAM_NEXMARK, uniform

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
FIRST_PERSON_ID, FIRST_AUCTION_ID, FIRST_CATEGORY_ID = 1000, 1000, 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = AUCTION_ID_LEAD = 10
HOT_BATCH = 100  # hot sellers, bidders and auctions are the first (second) of each batch of 100
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
             "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
PERSON, AUCTION, BID = 0, 1, 2

# the draws each event makes, one counter stream each
_SELLER_HOT, _SELLER, _CATEGORY, _INITIAL, _RESERVE, _LENGTH = range(6)
_AUCTION_HOT, _AUCTION, _BIDDER_HOT, _BIDDER, _PRICE = range(6, 11)
_NAME_FIRST, _NAME_LAST, _CITY, _STATE, _CARD, _EXTRA = range(11, 17)


@dataclass(frozen=True)
class NexmarkConfig:
    """Beam's NexmarkConfiguration defaults that shape the streams."""

    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100


def kind_of(event_id: np.ndarray) -> np.ndarray:
    offset = np.asarray(event_id) % PROPORTION_DENOMINATOR
    return np.where(offset < PERSON_PROPORTION, PERSON,
                    np.where(offset < PERSON_PROPORTION + AUCTION_PROPORTION, AUCTION, BID))


def last_person(event_id: np.ndarray) -> np.ndarray:
    """The last person id created at or before this event (base 0)."""
    epoch, offset = np.divmod(np.asarray(event_id, np.int64), PROPORTION_DENOMINATOR)
    return epoch * PERSON_PROPORTION + np.minimum(offset, PERSON_PROPORTION - 1)


def last_auction(event_id: np.ndarray) -> np.ndarray:
    """The last auction id created at or before this event (base 0; -1 before the first)."""
    epoch, offset = np.divmod(np.asarray(event_id, np.int64), PROPORTION_DENOMINATOR)
    person = offset < PERSON_PROPORTION
    bid = offset >= PERSON_PROPORTION + AUCTION_PROPORTION
    epoch = np.where(person, epoch - 1, epoch)
    offset = np.where(person | bid, AUCTION_PROPORTION - 1, offset - PERSON_PROPORTION)
    return epoch * AUCTION_PROPORTION + offset


def _u(seed: int, ids: np.ndarray, field: int) -> np.ndarray:
    return uniform(seed, STREAM_NEXMARK, ids, field)


def _pick(u: np.ndarray, n) -> np.ndarray:
    """A uniform integer in [0, n) from u in (0, 1)."""
    return np.minimum((u * n).astype(np.int64), np.asarray(n, np.int64) - 1)


def _active_person(seed: int, ids: np.ndarray, field: int, config: NexmarkConfig) -> np.ndarray:
    people = last_person(ids) + 1
    active = np.minimum(people, config.num_active_people)
    return people - active + _pick(_u(seed, ids, field), active + PERSON_ID_LEAD)


def _price(seed: int, ids: np.ndarray, field: int) -> np.ndarray:
    return np.round(10.0 ** (_u(seed, ids, field) * 6.0) * 100.0).astype(np.int64)


def _filler(ids: np.ndarray, sizes: np.ndarray) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz" * 40
    return [alphabet[i % 26: i % 26 + max(0, int(n))] for i, n in zip(ids.tolist(), sizes.tolist())]


def _extra(seed: int, ids: np.ndarray, current: int, average: int) -> list[str]:
    """Beam's nextExtra: padding to the average size, +-20 %."""
    want = max(0, average - current)
    delta = round(want * 0.2)
    sizes = want - delta + (_pick(_u(seed, ids, _EXTRA), 2 * delta) if delta else 0)
    return _filler(ids, np.broadcast_to(sizes, ids.shape))


def generate(seed: int, first: int, stop: int, event_time_us: np.ndarray, time_of=None,
             config: NexmarkConfig = NexmarkConfig()) -> dict[str, pd.DataFrame]:
    """Events [first, stop) as three tables (person, auction, bid), each with its `event_id` and `date_time_us`
    (the event's scheduled arrival, from `event_time_us`, one per event of the range). `time_of(ids)` gives the
    scheduled time of any event id (an auction's expiry looks 1,667 events ahead); by default the range's own times,
    extrapolated at their mean rate past its end."""
    ids = np.arange(first, stop, dtype=np.int64)
    times = np.asarray(event_time_us, np.int64)
    if len(times) != len(ids):
        raise ValueError(f"{len(times)} event times for {len(ids)} events")
    if time_of is None:
        time_of = _extrapolating(ids, times)
    return generate_ids(seed, ids, times, time_of, config)


def generate_ids(seed: int, ids: np.ndarray, times: np.ndarray, time_of,
                 config: NexmarkConfig = NexmarkConfig()) -> dict[str, pd.DataFrame]:
    """The events of any set of ids (one task's share of a micro-batch, in any order), with their times: every
    field is a function of (seed, id) and, for an auction's expiry, of `time_of`, so the union over tasks is the
    whole range's `generate`."""
    ids = np.asarray(ids, np.int64)
    times = np.asarray(times, np.int64)
    kinds = kind_of(ids)
    out = {}
    p = ids[kinds == PERSON]
    first_names = np.array(FIRST_NAMES)[_pick(_u(seed, p, _NAME_FIRST), len(FIRST_NAMES))]
    last_names = np.array(LAST_NAMES)[_pick(_u(seed, p, _NAME_LAST), len(LAST_NAMES))]
    card = _pick(_u(seed, p, _CARD), 10 ** 16)
    out["person"] = pd.DataFrame({
        "event_id": p, "id": last_person(p) + FIRST_PERSON_ID,
        "name": np.char.add(np.char.add(first_names, " "), last_names),
        "email_address": [f"{s[:7]}@{s[7:12]}.com" for s in _filler(p, np.full(len(p), 12))],
        "credit_card": [" ".join(f"{c:016d}"[i:i + 4] for i in range(0, 16, 4)) for c in card.tolist()],
        "city": np.array(US_CITIES)[_pick(_u(seed, p, _CITY), len(US_CITIES))],
        "state": np.array(US_STATES)[_pick(_u(seed, p, _STATE), len(US_STATES))],
        "date_time_us": times[kinds == PERSON], "extra": _extra(seed, p, 60, config.avg_person_bytes)})

    a = ids[kinds == AUCTION]
    hot_seller = _pick(_u(seed, a, _SELLER_HOT), config.hot_sellers_ratio) > 0
    seller = np.where(hot_seller, (last_person(a) // HOT_BATCH) * HOT_BATCH,
                      _active_person(seed, a, _SELLER, config)) + FIRST_PERSON_ID
    initial = _price(seed, a, _INITIAL)
    a_time = times[kinds == AUCTION]
    ahead = (config.num_in_flight_auctions * PROPORTION_DENOMINATOR) // AUCTION_PROPORTION
    horizon_ms = np.maximum((time_of(a + ahead) - a_time) // 1000 * 2, 1)
    length_ms = 1 + _pick(_u(seed, a, _LENGTH), horizon_ms)
    out["auction"] = pd.DataFrame({
        "event_id": a, "id": last_auction(a) + FIRST_AUCTION_ID,
        "item_name": [f"item {i}" for i in (last_auction(a) + FIRST_AUCTION_ID).tolist()],
        "description": _filler(a, np.full(len(a), 100)),
        "initial_bid": initial, "reserve": initial + _price(seed, a, _RESERVE),
        "date_time_us": a_time, "expires_us": a_time + length_ms * 1000, "seller": seller,
        "category": FIRST_CATEGORY_ID + _pick(_u(seed, a, _CATEGORY), NUM_CATEGORIES),
        "extra": _extra(seed, a, 8 + 20 + 100 + 40, config.avg_auction_bytes)})

    b = ids[kinds == BID]
    last = last_auction(b)
    lowest = np.maximum(last - config.num_in_flight_auctions, 0)
    in_flight = lowest + _pick(_u(seed, b, _AUCTION), last - lowest + 1 + AUCTION_ID_LEAD)
    hot_auction = _pick(_u(seed, b, _AUCTION_HOT), config.hot_auction_ratio) > 0
    hot_bidder = _pick(_u(seed, b, _BIDDER_HOT), config.hot_bidders_ratio) > 0
    out["bid"] = pd.DataFrame({
        "event_id": b,
        "auction": np.where(hot_auction, (last // HOT_BATCH) * HOT_BATCH, in_flight) + FIRST_AUCTION_ID,
        "bidder": np.where(hot_bidder, (last_person(b) // HOT_BATCH) * HOT_BATCH + 1,
                           _active_person(seed, b, _BIDDER, config)) + FIRST_PERSON_ID,
        "price": _price(seed, b, _PRICE), "date_time_us": times[kinds == BID],
        "extra": _extra(seed, b, 32, config.avg_bid_bytes)})
    return out


def _extrapolating(ids: np.ndarray, times: np.ndarray):
    """Times of ids inside the range from the range; past it, at the range's mean rate (an auction's horizon only)."""
    span = (times[-1] - times[0]) / max(len(ids) - 1, 1) if len(ids) else 0.0

    def time_of(query: np.ndarray) -> np.ndarray:
        query = np.asarray(query, np.int64)
        inside = np.clip(query - ids[0], 0, len(ids) - 1) if len(ids) else query
        base = times[inside] if len(ids) else np.zeros(len(query), np.int64)
        past = np.maximum(query - (ids[-1] if len(ids) else 0), 0)
        return base + (past * span).astype(np.int64)

    return time_of
