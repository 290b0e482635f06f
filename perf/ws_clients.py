"""Hold N dashboard WebSocket clients on a live run and count what they receive.

Used for the "50 clients" figure in docs/PERFORMANCE.md. Needs the `websockets` package
(`pip install websockets`). Usage: python3 perf/ws_clients.py ws://127.0.0.1:PORT/ws 50 SECONDS
"""
import asyncio
import sys

import websockets


async def client(url: str, seconds: float, counts: list, index: int) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=seconds)
                counts[index] += 1
        except (asyncio.TimeoutError, websockets.ConnectionClosed):
            return


async def main() -> None:
    url, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    counts = [0] * n
    tasks = [asyncio.create_task(client(url, seconds, counts, i)) for i in range(n)]
    await asyncio.sleep(seconds)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"{n} clients, messages received: min {min(counts)}, max {max(counts)}, total {sum(counts)}")


asyncio.run(main())
