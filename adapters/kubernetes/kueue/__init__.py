"""Kueue's Kubernetes objects: rendered from the domain's values and read back (pure: no I/O).

`objects` renders the quota model (ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses, tenant Namespaces) and tells drift; `sync` reconciles it onto a cluster;
`jobs` renders a BATCH or TRAINING attempt as a batch/v1 Job and reads it and its Kueue Workload
back; `services` does the same for a SERVICE attempt (a Helm release's values, its pods);
`logs` reads the lines of an attempt's pods' logs; `visibility` reads Kueue's pending-workloads
view; `check` is the submission check that renders a spec the way the gateway will; `reading`
holds the helpers for API JSON.
"""
