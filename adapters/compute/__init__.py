"""CPU-heavy pure functions run off the event loop: in worker processes, or in threads."""
