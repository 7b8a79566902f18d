"""Drive the orchestrator's MCP tools with the Python MCP SDK (mcp<2) over streamable HTTP, as a
parent agent would (progress notifications through progress_callback included), and print one
JSON object of what came back for the Rust trial (tests/peers/python.rs) to check.

Environment: URL (the MCP endpoint), TOKEN (the bearer token).
"""

import asyncio
import json
import os
import sys
import time
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

URL = os.environ["URL"]
TOKEN = os.environ["TOKEN"]
ENDED = ("completed", "failed", "cancelled")


@asynccontextmanager
async def connect(caller=None):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if caller:
        headers["X-Agent-Session-Name"] = caller
    async with streamablehttp_client(URL, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session, name, arguments=None):
    """A tool call's text and error flag."""
    result = await session.call_tool(name, arguments or {})
    text = "".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    return {"is_error": bool(result.isError), "text": text}


async def call_json(session, name, arguments):
    answer = await call(session, name, dict(arguments, response_format="json"))
    if answer["is_error"]:
        raise RuntimeError(f"{name} failed: {answer['text']}")
    return json.loads(answer["text"])


async def call_with_progress(session, name, arguments):
    """A tool call's JSON answer with the progress notifications received while it ran (each
    with how long before the answer it came), through the SDK's progress_callback."""
    seen = []

    async def on_progress(progress, total, message):
        seen.append({"progress": progress, "total": total, "message": message, "at": time.monotonic()})

    result = await session.call_tool(
        name, dict(arguments, response_format="json"), progress_callback=on_progress
    )
    answered = time.monotonic()
    text = "".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    for report in seen:
        report["before_answer"] = answered - report.pop("at")
    return {"is_error": bool(result.isError), "answer": json.loads(text), "progress": seen}


async def status(session, name, wait_seconds):
    return await call_json(
        session, "get_agent_session_status", {"session_name": name, "wait_seconds": wait_seconds}
    )


async def main():
    out = {}
    async with connect() as top:
        listed = await top.list_tools()
        out["tools"] = sorted(tool.name for tool in listed.tools)
        out["blueprints"] = await call_json(top, "list_agent_blueprints", {})
        out["blueprints_markdown"] = (await call(top, "list_agent_blueprints"))["text"]
        # The parent is a session here too, started in sync mode.
        out["parent_start"] = await call_json(
            top, "start_agent_session", {"session_name": "py-parent", "prompt": "Plan the work."}
        )

    async with connect("py-parent") as parent:
        out["child_start"] = await call_json(
            parent,
            "start_agent_session",
            {"session_name": "py-child", "prompt": "Do the work.", "async_mode": True, "callback": True},
        )
        # No polling: each status call waits for the next change.
        seen = []
        for _ in range(30):
            report = await status(parent, "py-child", 5)
            seen.append(report["job_status"])
            if report["job_status"] in ENDED:
                break
        out["child_statuses"] = seen
        out["child_status"] = report
        out["child_result"] = await call_json(parent, "get_agent_session_result", {"session_name": "py-child"})
        out["child_result_markdown"] = (
            await call(parent, "get_agent_session_result", {"session_name": "py-child"})
        )["text"]

        # The callback resumes py-parent with the child's result: wait for that run to end.
        first_job = out["parent_start"]["job_id"]
        deadline = time.monotonic() + 60
        while True:
            report = await status(parent, "py-parent", 5)
            if report["job_id"] != first_job and report["job_status"] in ENDED:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the callback never resumed py-parent: {report}")
            if report["job_id"] == first_job:
                # The resume is queued when the child's run has been stored; not yet there.
                await asyncio.sleep(0.05)
        out["parent_after_callback"] = report

        out["child_resume"] = await call_json(
            parent, "resume_agent_session", {"session_name": "py-child", "prompt": "Once more."}
        )
        # The transcript over MCP, one event a page, then as markdown.
        events, after = [], 0
        while True:
            page = await call_json(
                parent, "get_agent_session_events", {"session_name": "py-child", "after": after, "limit": 1}
            )
            events.extend(e["event"]["type"] for e in page["events"])
            if page["next_after"] is None:
                break
            after = page["next_after"]
        out["child_event_types"] = events
        out["child_events_markdown"] = (
            await call(parent, "get_agent_session_events", {"session_name": "py-child"})
        )["text"]
        # Nothing to cancel once settled: an error answer.
        out["cancel_settled"] = await call(parent, "cancel_agent_session", {"session_name": "py-child"})
        out["status_of_unknown"] = await status(parent, "py-nobody", 0)
        out["result_of_unknown"] = await call(parent, "get_agent_session_result", {"session_name": "py-nobody"})
        out["start_existing"] = await call(
            parent, "start_agent_session", {"session_name": "py-child", "prompt": "Again."}
        )
        out["start_bad_name"] = await call(
            parent, "start_agent_session", {"session_name": "no spaces allowed", "prompt": "Hi."}
        )
        out["resume_missing"] = await call(
            parent, "resume_agent_session", {"session_name": "py-nobody", "prompt": "Hi."}
        )
        # Progress: a sync start of a child that naps in bash tells its activity while it runs.
        out["napper_start"] = await call_with_progress(
            parent,
            "start_agent_session",
            {"session_name": "py-napper", "prompt": "Nap.", "agent_blueprint_name": "napper"},
        )
        # A status wait tells it too; then the run is cancelled mid-nap.
        await call_json(
            parent,
            "start_agent_session",
            {"session_name": "py-sleeper", "prompt": "Sleep.", "agent_blueprint_name": "sleeper", "async_mode": True},
        )
        out["sleeper_status"] = await call_with_progress(
            parent, "get_agent_session_status", {"session_name": "py-sleeper", "wait_seconds": 5}
        )
        out["sleeper_cancel"] = await call_json(parent, "cancel_agent_session", {"session_name": "py-sleeper"})
        out["sleeper_result"] = await call(parent, "get_agent_session_result", {"session_name": "py-sleeper"})
        out["sessions"] = await call_json(parent, "list_agent_sessions", {})
        out["sessions_markdown"] = (await call(parent, "list_agent_sessions"))["text"]
        out["deleted"] = await call(parent, "delete_all_agent_sessions")
        out["sessions_after_delete"] = await call_json(parent, "list_agent_sessions", {})
    print(json.dumps(out))


def flatten(error):
    inner = getattr(error, "exceptions", None)
    if inner:
        return " | ".join(flatten(e) for e in inner)
    return f"{type(error).__name__}: {error}"


try:
    asyncio.run(asyncio.wait_for(main(), 120))
except BaseException as error:  # noqa: BLE001 - report anything, exit non-zero
    print("ERROR", flatten(error))
    sys.exit(1)
