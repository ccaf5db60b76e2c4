"""Scenario files: the shipped ones load; mistakes name the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_sim.links import LinkKind
from firmware_sim.scenario import ScenarioError, load_scenario, parse_scenario, shipped_scenarios

GOOD = """\
name = "tiny"
duration = "10m"

[radio]
profile = "EU868.a"

[[nodes]]
layout = "line"
count = 3
spacing = 150

[[feeds]]
authors = ["n0"]
entries = 2
interval = 30
"""


def error(text: str, tmp_path: Path) -> ScenarioError:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return info.value


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_shipped_scenarios_load() -> None:
    names = list(shipped_scenarios())
    for required in ("line-5", "grid-25", "random-50", "city-100", "islands-ip",
                     "isp-islands"):
        assert required in names
    for name in names:
        s = load_scenario(name)
        assert s.name == name and s.nodes and (s.feeds or s.isp) and s.duration > 0
    city = load_scenario("city-100")
    assert len(city.nodes) == 100 and city.duration == 24 * 3600
    assert all(f.interval == 3600 and len(f.authors) == 100 for f in city.feeds)
    islands = load_scenario("islands-ip")
    assert [(link.kind, link.a, link.b) for link in islands.links] == [(LinkKind.IP, "a4", "b4")]
    assert ("phone-a", "a0") in islands.ble_links() or ("a0", "phone-a") in islands.ble_links()


def test_a_good_file_parses_with_its_defaults(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(GOOD)
    s = load_scenario(tmp_path / "tiny.toml")
    assert s.duration == 600 and s.seed == 1 and s.policy == "default"
    assert [n.name for n in s.nodes] == ["n0", "n1", "n2"]
    assert [(n.x, n.y) for n in s.nodes] == [(0, 0), (150, 0), (300, 0)]
    assert s.radio.params.sf == 7 and s.radio.duty_cycle == 0.01
    assert s.radio.path_loss.name == "log-distance"
    (feed,) = s.feeds
    assert (feed.authors, feed.entries, feed.interval, feed.start) == (("n0",), 2, 30.0, 0.0)


@pytest.mark.parametrize("old, new, key", [
    ('count = 3', 'count = 3\nspacng = 150', "nodes[0].spacng"),
    ('profile = "EU868.a"', 'profile = "EU868.a"\nsf_factor = 7', "radio.sf_factor"),
    ('interval = 30', 'interval = 30\nevery = 5', "feeds[0].every"),
    ('name = "tiny"', 'name = "tiny"\nnodez = 1', "nodez"),
])
def test_an_unknown_key_is_named_with_its_line(tmp_path: Path, old: str, new: str,
                                               key: str) -> None:
    text = GOOD.replace(old, new)
    exc = error(text, tmp_path)
    bad = key.rsplit(".", 1)[-1]
    assert exc.key == key and exc.line == line_of(text, f"{bad} =")
    assert str(exc).startswith(f"{tmp_path / 'bad.toml'}:{exc.line}: {key}: unknown key")


@pytest.mark.parametrize("setting, key, words", [
    ("sf = 13", "radio.sf", "spreading factor 13 is impossible"),
    ("sf = 6", "radio.sf", "spreading factor 6"),
    ("bandwidth = 200000", "radio.bandwidth", "200000 Hz is not a LoRa bandwidth"),
    ("cr = 9", "radio.cr", "must be in 5..8"),
    ("tx_power = 30", "radio.tx_power", "must be in -9..22"),
    ("duty_cycle = 1.5", "radio.duty_cycle", "must be in 0.0..1.0"),
    ("path_loss = \"moon\"", "radio.path_loss", "unknown value 'moon'"),
])
def test_impossible_radio_settings_are_refused(tmp_path: Path, setting: str, key: str,
                                               words: str) -> None:
    text = GOOD.replace('profile = "EU868.a"', f'profile = "EU868.a"\n{setting}')
    exc = error(text, tmp_path)
    assert exc.key == key and exc.line == line_of(text, setting.split(" =")[0] + " =")
    assert words in str(exc)


def test_an_unknown_profile_lists_the_known_ones(tmp_path: Path) -> None:
    text = GOOD.replace('"EU868.a"', '"EU868.z"')
    exc = error(text, tmp_path)
    assert exc.key == "radio.profile" and exc.line == line_of(text, "profile =")
    assert "EU868.z" in str(exc) and "EU868.b" in str(exc)


def test_a_frame_that_never_fits_the_duty_cycle_is_refused(tmp_path: Path) -> None:
    # SF12/125 kHz: a 124-byte frame is 4.76 s on air; 1 % of 60 s is 0.6 s
    text = GOOD.replace('profile = "EU868.a"', 'profile = "EU868.a"\nsf = 12\nduty_window = 60')
    exc = error(text, tmp_path)
    assert exc.key == "radio.duty_window" and "nothing could ever be sent" in str(exc)


def test_a_line_too_sparse_for_lora_names_the_spacing(tmp_path: Path) -> None:
    text = GOOD.replace("spacing = 150", "spacing = 900")
    exc = error(text, tmp_path)
    assert exc.key == "nodes[0].spacing" and exc.line == line_of(text, "spacing =")
    assert "cannot reach the rest of the mesh" in str(exc) and "900 m away" in str(exc)


def test_a_lone_explicit_node_is_named_with_its_own_line(tmp_path: Path) -> None:
    text = GOOD + """
[[nodes]]
layout = "explicit"
points = [
    { name = "near", x = 0, y = 100 },
    { name = "hermit", x = 3000, y = 3000 },
]
"""
    exc = error(text, tmp_path)
    assert exc.key == "nodes[1].points" and exc.line == line_of(text, '"hermit"')
    assert "node hermit at (3000, 3000) m cannot reach" in str(exc)


def test_two_islands_need_a_link_and_are_fine_with_one(tmp_path: Path) -> None:
    island_b = """
[[nodes]]
layout = "line"
prefix = "m"
count = 2
spacing = 150
origin = [8000, 0]
"""
    exc = error(GOOD + island_b, tmp_path)
    assert exc.key == "nodes[1].spacing" and "node m0" in str(exc)
    linked = GOOD + island_b + '\n[[links]]\nkind = "ip"\na = "n2"\nb = "m0"\n'
    s = parse_scenario(linked, "linked.toml")
    assert [(link.a, link.b, link.latency) for link in s.links] == [("n2", "m0", 0.05)]


@pytest.mark.parametrize("old, new, key, words", [
    ('authors = ["n0"]', 'authors = ["n9"]', "feeds[0].authors", "unknown node 'n9'"),
    ('duration = "10m"', 'duration = "ten minutes"', "duration", "must be seconds"),
    ('duration = "10m"', 'duration = 0', "duration", "greater than 0"),
    ('count = 3', 'count = "3"', "nodes[0].count", "must be a whole number"),
    ('layout = "line"', 'layout = "ring"', "nodes[0].layout", "unknown value 'ring'"),
    ('layout = "line"', 'layout = "grid"', "nodes[0].count", "unknown key"),
    ('interval = 30', 'interval = 30\nstart = "1h"', "feeds[0].start", "not before the end"),
])
def test_other_mistakes(tmp_path: Path, old: str, new: str, key: str, words: str) -> None:
    exc = error(GOOD.replace(old, new), tmp_path)
    assert exc.key == key and words in str(exc)


def test_syntax_errors_and_missing_files(tmp_path: Path) -> None:
    exc = error(GOOD.replace("count = 3", "count = = 3"), tmp_path)
    assert exc.key == "syntax" and exc.line == line_of(GOOD, "count = 3")
    with pytest.raises(ScenarioError, match="shipped: city-100"):
        load_scenario("no-such-scenario")


ISP = GOOD + """
[isp]
node = "n1"
clients = ["n0", "n2"]
farewell = { client = "n2", at = "8m" }

[[chats]]
from = "n0"
to = "n2"
messages = 5
interval = "30s"
"""


def test_an_isp_table_with_chats_parses(tmp_path: Path) -> None:
    path = tmp_path / "isp.toml"
    path.write_text(ISP)
    s = load_scenario(path)
    assert s.isp is not None
    assert (s.isp.node, s.isp.clients, s.isp.feed_entries, s.isp.max_unfinished) == (
        "n1", ("n0", "n2"), 50, 3)
    assert (s.isp.farewell_client, s.isp.farewell_at) == ("n2", 480.0)
    chat = s.isp.chats[0]
    assert (chat.src, chat.dst, chat.messages, chat.interval, chat.size) == (
        "n0", "n2", 5, 30.0, 40)


@pytest.mark.parametrize("old,new,key,words", [
    ('clients = ["n0", "n2"]', 'clients = ["n0", "n9"]', "clients", "'n9'"),
    ('clients = ["n0", "n2"]', 'clients = ["n1", "n2"]', "clients", "other than the ISP"),
    ('to = "n2"', 'to = "n0"', "to", "two different"),
    ('client = "n2"', 'client = "n1"', "client", "not one of the ISP's clients"),
    ('at = "8m"', 'at = "1h"', "at", "not before the end"),
])
def test_isp_mistakes_are_named(tmp_path: Path, old: str, new: str, key: str,
                                words: str) -> None:
    exc = error(ISP.replace(old, new), tmp_path)
    assert key in str(exc) and words in str(exc)


def test_chats_without_an_isp_are_refused(tmp_path: Path) -> None:
    text = ISP.replace('[isp]\nnode = "n1"\nclients = ["n0", "n2"]\n'
                       'farewell = { client = "n2", at = "8m" }\n', "")
    exc = error(text, tmp_path)
    assert "chats" in str(exc) and "[isp]" in str(exc)
