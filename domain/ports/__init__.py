"""The core's only doors to the outside world, one module per family of ports.

Each port is a small Protocol. Adapters implement them (SQLAlchemy, Redis, arq, the simulated or
Kubernetes cluster); tests use fakes that satisfy the same Protocols. The composition root
(`budcluster.bootstrap`) chooses which adapter stands behind each port for a given way of running.
A port is imported from its own module; this package re-exports nothing:

- `unit_of_work`: one transaction, and whose data it may see (`TenantScope`);
- `repositories`: what a unit of work reads and writes (jobs, clusters, quotas, reservations,
  tokens, deployments, benchmarks, the audit trail);
- `events`: the committed event history, its announcement to every process, its fan-out;
- `tasks`: background tasks; `leases`: one process per cluster's loop;
- `gateways`: the workloads handed to a cluster and what the cluster reports about them;
- `cluster_api`: a real cluster's connection (nodes, health, the quota model) and its kubeconfig;
- `helm`: Helm releases; `serving`: a deployment's endpoint and a benchmark's load;
- `secrets`, `outbound` (which URLs may be reached), `clock`, `compute`, `limits` (rate buckets).
"""
