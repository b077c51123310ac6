"""What a job is expected to cost: GPU-hours at the cluster's hourly price per GPU type.

Prices come from the cluster's settings (`gpu_hourly_prices`), falling back to list prices of
common cloud GPUs; CPU-only work is priced per core-hour. The estimate is duration times price,
so a job with no expected end (a service) has no estimated cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

from domain.model.job import Resources

LIST_PRICES: Mapping[str, Decimal] = {
    "nvidia-h100-sxm": Decimal("4.00"),
    "nvidia-h100": Decimal("4.00"),
    "nvidia-a100-80gb": Decimal("2.50"),
    "nvidia-a100-40gb": Decimal("1.80"),
    "nvidia-l40s": Decimal("1.50"),
    "nvidia-a10g": Decimal("1.00"),
    "nvidia-tesla-t4": Decimal("0.35"),
    "amd-mi300x": Decimal("3.50"),
}
UNKNOWN_GPU_HOURLY = Decimal("2.00")
CPU_CORE_HOURLY = Decimal("0.04")
CENT = Decimal("0.01")


def hourly_price(resources: Resources, prices: Mapping[str, object] | None = None) -> Decimal:
    table = {**LIST_PRICES, **{k: Decimal(str(v)) for k, v in (prices or {}).items()}}
    if resources.total_gpus and resources.gpu_type:  # any pod set's GPUs (a job's are one type)
        per_gpu = table.get(resources.gpu_type, UNKNOWN_GPU_HOURLY)
        return per_gpu * resources.total_gpus
    return CPU_CORE_HOURLY * Decimal(str(resources.total_cpu_cores))


def estimate_cost(
    resources: Resources, seconds: float | None, prices: Mapping[str, object] | None = None
) -> Decimal | None:
    if seconds is None:
        return None
    hours = Decimal(str(seconds)) / Decimal(3600)
    return (hourly_price(resources, prices) * hours).quantize(CENT, rounding=ROUND_HALF_UP)
