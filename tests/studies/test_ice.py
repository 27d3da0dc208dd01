"""The ICE server setting (studies/ice.py): its two JSON forms, each bad entry refused in one
line that names it, shared TURN secrets named (environment or file) and never sent, and the
TURN REST credentials coturn checks (username "EXPIRY:WHO", HMAC-SHA1 of it, expiry)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from studies.ice import (
    ICE_SERVERS_ENV,
    ICE_SERVERS_FILE_ENV,
    NO_ICE_SERVERS,
    RELAY_ONLY_ENV,
    IceConfigError,
    ice_settings,
    parse_ice_settings,
    turn_name,
    turn_rest_credential,
)

SECRET = "s3cret-shared-with-coturn"
TURN = {"urls": ["turn:turn.example.org:3478?transport=udp", "turn:turn.example.org:3478?transport=tcp",
                 "turns:turn.example.org:5349"], "secret_env": "TURN_SECRET", "ttl_s": 600}


def _parse(data, environ=None):
    return parse_ice_settings(data, "test", {"TURN_SECRET": SECRET} if environ is None else environ)


def test_no_setting_means_no_servers():
    assert ice_settings({}) is NO_ICE_SERVERS
    assert NO_ICE_SERVERS.for_peer("p-1") == {"iceServers": [], "iceTransportPolicy": "all"}
    assert "no ICE servers" in NO_ICE_SERVERS.describe()


def test_the_list_and_the_object_forms_give_the_same_servers():
    listed = _parse([{"urls": "stun:turn.example.org:3478"}, TURN])
    wrapped = _parse({"iceServers": [{"urls": "stun:turn.example.org:3478"}, TURN], "iceTransportPolicy": "relay"})
    assert listed.servers == wrapped.servers and not listed.relay_only and wrapped.relay_only
    assert listed.servers[0].urls == ("stun:turn.example.org:3478",) and listed.servers[1].is_turn
    assert wrapped.describe() == ("ICE servers stun:turn.example.org:3478, turn:turn.example.org:3478, "
                                  "turn:turn.example.org:3478, turns:turn.example.org:5349 (browsers relay only)")


@pytest.mark.parametrize("data, words", [
    ({"iceServers": [], "extra": 1}, "unknown key(s) extra"),
    ({"iceTransportPolicy": "direct"}, "iceTransportPolicy must be 'all' or 'relay'"),
    ("stun:x", "must be a JSON list"),
    (["stun:x"], "ICE server #1 must be an object"),
    ([{"urls": []}], "ICE server #1: 'urls' must be a URL or a list"),
    ([{"urls": "stun:a"}, {"urls": "http://a"}], "ICE server #2: 'http://a' is not a stun:"),
    ([{"urls": "turn:[::1]:3478", "username": "u", "credential": "c"}],
     "ICE server #1: 'turn:[::1]:3478' is not SCHEME:HOST"),
    ([{"urls": "turn:a?transport=tls", "username": "u", "credential": "c"}], "is not SCHEME:HOST"),
    ([{"urls": "turn:a"}], "ICE server #1: a TURN server needs username and credential"),
    ([{"urls": "turn:a", "username": "u"}], "static credentials need both"),
    ([{"urls": "turn:a", "secret": "x"}], "unknown key(s) secret (a shared secret is named"),
    ([{"urls": "turn:a", "secret_env": "TURN_SECRET", "secret_file": "/x"}], "not both"),
    ([{"urls": "turn:a", "secret_env": "NOT_SET"}], "'NOT_SET' named by secret_env is not set"),
    ([{"urls": "turn:a", "secret_file": "/nonexistent/secret"}], "cannot read secret_file '/nonexistent/secret'"),
    ([{"urls": "turn:a", "secret_env": "TURN_SECRET", "ttl_s": 5}], "'ttl_s' must be whole seconds from 60"),
    ({"iceServers": [{"urls": "stun:a"}], "iceTransportPolicy": "relay"}, "relay only needs a TURN server"),
])
def test_a_bad_entry_is_refused_in_one_line_naming_it(data, words):
    with pytest.raises(IceConfigError) as refused:
        _parse(data)
    message = str(refused.value)
    assert words in message and message.startswith("test") and "\n" not in message, message


def test_the_environment_and_the_file(tmp_path):
    secret_file = tmp_path / "turn-secret"
    secret_file.write_text(SECRET + "\n")
    settings_file = tmp_path / "ice.json"
    settings_file.write_text(json.dumps([{"urls": "turn:127.0.0.1:3478", "secret_file": str(secret_file)}]))
    from_file = ice_settings({ICE_SERVERS_FILE_ENV: str(settings_file)})
    assert from_file.servers[0].secret == SECRET  # the file's line end is not part of it
    from_env = ice_settings({ICE_SERVERS_ENV: json.dumps([{"urls": "stun:127.0.0.1:3478"}])})
    assert from_env.servers[0].urls == ("stun:127.0.0.1:3478",)
    (tmp_path / "bad.json").write_text("[{")
    with pytest.raises(IceConfigError, match=r"ICE server file .*bad.json is not valid JSON"):
        ice_settings({ICE_SERVERS_FILE_ENV: str(tmp_path / "bad.json")})
    with pytest.raises(IceConfigError, match="cannot read the ICE server file"):
        ice_settings({ICE_SERVERS_FILE_ENV: str(tmp_path / "missing.json")})
    with pytest.raises(IceConfigError, match="no TURN server is configured"):
        ice_settings({RELAY_ONLY_ENV: "1"})
    with pytest.raises(IceConfigError, match="relay only needs a TURN server"):
        ice_settings({ICE_SERVERS_ENV: json.dumps([{"urls": "stun:a"}]), RELAY_ONLY_ENV: "1"})


def test_turn_rest_credentials_expire_and_carry_the_hmac_of_the_username():
    username, credential = turn_rest_credential(SECRET, "check-7", ttl_s=600, now=1_800_000_000.9)
    assert username == "1800000600:check-7"
    expected = base64.b64encode(hmac.new(SECRET.encode(), username.encode(), hashlib.sha1).digest()).decode()
    assert credential == expected
    # another secret, peer or time: another credential
    assert turn_rest_credential("other", "check-7", 600, 1_800_000_000)[1] != credential
    assert turn_rest_credential(SECRET, "check-8", 600, 1_800_000_000)[1] != credential
    assert turn_rest_credential(SECRET, "check-7", 60, 1_800_000_000)[0] == "1800000060:check-7"


def test_for_peer_mints_credentials_and_never_carries_the_secret():
    settings = _parse({"iceServers": [{"urls": "stun:turn.example.org"}, TURN,
                                      {"urls": "turn:static.example.org", "username": "u", "credential": "c"}],
                       "iceTransportPolicy": "relay"})
    peer = settings.for_peer("p-42", now=1_800_000_000)
    text = json.dumps(peer)
    assert SECRET not in text and "secret" not in text
    assert peer["iceTransportPolicy"] == "relay"
    assert peer["iceServers"][0] == {"urls": ["stun:turn.example.org"]}
    minted = peer["iceServers"][1]
    # the TURN server (and its log) sees a hash of the pseudonym, not the pseudonym
    assert minted["username"] == f"1800000600:{turn_name('p-42')}" and "p-42" not in text
    assert minted["credential"] == turn_rest_credential(SECRET, turn_name("p-42"), 600, 1_800_000_000)[1]
    assert peer["iceServers"][2] == {"urls": ["turn:static.example.org"], "username": "u", "credential": "c"}
    assert SECRET not in settings.describe() and "credential" not in settings.describe()


def test_aiortc_gets_the_same_servers_and_credentials():
    from aiortc import RTCPeerConnection

    settings = _parse([{"urls": "stun:127.0.0.1:3478"}, TURN])
    peer = settings.for_peer("p-1", now=1_800_000_000)
    configuration = settings.aiortc_configuration(peer)
    assert [s.urls for s in configuration.iceServers] == [e["urls"] for e in peer["iceServers"]]
    assert configuration.iceServers[1].username == peer["iceServers"][1]["username"]
    assert configuration.iceServers[1].credential == peer["iceServers"][1]["credential"]
    # aiortc accepts every URL the setting lets through (it parses them when the peer is made)
    for server in configuration.iceServers:
        for url in server.urls:
            from aiortc.rtcicetransport import parse_stun_turn_uri

            parse_stun_turn_uri(url)
    RTCPeerConnection(configuration)


def test_app_refuses_a_bad_ice_server_file_in_one_line(tmp_path, monkeypatch, capsys):
    import app

    monkeypatch.setenv(ICE_SERVERS_FILE_ENV, "")  # main() sets it: restored after the test
    bad = tmp_path / "ice.json"
    bad.write_text(json.dumps([{"urls": "turn:turn.example.org"}]))
    assert app.main(["--ice-servers", str(bad), "--port", "1"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: ICE server file ") and "a TURN server needs username and credential" in error
    assert app.main(["--ice-servers", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the ICE server file" in capsys.readouterr().err
