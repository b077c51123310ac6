"""The budcluster core: GPU jobs on clusters, their lifecycle, admission and scheduling rules.

Pure Python: nothing in here performs I/O or imports a framework. The outside world is reached
only through the ports in `domain.ports`, which the adapters implement and the composition root
(`budcluster.bootstrap`) wires in.
"""
