"""The Relay connection for job listings."""

from __future__ import annotations

import strawberry

from schema.types.job import Job


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class JobEdge:
    cursor: str
    node: Job


@strawberry.type
class JobConnection:
    edges: list[JobEdge]
    page_info: PageInfo
