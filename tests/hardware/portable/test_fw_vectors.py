"""The firmware against hardware/vectors/protocol-vectors.json (generated from the
gateway's KISS/CRC/airtime code, not from the firmware)."""

import struct

from hwsupport import Harness, frames_of, run_session, vectors
from tssbfw import kiss


def test_every_frame_is_kiss_of_cmd_and_payload() -> None:
    for f in vectors()["frames"]:
        body = bytes((f["cmd"],)) + bytes.fromhex(f["payload_hex"])
        assert kiss.encode(body).hex() == f["kiss_hex"], f["name"]
        assert kiss.Decoder().feed(bytes.fromhex(f["kiss_hex"])) == [body], f["name"]


def test_host_frames_get_the_vector_answers() -> None:
    """Each *_query / *_set / *_request frame, sent to a fresh dongle, gets its answer."""
    pairs = [
        ("detect_request", "detect_answer", "heltec_v3"),
        ("fw_version_query", "fw_version_answer", "heltec_v3"),
        ("board_query", "board_answer_heltec_v3", "heltec_v3"),
        ("board_query", "board_answer_tbeam_sx1276", "tbeam_sx1276"),
        ("ready_query", "ready_answer", "heltec_v3"),
        ("duty_limit_query", "duty_limit_answer", "heltec_v3"),
        ("duty_limit_set", "duty_limit_answer", "heltec_v3"),
        ("data_ble_to_dongle", "error_no_ble", "heltec_v3"),
    ]
    names = [f["name"] for f in vectors()["frames"]]
    for name in names:
        if name.endswith("_set") and name[:-4] + "_answer" in names:
            pairs.append((name, name[:-4] + "_answer", "heltec_v3"))
    byname = {}
    for f in vectors()["frames"]:
        byname[f["name"]] = f
    for ask, answer, board in pairs:
        h = Harness(board)
        h.host(bytes.fromhex(byname[ask]["kiss_hex"]))
        want = bytes.fromhex(byname[answer]["kiss_hex"])
        if byname[ask]["meaning"].get("command") == "RADIO_STATE":
            want += bytes.fromhex(byname["ready_answer"]["kiss_hex"])
        assert h.take() == want, ask


def test_queries_after_set_read_back() -> None:
    byname = {}
    for f in vectors()["frames"]:
        byname[f["name"]] = f
    for name in byname:
        if not name.endswith("_set") or name[:-4] + "_query" not in byname:
            continue
        h = Harness("heltec_v3")
        h.host(bytes.fromhex(byname[name]["kiss_hex"]))
        h.take()
        h.host(bytes.fromhex(byname[name[:-4] + "_query"]["kiss_hex"]))
        assert h.take().hex() == byname[name[:-4] + "_answer"]["kiss_hex"], name


def test_stats_layout() -> None:
    h = Harness("heltec_v3")
    h.now = 654321
    h.host(bytes.fromhex("c023c0"))
    meaning = struct.unpack(">6I", frames_of(h.take())[0][1:])
    assert meaning == (0, 0, 0, 0, 0, 654321)


def test_sessions() -> None:
    sessions = vectors()["sessions"]
    assert len(sessions) >= 5
    for session in sessions:
        run_session(session)
