"""Tests may reach 127.0.0.0/8, ::1, 'localhost' and Unix sockets; any other connect is refused.

A refused connect raises `NetworkBlockedError` and is also recorded, because code under test may
catch the error (an HTTP client turns it into its own connection error): the conftest fails the
test at teardown while a violation is recorded. A test that checks the guard itself calls
`acknowledge()` to take the violations it caused.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

import pytest

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class NetworkBlockedError(RuntimeError):
    pass


def is_loopback_host(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return False  # any other host name would need DNS and the network
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


class NetworkGuard:
    def __init__(self) -> None:
        self._violations: list[str] = []
        self._lock = threading.Lock()

    @property
    def violations(self) -> list[str]:
        with self._lock:
            return list(self._violations)

    def acknowledge(self) -> list[str]:
        """Take (and clear) the recorded violations."""
        with self._lock:
            taken, self._violations = self._violations, []
        return taken

    def check(self, family: int | None, address: Any) -> None:
        if family == getattr(socket, "AF_UNIX", object()) or isinstance(address, (str, bytes)):
            return
        host = address[0] if isinstance(address, tuple) and address else address
        if is_loopback_host(host):
            return
        message = (
            f"network guard: a test tried to connect to {address!r}; tests may only reach "
            "127.0.0.0/8, ::1, localhost or Unix sockets (use tests/fakes/openai_server.py)"
        )
        with self._lock:
            self._violations.append(message)
        raise NetworkBlockedError(message)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        guard = self
        original_connect = socket.socket.connect
        original_connect_ex = socket.socket.connect_ex
        original_create_connection = socket.create_connection

        def connect(sock: socket.socket, address: Any) -> None:
            guard.check(sock.family, address)
            return original_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check(sock.family, address)
            return original_connect_ex(sock, address)

        def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            guard.check(None, address)
            return original_create_connection(address, *args, **kwargs)

        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
        monkeypatch.setattr(socket, "create_connection", create_connection)
