"""Secrets kept in genbot's database are sealed: encrypted and authenticated with a key that is
not in the database, so that a copy of the database file or a backup gives no token away.

What is sealed: Slack installations' tokens (sealed by the Slack adapter's installation store)
and the jobs' webhook secrets (sealed by the job starter, opened by the starter and the
tracker). The storage layer only ever sees the sealed strings.

The key is ``[storage] secret_key`` (any string of 32 characters or more), else one derived
from ``[api] key``. ``[storage] secret_key_previous`` is still accepted for opening what the
previous key sealed, and so is the key derived from ``[api] key`` (what genbot sealed with
before ``secret_key`` was set); each such value is sealed again with the current key when it
is next read. Values stored before sealing existed (plain) are read as they are and sealed
when next written. See docs/operations.md, "Secrets at rest".

Each key string is turned into a Fernet key (AES-128-CBC with HMAC-SHA256, from the
``cryptography`` package) by HKDF-SHA256; sealed values are ``sealed:v1:`` and a Fernet token.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from bot.kernel.settings import ApiSettings, StorageSettings

SEALED_PREFIX = "sealed:v1:"
_INFO = b"genbot: secrets kept in the database, v1"


class SealError(ValueError):
    """A sealed value none of genbot's keys opens (the key was changed without keeping the
    old one as ``[storage] secret_key_previous``), or no key to seal with."""


@dataclass(frozen=True)
class Opened:
    """A stored value opened: the secret, and whether it should be stored again sealed with
    the current key (it was plain, or sealed with an older key)."""

    secret: str
    stale: bool


def fernet_key(key: str) -> bytes:
    """The Fernet key of the key string ``key``."""
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(key.encode())
    return base64.urlsafe_b64encode(derived)


def is_sealed(stored: str) -> bool:
    """Whether ``stored`` is a sealed value (else a plain one, stored before sealing)."""
    return stored.startswith(SEALED_PREFIX)


class Sealer:
    """Seals with the first of ``keys``, opens with any of them (the key strings, in order of
    preference; empty ones are skipped)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self._fernets = [Fernet(fernet_key(key)) for key in dict.fromkeys(k for k in keys if k)]

    @property
    def can_seal(self) -> bool:
        return bool(self._fernets)

    def require_key(self) -> None:
        """:class:`SealError` when there is no key to seal with."""
        if not self._fernets:
            raise SealError("no key to seal secrets with: set [storage] secret_key (or [api] key)")

    def seal(self, secret: str) -> str:
        """``secret`` sealed with the current key."""
        self.require_key()
        return SEALED_PREFIX + self._fernets[0].encrypt(secret.encode()).decode("ascii")

    def open(self, stored: str) -> Opened:
        """The secret of a stored value; :class:`SealError` when it is sealed with a key genbot
        does not have."""
        if not is_sealed(stored):
            return Opened(stored, stale=True)
        token = stored.removeprefix(SEALED_PREFIX).encode("ascii", errors="replace")
        for index, fernet in enumerate(self._fernets):
            try:
                secret = fernet.decrypt(token).decode()
            except InvalidToken:
                continue
            return Opened(secret, stale=index > 0)
        raise SealError(
            "a secret in the database was sealed with a key genbot does not have: set "
            "[storage] secret_key to the key it was sealed with, or keep that key as "
            "[storage] secret_key_previous (docs/operations.md, 'Secrets at rest')"
        )


def sealer_of(storage: StorageSettings, api: ApiSettings) -> Sealer:
    """The sealer of genbot's settings: sealing with ``[storage] secret_key``, else with the key
    derived from ``[api] key`` (the first of ``[[api.keys]]``); opening also with
    ``secret_key_previous`` and the one derived from that key."""
    secret_key = storage.secret_key.get_secret_value()
    api_key = api.first_key()
    return Sealer([secret_key or api_key, storage.secret_key_previous.get_secret_value(), api_key])
