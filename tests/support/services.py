"""Does a PostgreSQL and a Redis answer at these URLs? Prints `postgres=ok|down redis=ok|down`."""

from __future__ import annotations

import asyncio
import sys


async def _postgres(url: str) -> bool:
    import asyncpg

    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    try:
        conn = await asyncio.wait_for(asyncpg.connect(dsn), 3)
    except Exception:
        return False
    await conn.close()
    return True


async def _redis(url: str) -> bool:
    from redis.asyncio import Redis

    client = Redis.from_url(url, socket_connect_timeout=3)
    try:
        return bool(await asyncio.wait_for(client.ping(), 3))
    except Exception:
        return False
    finally:
        await client.aclose()


async def main(database_url: str, redis_url: str) -> None:
    pg, rd = await asyncio.gather(_postgres(database_url), _redis(redis_url))
    print(f"postgres={'ok' if pg else 'down'} redis={'ok' if rd else 'down'}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
