"""Names of the background tasks the services queue; `workers.tasks` binds them to functions."""

SUBMIT_WORKLOAD = "submit_workload"
CANCEL_WORKLOAD = "cancel_workload"
SET_WORKLOAD_PRIORITY = "set_workload_priority"
CONNECT_CLUSTER = "connect_cluster"
SYNC_CLUSTERS = "sync_clusters"
RECONCILE_QUOTAS = "reconcile_quotas"
