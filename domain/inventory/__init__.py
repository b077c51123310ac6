"""GPU types as the domain names them, and the node label a GPU type's flavor selects.

What a real cluster's Node objects say (Node Feature Discovery and GPU Feature Discovery labels,
quantities, conditions) is read in adapters/kubernetes/inventory; the domain keeps only the
vocabulary the simulated cluster and the quota rules share.
"""

from domain.inventory.flavor_labels import product_selector
from domain.inventory.gpu_types import normalize_gpu_type

__all__ = ["normalize_gpu_type", "product_selector"]
