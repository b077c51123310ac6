"""Persisted documents: the GraphQL documents of frontend-contract/operations, by sha256.

The manifest (`persisted-documents.json`, hash -> document) is generated with the TypeScript
types by GraphQL Code Generator (`cd web && npm run codegen`) and shipped in this package; a
deployment may name its own with BUDCLUSTER_PERSISTED_DOCUMENTS_FILE.

A request names a document by hash in `extensions.persistedQuery.sha256Hash` (the form Apollo
clients send) or in `documentId` (`sha256:<hex>` or the bare hex, the GraphQL-over-HTTP draft).
- `off` (the default): a known hash runs the stored document; an unknown one runs the request's
  `query` if it has one; a request without a hash runs its `query`.
- `only` (BUDCLUSTER_PERSISTED_DOCUMENTS=only): the server runs stored documents and nothing
  else. A request with a `query` whose text is a stored document is accepted as that document;
  any other is refused with PERSISTED_DOCUMENT_REQUIRED, and an unknown hash with
  PERSISTED_DOCUMENT_NOT_FOUND. GraphiQL cannot be used in this mode (the IDE sends free text).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "persisted-documents.json"
_HASH = re.compile(r"(?:sha256:)?([0-9a-f]{64})")


@dataclass(frozen=True)
class Refused(Exception):
    code: str
    message: str


class InvalidManifest(ValueError):
    pass


class PersistedDocuments:
    def __init__(self, documents: Mapping[str, str], *, only: bool) -> None:
        self._documents = dict(documents)
        self._by_text = {text: digest for digest, text in self._documents.items()}
        self.only = only

    @classmethod
    def load(cls, path: Path | None = None, *, only: bool = False) -> PersistedDocuments:
        """Reads and checks a manifest: every key must be the sha256 of its document."""
        source = path or MANIFEST
        try:
            raw = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidManifest(f"persisted documents {source}: {exc}") from None
        if not isinstance(raw, dict):
            raise InvalidManifest(f"persisted documents {source}: not an object of hash: document")
        for digest, text in raw.items():
            if not isinstance(text, str) or hashlib.sha256(text.encode()).hexdigest() != digest:
                raise InvalidManifest(
                    f"persisted documents {source}: {digest[:16]}… is not its document's sha256"
                )
        return cls(raw, only=only)

    def __len__(self) -> int:
        return len(self._documents)

    def resolve(self, query: object, extensions: object, document_id: object = None) -> str | None:
        """The document to run for a request with these fields, or Refused."""
        digest = _requested_hash(extensions, document_id)
        if digest is not None:
            stored = self._documents.get(digest)
            if stored is not None:
                return stored
            if self.only or not isinstance(query, str):
                raise Refused(
                    "PERSISTED_DOCUMENT_NOT_FOUND",
                    "no persisted document has this hash: send one of the documents in "
                    "frontend-contract/operations",
                )
            return query
        if not self.only:
            return query if isinstance(query, str) else None
        if isinstance(query, str) and query in self._by_text:
            return query
        raise Refused(
            "PERSISTED_DOCUMENT_REQUIRED",
            "this server runs only persisted documents: send `extensions.persistedQuery."
            "sha256Hash` (or `documentId`) naming one of frontend-contract/operations",
        )


def _requested_hash(extensions: object, document_id: object) -> str | None:
    candidates: list[object] = [] if document_id is None else [document_id]
    if isinstance(extensions, dict) and extensions.get("persistedQuery") is not None:
        persisted = extensions["persistedQuery"]
        candidates.append(persisted.get("sha256Hash") if isinstance(persisted, dict) else None)
    for value in candidates:
        match = _HASH.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise Refused(
                "BAD_REQUEST",
                "a persisted document's hash (`extensions.persistedQuery.sha256Hash` or "
                "`documentId`) must be 64 lowercase hex digits (sha256)",
            )
        return match.group(1)
    return None


_OPERATION = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


def operation_names(path: Path | None = None) -> frozenset[str]:
    """The names of the operations in a manifest (the contract's by default)."""
    try:
        texts = json.loads((path or MANIFEST).read_text(encoding="utf-8")).values()
    except (OSError, ValueError, AttributeError):
        return frozenset()
    return frozenset(name for text in texts for name in _OPERATION.findall(str(text)))


def has_document_reference(payload: Mapping[str, object]) -> bool:
    """The request names a persisted document (so it may leave `query` out)."""
    extensions = payload.get("extensions")
    return payload.get("documentId") is not None or (
        isinstance(extensions, dict) and extensions.get("persistedQuery") is not None
    )
