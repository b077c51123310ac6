"""Rate limits: token buckets in this process (embedded) or in Redis (shared by every process)."""
