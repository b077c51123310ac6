"""Token secrets are 256-bit random values, so a keyed fast hash is the right tool.

A password hash (bcrypt, scrypt) exists to slow down guessing of low-entropy secrets; our secrets
cannot be guessed, and every API request verifies one, so HMAC-SHA256 with a server-side pepper
is used: a stolen database alone does not let anyone check candidate tokens offline.
"""

from __future__ import annotations

import hashlib
import hmac


class HmacSecretHasher:
    def __init__(self, pepper: bytes) -> None:
        if len(pepper) < 16:
            raise ValueError("the token pepper must be at least 16 bytes")
        self._pepper = pepper

    def hash(self, secret: str) -> str:
        return "hmac-sha256$" + hmac.new(self._pepper, secret.encode(), hashlib.sha256).hexdigest()

    def verify(self, secret: str, hashed: str) -> bool:
        return hmac.compare_digest(self.hash(secret), hashed)
