"""Names of the background tasks the services queue (`workers.tasks` binds them to functions),
and how work for something already committed is queued.
"""

from __future__ import annotations

import logging
from typing import Any

from domain.errors import Unavailable
from domain.ports import TaskQueue

log = logging.getLogger(__name__)

SUBMIT_WORKLOAD = "submit_workload"
CANCEL_WORKLOAD = "cancel_workload"
SET_WORKLOAD_PRIORITY = "set_workload_priority"
CONNECT_CLUSTER = "connect_cluster"
SYNC_CLUSTERS = "sync_clusters"
RECONCILE_QUOTAS = "reconcile_quotas"


async def enqueue_after_commit(tasks: TaskQueue, task: str, *, key: str, **kwargs: Any) -> bool:
    """Queue work that follows a committed change. If the queue does not answer, the commit
    stands and the caller is answered: every such task has a safety net that queues it again
    (the supervisor re-queues overdue submissions and registrations, the reconciler takes back
    what a final job left on its cluster, the periodic sync puts quotas back), so this logs and
    returns False."""
    try:
        return await tasks.enqueue(task, key=key, **kwargs)
    except Unavailable as exc:
        log.warning("not queued %s (%s): it will be queued again", key, exc)
        return False
