"""The Python `openai` asyncio client doing the bench's work against the same server.

Run by `cargo bench -p cfeval-model --bench throughput`; prints one JSON line.
Usage: openai_client.py --base-url URL --requests N --concurrency C [--model M]
"""

import argparse
import asyncio
import json
import time

import openai
from openai import AsyncOpenAI

try:  # openai >= 3 is built on httpx2; older releases on httpx
    import httpx2 as httpx
except ImportError:
    import httpx

http_client_class = getattr(openai, "DefaultAsyncHttpx2Client", None) or getattr(
    openai, "DefaultAsyncHttpxClient"
)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--model", default="bench-model")
    args = parser.parse_args()

    # Give the Python client as many pooled connections as calls in flight.
    limits = httpx.Limits(
        max_connections=args.concurrency, max_keepalive_connections=args.concurrency
    )
    client = AsyncOpenAI(
        base_url=args.base_url,
        api_key="bench-key",
        max_retries=0,
        timeout=60.0,
        http_client=http_client_class(limits=limits, timeout=60.0),
    )
    semaphore = asyncio.Semaphore(args.concurrency)
    errors = 0

    async def one(index: int) -> None:
        nonlocal errors
        async with semaphore:
            try:
                response = await client.chat.completions.create(
                    model=args.model,
                    messages=[{"role": "user", "content": f"python case {index}"}],
                    temperature=0.0,
                    seed=1,
                )
                if not response.choices[0].message.content:
                    errors += 1
            except Exception:  # counted, not raised: the bench reports errors
                errors += 1

    # Warm-up: open the connections, untimed.
    await asyncio.gather(*(one(-1 - i) for i in range(args.concurrency)))
    errors = 0
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(args.requests)))
    seconds = time.perf_counter() - start
    await client.close()
    print(
        json.dumps(
            {
                "requests": args.requests,
                "seconds": seconds,
                "requests_per_second": args.requests / seconds,
                "errors": errors,
                "openai_version": openai.__version__,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
