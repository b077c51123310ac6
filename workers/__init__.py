"""Background work: the task functions both task runners execute, and the arq worker settings."""
