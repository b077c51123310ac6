"""The assembled Schema: root Query, Mutation and Subscription bound to the resolvers."""

from __future__ import annotations

import logging

import strawberry
from graphql import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext
from strawberry.utils.logging import StrawberryLogger

from resolvers import clusters as cluster_resolvers
from resolvers import jobs as job_resolvers
from resolvers import subscriptions as subscription_resolvers
from schema.extensions import extensions, is_user_error
from schema.types.cluster import Cluster
from schema.types.connection import JobConnection
from schema.types.job import Job, JobEvent

log = logging.getLogger(__name__)


@strawberry.type
class Query:
    job: Job | None = strawberry.field(resolver=job_resolvers.job, description="A job you may see.")
    jobs: JobConnection = strawberry.field(
        resolver=job_resolvers.jobs, description="Your jobs, newest first (at most 100 per page)."
    )
    job_events: list[JobEvent] = strawberry.field(
        resolver=job_resolvers.job_events, description="A job's history, oldest first."
    )
    cluster: Cluster | None = strawberry.field(resolver=cluster_resolvers.cluster)
    clusters: list[Cluster] = strawberry.field(resolver=cluster_resolvers.clusters)


@strawberry.type
class Mutation:
    submit_job = strawberry.mutation(
        resolver=job_resolvers.submit_job,
        description="Submit a job to a cluster. With an idempotencyKey, a repeat returns the "
        "first job.",
    )
    cancel_job = strawberry.mutation(resolver=job_resolvers.cancel_job)
    retry_job = strawberry.mutation(
        resolver=job_resolvers.retry_job,
        description="Start the next attempt of a FAILED or PREEMPTED job, after backoff.",
    )
    update_job_priority = strawberry.mutation(resolver=job_resolvers.update_job_priority)


@strawberry.type
class Subscription:
    job_updates = strawberry.subscription(
        resolver=subscription_resolvers.job_updates,
        description="A snapshot of your jobs on a cluster, then every change in order. "
        "Reconnect with `since` (the last sequence you hold) to get exactly what you missed.",
    )


class Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Log server faults with their traceback; a user's mistakes are not server errors."""
        for error in errors:
            if is_user_error(error):
                log.debug("request error: %s", error.message)
            else:
                StrawberryLogger.error(error, execution_context)


schema = Schema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=extensions(),
    config=StrawberryConfig(auto_camel_case=True),
)


def sdl() -> str:
    """The schema as SDL, exactly as exported to frontend-contract/schema.graphql."""
    return schema.as_str() + "\n"
