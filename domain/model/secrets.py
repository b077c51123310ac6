"""Sealed secrets: what is stored instead of a kubeconfig (or any other secret).

An envelope: the secret encrypted with a fresh data key (AES-256-GCM), and that data key
encrypted (wrapped) with the keyring's active RSA key (RSA-OAEP, SHA-256). It records which key
wrapped it and the envelope format's version, and it is bound to its owner (for a kubeconfig, the
cluster's id) as associated data: opened for another owner, it fails.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

ALGORITHM = "RSA-OAEP-256+A256GCM"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Envelope:
    key_id: str
    """The keyring key that wrapped the data key."""
    key_version: int
    """That key's version in the keyring (rotation bumps it)."""
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes
    """The AES-GCM ciphertext with its 16-byte tag appended."""
    algorithm: str = ALGORITHM
    version: int = FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(
            {
                "v": self.version,
                "alg": self.algorithm,
                "kid": self.key_id,
                "kver": self.key_version,
                "wk": _b64(self.wrapped_key),
                "iv": _b64(self.nonce),
                "ct": _b64(self.ciphertext),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Envelope:
        """Raises ValueError for anything that is not an envelope of a known format."""
        try:
            data: Any = json.loads(text)
            if not isinstance(data, dict) or data.get("v") != FORMAT_VERSION:
                raise ValueError("not an envelope of a known format")
            return cls(
                key_id=str(data["kid"]),
                key_version=int(data["kver"]),
                wrapped_key=base64.b64decode(data["wk"], validate=True),
                nonce=base64.b64decode(data["iv"], validate=True),
                ciphertext=base64.b64decode(data["ct"], validate=True),
                algorithm=str(data["alg"]),
                version=int(data["v"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an envelope: {exc}") from None

    def __repr__(self) -> str:  # never print key material, even wrapped
        return f"Envelope(key_id={self.key_id!r}, key_version={self.key_version})"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
