"""Fair shares of one API process (schema/fairness.py): a tenant's heavy work runs at most
`heavy_per_tenant` at once and the rest waits its turn, while other tenants' work goes in at
once; open subscriptions are counted per tenant and one over the cap is refused (typed), the
count going down as streams end; the cap wraps a subscription resolver whatever it yields.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

import pytest

from schema.fairness import TenantShares, capped
from schema.types.errors import UserInputError


async def test_a_tenants_heavy_work_waits_its_turn_and_others_go_in() -> None:
    shares = TenantShares(heavy_per_tenant=1, subscriptions_per_tenant=10)
    release = asyncio.Event()
    entered: list[str] = []

    async def heavy(key: str, name: str) -> None:
        async with shares.heavy(key):
            entered.append(name)
            await release.wait()

    tasks = [
        asyncio.create_task(heavy("tenant:b", "b1")),
        asyncio.create_task(heavy("tenant:b", "b2")),
        asyncio.create_task(heavy("tenant:a", "a1")),
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    assert entered == ["b1", "a1"]  # b2 waits for b1; a1 did not wait for either
    release.set()
    await asyncio.gather(*tasks)
    assert entered == ["b1", "a1", "b2"]
    assert shares._gates == {} and not shares._waiting  # nothing kept for idle tenants


async def test_subscriptions_over_the_cap_are_refused_and_counted_down() -> None:
    shares = TenantShares(heavy_per_tenant=1, subscriptions_per_tenant=2)
    with shares.subscription("tenant:b"), shares.subscription("tenant:b"):
        with pytest.raises(UserInputError) as refused, shares.subscription("tenant:b"):
            pass
        assert refused.value.extensions == {"code": "SUBSCRIPTION_LIMIT_EXCEEDED", "limit": 2}
        with shares.subscription("tenant:a"):  # another tenant's are its own
            assert shares.open_subscriptions("tenant:a") == 1
    assert shares.open_subscriptions("tenant:b") == 0
    with shares.subscription("tenant:b"):
        pass


async def test_a_capped_resolver_holds_its_slot_for_the_life_of_its_stream() -> None:
    shares = TenantShares(heavy_per_tenant=1, subscriptions_per_tenant=1)
    principal = SimpleNamespace(tenant_id="b")
    info: Any = SimpleNamespace(
        context=SimpleNamespace(services=SimpleNamespace(shares=shares), principal=principal)
    )

    async def resolver(info: Any, count: int) -> AsyncGenerator[int, None]:
        for n in range(count):
            yield n

    stream = capped(resolver)(info=info, count=3)
    assert await anext(stream) == 0
    assert shares.open_subscriptions("tenant:b") == 1
    with pytest.raises(UserInputError):
        await anext(capped(resolver)(info=info, count=1))
    assert [n async for n in stream] == [1, 2]
    assert shares.open_subscriptions("tenant:b") == 0
    closed_early = capped(resolver)(info=info, count=5)
    await anext(closed_early)
    await closed_early.aclose()
    assert shares.open_subscriptions("tenant:b") == 0
