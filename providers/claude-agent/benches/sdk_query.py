"""The Python Agent SDK's query() on the same mock and CLI, timed like the Rust bench.

Usage: python sdk_query.py <cli path> <mock url> <home dir> <runs>
Prints one JSON line: {"one_turn_ms", "five_turn_ms", "warm_turn_ms", "five_turn_kept_alive_ms"}.
"""
import asyncio
import json
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, query

cli, url, home, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ENV = {
    "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_MAX_RETRIES": "0", "CLAUDE_CONFIG_DIR": home, "HOME": home, "TMPDIR": home,
}


async def turn(prompt, resume=None):
    options = ClaudeAgentOptions(cli_path=cli, env=ENV, model="claude-bench",
                                 include_partial_messages=True, resume=resume)
    session = None
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, ResultMessage):
            session = message.session_id
    return session


async def main():
    await turn("warm up")
    one, five = [], []
    for _ in range(runs):
        start = time.perf_counter()
        await turn("Say hello.")
        one.append((time.perf_counter() - start) * 1000)
    for _ in range(runs):
        start = time.perf_counter()
        session = await turn("turn 1")
        for i in range(2, 6):
            session = await turn(f"turn {i}", resume=session)
        five.append((time.perf_counter() - start) * 1000)
    # One kept-alive CLI for five turns (ClaudeSDKClient): warm turns 2-5.
    warm, five_client = [], []
    for _ in range(runs):
        options = ClaudeAgentOptions(cli_path=cli, env=ENV, model="claude-bench", include_partial_messages=True)
        start = time.perf_counter()
        async with ClaudeSDKClient(options=options) as client:
            for i in range(1, 6):
                turn_start = time.perf_counter()
                await client.query(f"turn {i}")
                async for message in client.receive_response():
                    pass
                if i > 1:
                    warm.append((time.perf_counter() - turn_start) * 1000)
        five_client.append((time.perf_counter() - start) * 1000)
    print(json.dumps({"one_turn_ms": one, "five_turn_ms": five, "warm_turn_ms": warm, "five_turn_kept_alive_ms": five_client}))


asyncio.run(main())
