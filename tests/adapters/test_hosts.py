"""The ``Host`` check the playground and the ops listener share."""

from __future__ import annotations

from adapters.hosts import HostName, allowed_hosts, host_allowed, is_address, parse_host


def test_a_host_header_is_read_with_its_port() -> None:
    assert parse_host("Example.org:8080") == HostName("example.org", 8080)
    assert parse_host("[::1]:9108") == HostName("::1", 9108)
    assert parse_host("genbot") == HostName("genbot", None)
    for bad in ("", "a b", "x/y", "u@h", "h:port"):
        assert parse_host(bad) is None, bad


def test_loopback_names_and_the_given_ones_are_allowed_with_their_port() -> None:
    allowed = allowed_hosts(["genbot:9108", "Metrics.Internal", "not a host"])
    assert host_allowed("localhost:1", allowed) and host_allowed("[::1]", allowed)
    assert host_allowed("genbot:9108", allowed) and not host_allowed("genbot:80", allowed)
    assert host_allowed("metrics.internal:5", allowed)
    assert not host_allowed("evil.com", allowed) and not host_allowed(None, allowed)


def test_an_address_is_told_from_a_name() -> None:
    assert is_address(HostName("10.0.0.1", None)) and is_address(HostName("fd00::5", 1))
    assert not is_address(HostName("localhost", None))
