"""Replication policy as data: which feeds to replicate, timers, credits and budgets.

Three presets ship:

* ``reference`` mimics the reference implementations (wire-compat.md section 4): GOSET
  rounds every 15 s, a full claim every round, no novelties, WANT and CHNK every
  ``rtt`` (4 s at most), 3 packets per request, WANT offset advancing by one.
* ``default`` is ours, built for a shared LoRa channel where airtime is scarce: on
  broadcast faces every new entry, chunk and key is pushed once and relayed with
  counter suppression (``relay.py``), WANT/CHNK only repair what the push missed, after
  hints or as a slow beacon (``repair.py``), the GOSET stays quiet (keys travel as
  pushed novelties, claims back off to half an hour and only repair), and the radio
  listens before it talks. On point-to-point faces it polls (Trickle GOSET rounds,
  requests backing off while nothing arrives, re-armed when a neighbour shows it holds
  more). docs/replication.md describes each rule and what it measured.
* ``ip`` is for links with no airtime to save: the same protocol, polling fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

from ..wire.errors import IdentityError
from ..wire.ident import parse_id

__all__ = ["PRESETS", "OffsetStep", "Policy", "policy_from_mapping", "preset"]


class OffsetStep(Enum):
    """How the WANT/CHNK start offset moves between two requests."""

    ONE = "one"  # Python reference: log_offs += 1
    PAST = "past"  # ESP32: continue after the last feed included


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    # which feeds to replicate: every key met in the GOSET, or only an allow-list
    replicate_all: bool = True
    allow: frozenset[bytes] = field(default_factory=frozenset)
    # GOSET admission (gateway/replication/admission.py): never these keys; new keys a
    # face may name at once, refilled per interval (s); keys without an entry leave after
    deny: frozenset[bytes] = field(default_factory=frozenset)
    goset_new_keys_per_face: int = 32
    goset_new_keys_interval: float = 10.0
    # (0: never; the radio preset waits a day, see DEFAULT)
    goset_probation: float = 900.0
    # longest side chain fetched and tracked, in chunks; longer claims are counted, ignored
    max_chain_chunks: int = 10_000
    # GOSET rounds: interval grows from min to max while in sync (equal: fixed period)
    goset_interval_min: float = 15.0
    goset_interval_max: float = 15.0
    goset_jitter: float = 1.0  # seconds of uniform jitter added to each fixed period
    trickle: bool = False  # Trickle timing (random point in [I/2, I), suppression)
    claim_redundancy: int = 0  # skip our claim after hearing this many equal ones; 0: never
    novelties: bool = False  # announce newly added keys with novelties
    single_key_novelty: bool = False  # with exactly 1 key send a novelty, not a claim
    help_budget: int = 3  # help answers to pending claims per round
    ask_budget: int = 1  # partial claims we ask with per round
    pending_max: int = 14  # pending claims kept between rounds
    pending_rounds: int = 0  # rounds a pending claim may wait unanswered; 0: no limit
    # help a peer whose claim lacks one to three of our keys with those keys as
    # novelties, read from the XOR of the two claims, instead of two half claims
    goset_xor_help: bool = False
    # WANT / CHNK
    credit: int = 3  # packets sent in answer to one request
    # per face, start at ``credit_min`` and double while the peer takes all we send,
    # falling to what it took when it takes less (pacing.AnswerCredit); False: always
    # ``credit``
    adaptive_credit: bool = False
    credit_min: int = 3
    request_budget: int = 100  # running BIPF size of items after which a vector is closed
    chnk_per_feed: int = 100  # chains of one feed asked for in one CHNK
    offset_step: OffsetStep = OffsetStep.ONE
    rtt_initial: float = 4.0
    rtt_max: float = 4.0
    rtt_min: float = 0.01
    rtt_backoff: float = 1.5  # rtt multiplier after a period without arrivals
    rtt_alpha: float = 0.5  # weight of the old rtt when a sample arrives
    backoff_per_cycle: bool = False  # back off only after a whole pass over the set is quiet
    # point-to-point faces: while answers keep arriving, the next request waits until
    # they pause for a quarter of the rtt (the reference asks every rtt, answers on
    # their way or not, and is answered twice)
    request_after_answers: bool = False
    rearm_on_hint: bool = False  # request at once when a peer's WANT shows it has more
    # push faces: a hint from a neighbour's WANT (it holds entry n of feed f) is dropped,
    # and its request and retries with it, once we hold entry n (the push brought it)
    hint_settle: bool = False
    # push faces: an entry we relayed that no neighbour relayed on brings our WANT (it
    # shows what we hold, for a next hop that missed it) also while airtime is scarce
    no_echo_scarce: bool = True
    suppress_overheard: bool = False  # drop queued packets a neighbour just sent
    # on a radio face, wait U(0, tx_jitter x airtime) before a frame goes out, so that
    # neighbours answering the same request do not all start in the same instant
    tx_jitter: float = 0.0
    # while a face's airtime budget is spent, build no WANT/CHNK (it would wait and be
    # replaced): the request timer waits for the budget instead
    defer_requests: bool = False
    # push: on a broadcast face, relay every entry, chunk and GOSET key we store, once,
    # after U(0, push_window x airtime), unless ``push_redundancy`` copies of it are heard
    # meanwhile (relay.py); ``push_capacity`` relays wait per face at most
    push: bool = False
    push_window: float = 8.0
    push_redundancy: int = 2
    push_capacity: int = 64
    # with the receiver's SNR known, a relay waits the longer the stronger the frame came
    # in (``push_snr_low``..``push_snr_high`` dB span the window): far neighbours, which
    # reach farther on, go first, and near ones hear them and keep quiet (Meshtastic's
    # managed flood); the last quarter of the window is random either way
    push_snr_low: float = -7.5
    push_snr_high: float = 10.0
    push_novelty_extra: int = 0  # copies more than push_redundancy to cancel a novelty
    # a relay waits up to this many push windows more, the fewer of our relayed entries
    # neighbours relayed on lately: nodes whose relays carry the flood go first
    push_echo_weight: float = 0.0
    push_echo_density: float = 2.0  # ... in full from this many copies per item more than 1
    # where we hear each item about once (a leaf, the edge of a mesh), a relay is skipped
    # with this weight times the share of our relays nobody relayed on, times how sparse
    # the mesh around us is (a probability, at most 1): a leaf's only neighbour holds
    # what the leaf heard from it already; where airtime is plentiful a relay that
    # reaches nobody costs little, so only while more than ``push_skip_load`` of the
    # face's duty-cycle budget is spent
    push_echo_skip: float = 0.0
    push_skip_load: float = 0.5  # ... and only while more of the airtime budget is spent
    # ... counted, in a face's first duty window, pro rata to the time elapsed, but of
    # at least this share of the budget (1: the whole budget from the start): the rules
    # for scarce airtime that answers and requests follow (answers spread wider, hints
    # wait longer, weak requests wait for another, settled hints stay home) start once a
    # face spends at a pace that would exhaust its budget before the window ends; the
    # leaf rule and ``no_echo_scarce`` count the whole budget
    push_skip_start: float = 1.0
    # push faces: an answer waits U(1, answer_window) airtimes (past the asker's request
    # burst; a copy from another neighbour meanwhile cancels it)
    answer_window: float = 4.0
    answer_window_scarce: float = 0.0  # ... while airtime is scarce (0: answer_window)
    # push faces: a WANT/CHNK heard less than this many dB above ``push_snr_low`` (the
    # demodulation floor) came over a link that rarely carries the answers back; while
    # more than ``push_skip_load`` of the budget is spent it is answered only when a
    # request for the same first packet comes again within ``answer_weak_memory``
    # seconds (0: answer every request at once)
    answer_snr_margin: float = 0.0
    answer_weak_memory: float = 3600.0
    # a WANT covers the feeds a neighbour's WANT showed us behind on: a WANT holds about
    # half of a set of 100 keys, and the next window in turn may miss them; every other
    # WANT at most leaves the rotation for them (False: the next window in turn, as the
    # references rotate)
    want_focus: bool = False
    # push faces: no requests while less than this share of the airtime budget is left
    push_reserve: float = 0.0
    # ... but one request round per this many seconds still goes, ahead of the relays
    # waiting for airtime: its WANT shows the neighbours what we lack (0: none)
    beacon_floor: float = 0.0
    # ... every this many seconds instead once our GOSET has stayed put for
    # ``beacon_calm_after`` seconds (0: always ``beacon_floor``)
    beacon_floor_calm: float = 0.0
    beacon_calm_after: float = 3600.0
    push_stale: float = 120.0  # seconds past its time after which a relay is dropped
    # ... but with this, not a novelty's: it waits for the budget however long (it is
    # cheap, every frame of its feed needs it, and a key dropped costs claims later)
    push_keep_novelties: bool = False
    # push faces: no WANT/CHNK while our GOSET changed (after we started) less than this
    # many seconds ago and the neighbours are not known to hold it (none showed it; it
    # changed, or a different one was shown, within goset_respond_delay): nobody would
    # understand them, and the next key makes them stale again; once our set stays put
    # they go out, and show the neighbours the difference (0: ask whatever the set)
    request_settle: float = 0.0
    # ask soon after hearing an entry- or chunk-sized frame we could not place and did not
    # hold: a neighbour holds something we lack
    hint_unmatched: bool = False
    # copies of a frame heard while it could not be placed count for its relay once it
    # is stored (push): neighbours that sent it hold it; at ``push_redundancy`` copies
    # the relay is left out
    orphan_copies: bool = False
    request_delay: float = 0.0  # push faces: seconds from a hint to the request it brings
    request_delay_scarce: float = 0.0  # ... while airtime is scarce (0: request_delay)
    push_rtt_max: float = 600.0  # push faces: the request pace backs off up to this
    # a key new to us (a novelty, a claim's ends, our own new feed) restarts the Trickle
    # timer; off when keys travel by push, which announces them already
    goset_reset_on_add: bool = True
    # a claim that differs from ours restarts the Trickle timer (RFC 6206); off under
    # push, where keys travel as pushed novelties and claims only repair, at their pace
    goset_reset_on_claim: bool = True
    goset_respond_holdoff: float = 120.0  # without resets: seconds between extra rounds
    goset_respond_delay: float = 60.0  # ... and from a difference to its round (at most)
    # without resets: while a difference lasts, each extra round that sent something
    # doubles the wait before the next one (from 2 x goset_interval_min up to
    # goset_respond_holdoff); a key added or a claim equal to our set starts it over
    goset_respond_backoff: bool = False
    # the radio listens before it talks (channel activity detection, then a random
    # backoff while the channel is busy): a setting of the LoRa radio, which the gateway
    # passes to the dongle and the simulator models (firmware_sim.channel); the
    # reference firmware sends blind
    listen_before_talk: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.goset_interval_min <= self.goset_interval_max:
            raise ValueError("goset_interval_min must be positive and <= goset_interval_max")
        if (self.credit < 1 or self.credit_min < 1 or self.request_budget < 8
                or self.chnk_per_feed < 1):
            raise ValueError("credit, credit_min, request_budget and chnk_per_feed must be "
                             "positive")
        if not 0 < self.rtt_min <= self.rtt_initial <= min(self.rtt_max, self.push_rtt_max):
            raise ValueError("need 0 < rtt_min <= rtt_initial <= rtt_max, push_rtt_max")
        if self.rtt_backoff < 1 or not 0 <= self.rtt_alpha < 1:
            raise ValueError("rtt_backoff must be >= 1 and rtt_alpha in [0, 1)")
        if min(self.help_budget, self.ask_budget, self.pending_max, self.pending_rounds,
               self.claim_redundancy, self.tx_jitter, self.push_window,
               self.request_delay, self.request_delay_scarce, self.push_echo_weight,
               self.answer_window_scarce, self.request_settle,
               self.push_echo_skip, self.beacon_floor, self.beacon_floor_calm,
               self.beacon_calm_after) < 0:
            raise ValueError("budgets must not be negative")
        if (self.goset_new_keys_per_face < 1 or self.goset_new_keys_interval <= 0
                or self.goset_probation < 0):
            raise ValueError("goset_new_keys_per_face and goset_new_keys_interval must be "
                             "positive, goset_probation not negative")
        if not 0 <= self.push_skip_load <= 1 or not 0 < self.push_skip_start <= 1:
            raise ValueError("push_skip_load must be in [0, 1], push_skip_start in (0, 1]")
        if self.answer_snr_margin < 0 or self.answer_weak_memory < 0:
            raise ValueError("answer_snr_margin and answer_weak_memory must not be negative")
        if self.push_echo_density <= 0:
            raise ValueError("push_echo_density must be positive")
        if self.push_redundancy < 1 or self.push_capacity < 1:
            raise ValueError("push_redundancy and push_capacity must be positive")

    def wants_feed(self, fid: bytes) -> bool:
        """Does this policy replicate ``fid`` when it is met in the GOSET?"""
        return self.replicate_all or fid in self.allow

    def with_(self, **changes: Any) -> Policy:
        """A copy with some fields changed (e.g. from a config file)."""
        return replace(self, **changes)


# the references drop no key from their GOSET, whatever it yields
REFERENCE = Policy(name="reference", goset_probation=0.0)

DEFAULT = Policy(
    name="default",
    goset_interval_min=4.0,
    goset_interval_max=1920.0,  # claims only repair under push: 32 min when all agree
    goset_jitter=0.0,
    trickle=True,
    claim_redundancy=1,
    novelties=False,  # pushed instead: every new key goes out at once, not one per round
    pending_rounds=6,
    credit=5,
    chnk_per_feed=3,
    offset_step=OffsetStep.PAST,
    rtt_initial=2.0,
    rtt_max=60.0,
    rtt_min=0.05,
    rtt_backoff=2.0,
    backoff_per_cycle=True,
    rearm_on_hint=True,
    suppress_overheard=True,
    tx_jitter=2.0,
    defer_requests=True,
    push=True,
    push_window=32.0,
    hint_unmatched=True,
    # an adopted orphan was relayed as if heard once: the neighbours' copies had gone by
    # before its relay was scheduled. city-100 after 24 h, seeds 1-8: 98.64 % of pairs
    # within 900 s on average (98.41 % without), p95 spread 3,400-5,557 s (3,571-7,245
    # s); grid-25, random-50 and islands-ip converged sooner, line-5 moves either way
    orphan_copies=True,
    goset_reset_on_add=False,
    goset_reset_on_claim=False,
    goset_respond_delay=15.0,
    # a peer whose claim lacks one to three of our keys gets just those, as novelties
    # (their XOR is the difference of the two claims' XORs), instead of two half claims
    # and a binary search of rounds. city-100 after 24 h, seeds 1-16: 1,419 late entries
    # instead of 2,398, mean p95 spread 719 s instead of 1,220 s, 15 of 16 seeds within
    # 900 s instead of 4 (searching for at most two keys: 1,535, 769 s, 14)
    goset_xor_help=True,
    push_novelty_extra=1,
    goset_respond_holdoff=600.0,  # city-100: fewer claims while keys spread, more data
    # city-100, 24 h, seeds 1-8: 98.4 % of pairs within 900 s on average (98.2 %
    # without), p95 spread 3,571-7,245 s (4,586-11,821 s), but seeds 3, 4, 5, 7 did a
    # little worse: a pocket's nodes (c67, c76) answered a neighbour whose set stayed
    # different every 8-15 s and spent half their second hour on claims. Only while
    # airtime is scarce: a node full of garbage keys otherwise took 7 times as long to
    # help an honest peer to its set
    goset_respond_backoff=True,
    # over LoRa the first entry of a feed may take hours to reach a node that knows its
    # key (and a key dropped changes the GOSET, so that neighbours' requests are no longer
    # understood): with 2 h city-100 held 70.6 % of pairs after 24 h instead of 90.9 %,
    # with 900 s islands-ip's p95 spread went from 1,565 to 7,213 s
    goset_probation=86400.0,
    push_echo_weight=2.0,
    # a leaf's relays reach nobody new: city-100 92.6 % of pairs after 24 h (90.9 %
    # without); its nodes with one or two neighbours held 91, 74, 96 % after 6 h (64, 69,
    # 82 % without); ungated by the load, isp-islands lost all its chats. Weight 2 (the
    # half-leaves too: nodes on the edge of a pocket, whose relays few take on): 99.4 /
    # 99.6 % after 24 h (seeds 1, 2) instead of 98.2 / 98.1 %; 3: 99.3 / 99.3 %; 0.5:
    # 96.5 / 96.8 %
    push_echo_skip=2.0,
    # the scarce-airtime rules for answers and requests start once a face spends at a
    # pace that would use half of its budget before the first hour is over (pro rata,
    # from at least half of it): city-100 spent its hour's budget in the first 35 min,
    # and the keys published after that spread only in the next hour. After 24 h (seeds
    # 1-4): within 900 s 98.0 / 98.0 / 98.9 / 98.7 % of pairs instead of 97.7 / 97.6 /
    # 98.7 / 98.0 %, p95 spread 8,382 / 5,526 / 4,782 / 4,586 s instead of 8,764 / 5,450
    # / 5,721 / 5,536 s, hour 0 on time 78-87 % instead of 70-83 %. The leaf rule stays on
    # the whole budget: from the start it starved c76, whose only link is c67 (p95
    # 19,855 s); unpaced (scarce from the first second) line-5 converged at 713-902 s
    push_skip_start=0.5,
    push_rtt_max=200.0,
    # requests stop while less than this share of the hour's airtime is left, so that
    # relays have it; city-100 after 24 h (seeds 1-4): 15 %: 99.96-99.98 % of pairs, p95
    # spread 7,090-11,572 s, 95.4-96.9 % of pairs within 900 s, 72 ks of airtime; 30 %:
    # 99.41-99.61 %, 24,149-31,926 s, 94.2-95.5 %, 62.5 ks; 10 %: 99.93-99.99 %,
    # 5,911-15,882 s, 93.6-97.3 %, 75 ks; none: 98 %, on time 57-66 %. Measured again
    # with the floor below and want_focus (seeds 1-8, late entries / mean p95 spread):
    # 15 %: 2,080 / 2,209 s; 20 %: 1,935 / 1,687 s (hours 0-4 1,442 late instead of
    # 1,768: the first hour's backlog clears sooner; hours 5-23 493 instead of 312);
    # 25 %: 2,201 / 1,849 s (hours 5-23: 652). Seeds 9-16: 15 %: 2,003 / 2,043 s; 20 %:
    # 1,979 / 1,835 s (hours 0-4 1,551 instead of 1,699, hours 5-23 428 instead of 304)
    push_reserve=0.20,
    # ... but a node at its duty-cycle limit still sends one request round every 300 s,
    # ahead of its relays: most late pairs sat at such nodes, which had sent no WANT
    # within 900 s, so no neighbour knew what they lacked. city-100 after 24 h, seeds
    # 1-4: entries late somewhere 330 / 360 / 315 / 404 instead of 675 / 659 / 675 /
    # 747, p95 spread 2,751 / 2,926 / 2,429 / 3,914 s, from hour 5 on 0-18 late entries
    # an hour instead of 5-44, the same airtime. 200 s: 341 / 301 / 400 / 352; 150 s:
    # 221 / 362 / 589 / 603 (seeds 3 and 4 took 9 h to clear the first hours' backlog:
    # the answers to the rounds crowd out the relays)
    beacon_floor=300.0,
    # ... and every 100 s once our GOSET has stayed put for 2 h: past the start's backlog
    # a straggler's request is what repairs it, and its neighbours have airtime to answer.
    # city-100 after 24 h, seeds 1-8 (late entries / of them from hour 5 on / mean p95
    # spread): 300 s throughout 1,935 / 493 / 1,687 s; 200 s after 1 h calm 1,718 / 211
    # / 1,662 s (hours 2-4 worse: 483 late instead of 418); 200 s after 2 h 1,588 / 184
    # / 1,616 s; after 3 h 1,625 / 196 / 1,634 s; 150 s after 2 h 1,515 / 104 / 1,604 s;
    # 100 s after 2 h 1,473 / 68 / 1,607 s, 0.3-0.5 ks more airtime. (200 s from the start
    # made hours 0-4 worse: 2,076 late instead of 1,442)
    beacon_floor_calm=100.0,
    beacon_calm_after=7200.0,
    # city-100 after 24 h, seeds 1-8: 2,547 late entries instead of 2,713, from hour 5 on
    # 438 instead of 702; jumping at every WANT: 2,647 (seed 2's pocket left half its set
    # unasked until hour 8)
    want_focus=True,
    # relays held back by a spent budget: novelties wait however long, the rest is dropped
    # a minute past its time. City-100 spends every node's budget in the first 40 min;
    # the novelties of the keys published after that went stale at the nodes in between,
    # and their neighbours caught up by claims (c67 and c76, the tail behind c41, spent
    # up to a third of the second hour on claims, the backlog of entries behind them
    # lasting for hours). After 24 h, seeds 1-16 (entries late somewhere / mean p95
    # spread): before 3,058 / 1,696 s; novelties kept 2,646 / 1,375 s; kept and push_stale
    # 60 s 2,494 / 1,224 s (a relay older than that mostly takes airtime a fresher one
    # needs; both measured with an orphan taken as soon as its key comes). 6 h scans
    # over 16 seeds, hours 0-4 late: 2,911 before, 2,517 kept, 2,364 kept and 60 s,
    # 2,703 with 30 s, 2,896 with 600 s
    push_keep_novelties=True,
    push_stale=60.0,
    # requests under a set that is still changing and nobody confirmed: in city-100's
    # first hour (keys arriving every half minute) WANT and CHNK took a fifth of the
    # airtime, under DMX that no neighbour held. After 24 h (seeds 1-4), with the GOSET
    # response that waits for keys to stop instead of being dropped: pairs within 900 s
    # 96.9 / 96.8 / 97.7 / 97.2 % instead of 95.4 / 96.1 / 96.7 / 96.9 %, p95 spread
    # 9,331 / 6,500 / 5,880 / 6,630 s instead of 11,572 / 8,914 / 11,517 / 7,090 s, the
    # same airtime; the settling alone had one seed at 18,306 s; 300 s did no better
    request_settle=120.0,
    listen_before_talk=True,
    request_delay=5.0,
    # while airtime is scarce a hint's request waits longer: the push may still bring it
    # (city-100 after 24 h: 95.7 % of pairs instead of 95.0 %; at 15 s everywhere line-5
    # converged after the reference did, 433 s)
    request_delay_scarce=15.0,
    # requests over weak links wait for another while airtime is scarce: in city-100
    # answers to requests heard below -1.5 dB reached their asker 7-13 % of the time
    # (41-83 % from +2 dB up), and were 7,000 of the 10,000 answers in hours 3-6; after
    # 24 h 95.0 % of pairs instead of 92.6 %, 0.94 M collisions instead of 1.09 M
    # (ungated, isp-islands delivered 40-150 of its 190 chats)
    answer_snr_margin=6.0,
    # a hint settled by the push brings no request while airtime is scarce: city-100
    # after 24 h 96.2 / 96.5 % of pairs (seeds 1, 2) instead of 95.9 / 96.2 %, 63,105 s of
    # airtime instead of 63,909 s; ungated, random-50's p95 spread rose from 101 to 816 s
    # (there a node's requests are also what shows its neighbours what it holds)
    hint_settle=True,
    # ... as is a hint from a frame we could not place, once that frame was stored (what
    # it follows came, mostly pushed), and while airtime is scarce our relays that nobody
    # relayed on bring no WANT (in a dense mesh the neighbours mostly heard copies enough
    # and kept quiet). city-100 after 24 h, both together (seeds 1-4): within 900 s
    # 97.7 / 97.6 / 98.7 / 98.0 % of pairs instead of 96.9 / 96.8 / 97.7 / 97.2 %, p95
    # spread 8,764 / 5,450 / 5,721 / 5,536 s instead of 9,331 / 6,500 / 5,880 / 6,630 s,
    # 60.3-61.1 ks of airtime instead of 71.5-71.8 ks; WANT rounds after such hints were
    # 8,000 of the 20,000 WANTs in the first 6 h; the small meshes are not scarce: as before
    no_echo_scarce=False,
    # answers spread out, so that neighbours of an asker that cannot hear each other do
    # not answer it in overlapping bursts: city-100 after 24 h 98.2 / 98.1 % of pairs
    # (seeds 1, 2) instead of 96.2 / 96.5 %, answers colliding at their asker 505 instead
    # of 1,896 times in hours 3-6; answer_window 4 -> 24 alone: line-5 converged at 257 s
    # instead of 411 s, islands-ip at 1,291 s instead of 1,638 s; 96 or 300 airtimes
    # while scarce did less (97.5, 97.8 %), 96 everywhere made islands-ip slower (1,938 s)
    answer_window=24.0,
    answer_window_scarce=192.0,
)

# For links with no airtime to save (WebSocket, UDP on a LAN): the same protocol with
# short GOSET rounds, larger help/ask budgets and many packets per request, paced by the
# round trip rather than by a radio's duty cycle.
IP = replace(
    DEFAULT,
    name="ip",
    goset_interval_min=0.5,
    goset_interval_max=30.0,
    help_budget=16,
    ask_budget=4,
    pending_max=32,
    credit=100,
    adaptive_credit=True,
    chnk_per_feed=20,
    rtt_initial=0.25,
    rtt_max=5.0,
    rtt_min=0.005,
    suppress_overheard=False,
    request_after_answers=True,
    # no pushing, novelties one per round, a new key restarts Trickle
    goset_respond_holdoff=120.0,
    goset_probation=900.0,  # over IP a feed's entries follow its key within seconds
    push=False,
    hint_unmatched=False,
    # a differing claim restarts Trickle, as a new key does: without it (the radio
    # preset's quiet GOSET) two gateways took 236 s of rounds to agree on 50 keys
    # instead of 9 s (tests/replication/test_ip_goset.py)
    goset_reset_on_add=True,
    goset_reset_on_claim=True,
    novelties=True,
)

PRESETS: dict[str, Policy] = {p.name: p for p in (REFERENCE, DEFAULT, IP)}


def preset(name: str) -> Policy:
    """The named preset; KeyError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(PRESETS))}") from None


def policy_from_mapping(m: Mapping[str, Any]) -> Policy:
    """A policy from a config-file table: ``preset`` (default ``"default"``) plus any
    fields to change; ``allow`` is a list of feed ids (``@...ed25519`` or hex) and sets
    ``replicate_all`` to false unless that is given too.

    Raises ValueError naming the offending key.
    """
    data = dict(m)
    base = data.pop("preset", "default")
    try:
        policy = preset(str(base))
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    known = {f.name: f for f in fields(Policy)}
    changes: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known or name == "name":
            raise ValueError(f"unknown policy setting {name!r}; known: "
                             f"{', '.join(sorted(n for n in known if n != 'name'))}")
        default = getattr(policy, name)
        if name in ("allow", "deny"):
            if not isinstance(value, list):
                raise ValueError(f"policy setting {name!r} must be a list of feed ids")
            try:
                changes[name] = frozenset(parse_id(str(v)) for v in value)
            except IdentityError as exc:
                raise ValueError(f"policy setting {name!r}: {exc}") from None
            if name == "allow":
                changes.setdefault("replicate_all", bool(data.get("replicate_all", False)))
        elif name == "offset_step":
            try:
                changes[name] = OffsetStep(value)
            except ValueError:
                raise ValueError("policy setting 'offset_step' must be 'one' or 'past'") from None
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError(f"policy setting {name!r} must be true or false")
            changes[name] = value
        elif isinstance(default, int | float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"policy setting {name!r} must be a number")
            if isinstance(default, int) and not isinstance(default, bool) and value != int(value):
                raise ValueError(f"policy setting {name!r} must be a whole number")
            changes[name] = type(default)(value)
    return policy.with_(name=f"{policy.name}+custom" if changes else policy.name, **changes)
