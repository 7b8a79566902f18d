"""The Python Agent SDK on the same mock and CLI, driven turn by turn by the Rust bench so the
runs interleave.

Usage: python sdk_query.py <cli path> <mock url> <home dir>
Reads commands on stdin, one a line, and answers each with two numbers: milliseconds to the
turn's ResultMessage (the answer), and to the end of the turn's iteration (the CLI closed, for
query()):
  cold   one query() (a new CLI for one turn, as query() always does)
  warm   one turn on a ClaudeSDKClient kept open (its CLI stays up between turns)
  quit   close the client and exit
"""
import asyncio
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, query

cli, url, home = sys.argv[1], sys.argv[2], sys.argv[3]
ENV = {
    "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_MAX_RETRIES": "0", "CLAUDE_CONFIG_DIR": home, "HOME": home, "TMPDIR": home,
}


def options():
    return ClaudeAgentOptions(cli_path=cli, env=ENV, model="claude-bench", include_partial_messages=True)


async def main():
    client = ClaudeSDKClient(options=options())
    await client.connect()
    loop = asyncio.get_running_loop()
    while True:
        command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if command in ("", "quit"):
            break
        start = time.perf_counter()
        answer = None
        if command == "cold":
            messages = query(prompt="Say hello.", options=options())
        elif command == "warm":
            await client.query("Say hello.")
            messages = client.receive_response()
        else:
            raise SystemExit("unknown command: " + command)
        async for message in messages:
            if isinstance(message, ResultMessage):
                answer = time.perf_counter()
        end = time.perf_counter()
        print("%.3f %.3f" % (((answer or end) - start) * 1000, (end - start) * 1000), flush=True)
    await client.disconnect()


asyncio.run(main())
