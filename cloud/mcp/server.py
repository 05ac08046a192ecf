"""The MCP server: the loop's four tools with their contract definitions, list_hosts, run_task, get_run,
the host's context block as a resource, and a few prompts. Transport-neutral: stdio (`nexus mcp`) and
streamable HTTP (http.py) build the same server, differing only in how the user is known.
"""
from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.tools.base import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    Completion,
    CompletionArgument,
    ElicitRequest,
    ElicitRequestFormParams,
    ImageContent,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from cloud.context import fetch_context, render_context_block
from cloud.hostlink import WebSocketHostLink
from cloud.hosts.hello import Hello
from cloud.hosts.registry import host_tool_definitions
from cloud.mcp.apps import ReviewCard, listed_for, register_card, tool_meta, with_card
from cloud.mcp.calls import (
    KEYED_TOOLS,
    LOOP_TOOLS,
    Backend,
    BackendSource,
    Caller,
    CallOutcome,
    McpCalls,
    Ready,
    Refused,
)
from cloud.mcp.delegation import DelegatedRun, DelegatedRuns
from cloud.mcp.given_tool import GivenTool, given_tool
from cloud.mcp.logs import add_logging, log
from cloud.mcp.results import as_text, capped_copy, output_schema
from cloud.mcp.wording import (
    annotations,
    host_argument,
    key_argument,
    own_tool,
    package_version,
    prompt_text,
    prompts,
    say,
)
from cloud.vendors.base import ModelAdapter
from cloud.web.quotas import QuotaExceeded

ToolHandler = Callable[[dict[str, Any], Context], Awaitable[CallToolResult]]
DEFAULT_RUN_WAIT_S = 50.0  # under the 60 s many clients give a call; longer runs return a handle
PROGRESS_POLL_S = 0.2
REVIEW_KEY = "nexus_review"  # the review question's key in an input_required result (2026-07-28)
INPUT_REQUIRED_VERSION = "2026-07-28"  # from this protocol version on, a call asks by input_required results


def contract_tool(name: str, description: str, schema: dict[str, Any], handler: ToolHandler) -> GivenTool:
    return given_tool(name, description, schema, output_schema(name), handler, annotations(name), tool_meta(name))


def with_host(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    out.setdefault("properties", {})["host"] = {"type": "string", "minLength": 1, "description": host_argument()}
    return out


def with_key(schema: dict[str, Any]) -> dict[str, Any]:
    """The optional idempotency key of a call that changes the model (tools.json's idempotency_argument)."""
    out = copy.deepcopy(schema)
    out.setdefault("properties", {})["idempotency_key"] = {"type": "string", "minLength": 1, "maxLength": 200,
                                                           "description": key_argument()}
    return out


def can_elicit(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def asks_by_input_required(ctx: Context) -> bool:
    """Under 2026-07-28 a tool asks the client by returning an input_required result (the client answers
    and calls again); earlier versions send an elicitation request mid-call."""
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def review_request(summary: str) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=say("approval_elicit", report=summary),
                                                        requested_schema=render_elicitation_schema(ApprovalAnswer)))


def decision_of(action: str | None, content: dict[str, Any] | None, minutes: float) -> dict[str, Any]:
    """The person's answer to the review form, as a decision: only "keep" checked and accepted keeps."""
    if action == "accept":
        answer = ApprovalAnswer.model_validate(content or {})
        return {"decision": "keep" if answer.keep else "discard", "by": "mcp", "comment": answer.comment}
    if action == "decline":  # the person said no
        return {"decision": "discard", "by": "mcp", "comment": say("approval_declined")}
    if action == "cancel":  # the question was dismissed, nobody decided
        return {"decision": "discard", "by": "mcp", "undecided": True, "comment": say("approval_dismissed")}
    return {"decision": "discard", "by": "mcp", "undecided": True, "comment": say("approval_no_answer", minutes=minutes)}


def review_state(ctx: Context) -> dict[str, Any] | None:
    """The review this call answers (a retry after an input_required result), from its request state (sealed
    by the SDK: the client cannot forge it)."""
    raw = ctx.request_state
    if not raw:
        return None
    try:
        state = json.loads(raw)
    except ValueError:
        return None
    return state if isinstance(state, dict) and isinstance(state.get("review"), str) else None


def review_answer(ctx: Context) -> tuple[str | None, dict[str, Any] | None] | None:
    answer = (ctx.input_responses or {}).get(REVIEW_KEY)
    if answer is None:
        return None
    return getattr(answer, "action", None), getattr(answer, "content", None)


class ApprovalAnswer(BaseModel):
    """The Keep/Discard form. It defaults to discard: a change is kept only if the person says so."""
    keep: bool = Field(default=False, description="Keep the change (leave unchecked to discard it)")
    comment: str = Field(default="", description="Optional note for the agent")


def structured_result(structured: dict[str, Any], is_error: bool = False,
                      images: list[ImageContent] | None = None) -> CallToolResult:
    """The structured content, and its JSON as the text content: a client's model reads the same either way."""
    return CallToolResult(content=[TextContent(text=as_text(structured)), *(images or [])],
                          structured_content=structured, is_error=is_error)


def _next_to_act_on(items: Iterator[Any]) -> Any:
    """The call's next item that its MCP side acts on (its outcome, or a held change's review request), read
    in one hop to a worker thread rather than one per chunk: the chunks between are the chat page's."""
    while True:
        item = next(items)
        if isinstance(item, CallOutcome) or (
                item.type == "Metadata" and (item.metadata or {}).get("kind") == "approval_request"):
            return item


def error_result(text: str) -> CallToolResult:
    return structured_result({"ok": False, "error": text}, is_error=True)


def quota_text(exc: QuotaExceeded) -> str:
    return say("over_quota", quota=exc.quota, limit=exc.limit, retry_after_s=exc.retry_after_s)


def quota_result(exc: QuotaExceeded) -> CallToolResult:
    return structured_result({"ok": False, "error": quota_text(exc), "quota": exc.quota, "limit": exc.limit,
                              "retry_after_s": exc.retry_after_s}, is_error=True)


def offered_tools(host_app: str | None) -> tuple[dict[str, Any], ...]:
    """The canonical tool definitions for a server of one host application (`--ifc`): capture_view lists
    its views, which depend on the application only, so they are known before the host has connected."""
    if host_app is None:
        return host_tool_definitions(None)
    return host_tool_definitions(Hello(host_app=host_app, host_version="", runtime_version="", python_version="",
                                       document={}))


def client_info(ctx: Context) -> tuple[str, str]:
    """The client's own name and version, as it said in `initialize` (or, under 2026-07-28, in the request)."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = info.name if info is not None and info.name else "unknown"
    version = info.version if info is not None and info.version else ""
    return name[:100], version[:100]


def connection_of(ctx: Context) -> str:
    """The transport's session of a request: the HTTP `Mcp-Session-Id` the SDK issued for the connection,
    else the SDK's connection itself (one stdio process; under 2026-07-28 over HTTP, where no session
    exists, one request). Never the client's name: two connections of one client program are two sessions.
    The SDK's per-request session keeps its connection private; the connection's `state` is the SDK's own
    place for per-connection data."""
    connection = ctx.session._connection
    if connection.session_id:
        return "http:" + connection.session_id
    return connection.state.setdefault("nexus_connection", "conn:" + uuid.uuid4().hex)


class NexusServer(MCPServer):
    """The SDK's server, with a prompt request that names what is wrong with it answered as invalid params
    (-32602), as the spec says, instead of an internal error with a traceback on standard error; the review
    card's own tools are listed only to clients that render it (apps.py)."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        return listed_for(await super()._handle_list_tools(ctx, params), ctx.session.client_capabilities)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context | None = None) -> Any:
        known = {prompt.name: prompt for prompt in await self.list_prompts()}
        if name not in known:
            raise MCPError(INVALID_PARAMS, say("unknown_prompt", name=name, known=", ".join(sorted(known))))
        missing = [arg.name for arg in known[name].arguments or [] if arg.required and not (arguments or {}).get(arg.name)]
        if missing:
            raise MCPError(INVALID_PARAMS, say("prompt_arguments_missing", name=name, missing=", ".join(missing)))
        return await super().get_prompt(name, arguments, context)


class NexusMcp:
    """One MCP server over a backend. `user_of()` says who is calling (fixed over stdio, the bearer token's
    user over HTTP); `models(spec)` builds a model adapter for run_task, checking the spec as the
    transport requires; `default_model` may be a function (finding the configured vendor imports its SDK:
    seconds, not to be spent before answering `initialize`). The backend may still be starting (`nexus mcp
    --ifc` answers initialize and lists its tools before its IFC host has connected): what needs it waits."""

    def __init__(self, backend: Backend | BackendSource, user_of: Callable[[], str],
                 models: Callable[[str], ModelAdapter], default_model: str | Callable[[], str | None] | None = None,
                 image_max_px: int | None = None, policy: str | None = None,
                 refs: list[dict[str, str]] | None = None) -> None:
        self.source: BackendSource = Ready(backend) if isinstance(backend, Backend) else backend
        self.refs = refs or []  # `nexus mcp --ifc ... --ref ...`: every session's reference models
        self.user_of, self.models = user_of, models
        self.default_model, self.image_max_px, self.policy = default_model, image_max_px, policy
        self._parts: tuple[Backend, McpCalls, DelegatedRuns] | None = None
        self.card = ReviewCard()  # the MCP Apps review card (apps.py)
        # Reviews asked by an input_required result (2026-07-28), until the client answers in its retry:
        # a direct call's (call id -> its chunks, the question, its key), a delegated run's ((handle, call id)
        # -> the question, the wait).
        self._waiting: dict[str, tuple[Iterator[Any], str, str | None]] = {}
        self._run_reviews: dict[tuple[str, str], tuple[str, float]] = {}

    def caller(self, ctx: Context) -> Caller:
        name, version = client_info(ctx)
        return Caller(self.user_of(), name, version, connection_of(ctx))

    async def ready(self) -> None:
        """Once the backend is up (raises Refused if it cannot start)."""
        if self._parts is None:
            backend = await anyio.to_thread.run_sync(self.source.get)
            if self._parts is None:  # another call may have got there while this one waited
                self._parts = (backend, McpCalls(backend, self.image_max_px, self.policy, self.refs),
                               DelegatedRuns(backend, self.policy, self.refs))

    def _part(self) -> tuple[Backend, McpCalls, DelegatedRuns]:
        assert self._parts is not None, "ready() first"
        return self._parts

    @property
    def backend(self) -> Backend:
        return self._part()[0]

    @property
    def calls(self) -> McpCalls:
        return self._part()[1]

    @property
    def runs(self) -> DelegatedRuns:
        return self._part()[2]

    def build(self, host_app: str | None = None, **server_args: Any) -> MCPServer:
        """`host_app`: the application of the one host this server is for (`--ifc`), whose views
        capture_view's description lists."""
        tools: list[Tool] = []
        for definition in offered_tools(host_app):
            if definition["name"] in LOOP_TOOLS:
                schema = with_host(definition["input_schema"])
                description = definition["description"]
                if definition["name"] in KEYED_TOOLS:
                    schema, description = with_key(schema), description + "\n\n" + key_argument()
                tools.append(contract_tool(definition["name"], description, schema,
                                           self._loop_tool(definition["name"])))
        for name, handler in (("list_hosts", self.list_hosts), ("run_task", self.run_task), ("get_run", self.get_run),
                              ("review_status", self.review_status)):
            spec = own_tool(name)
            schema = spec["input_schema"]
            if "host" in schema["properties"]:
                schema = with_host(schema)
            tools.append(contract_tool(name, spec["description"], schema, self._when_ready(handler)))
        tools.extend(self.card.tools(self, self._when_ready))
        server = NexusServer("NexusAI", version=package_version(), tools=tools, **server_args)
        self._resources(server)
        register_card(server)
        self._prompts(server)
        self._completions(server)
        add_logging(server)
        return server

    # the loop's tools
    def _loop_tool(self, name: str) -> ToolHandler:
        return self._when_ready(lambda arguments, ctx: self.loop_call(name, arguments, ctx))

    def _when_ready(self, handler: ToolHandler) -> ToolHandler:
        """The handler, once the backend is up; the reason as the tool's error if it cannot start."""
        async def when_ready(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            try:
                await self.ready()
            except Refused as exc:
                return error_result(str(exc))
            return await handler(arguments, ctx)
        return when_ready

    async def _admit_call(self, user: str) -> None:
        """Every call counts towards the user's requests per minute (a deployment's endpoint)."""
        if self.backend.quotas is not None:
            await anyio.to_thread.run_sync(self.backend.quotas.admit_call, user)

    async def loop_call(self, name: str, arguments: dict[str, Any], ctx: Context) -> CallToolResult | InputRequiredResult:
        caller = self.caller(ctx)
        answered = review_state(ctx)
        if answered is not None and "run" not in answered:
            return await self._resume_call(caller, answered["review"], ctx)
        arguments = dict(arguments)
        host_id = arguments.pop("host", None)
        key = arguments.pop("idempotency_key", None) if name in KEYED_TOOLS else None
        if key:
            earlier = await anyio.to_thread.run_sync(self.calls.by_key, caller.user, key)
            if earlier is not None:
                return await self._repeat(caller, earlier, key, ctx)
        call_id = "mcp_" + uuid.uuid4().hex[:16]
        if name in KEYED_TOOLS and not key:
            key = call_id  # issued by the server, told in the first progress message and in the result
        first: Any = None
        try:
            if key:
                session_id, items = await anyio.to_thread.run_sync(
                    lambda: self.calls.start(caller, call_id, name, arguments, host_id, key))
            else:  # nothing to tell before the call runs: started and followed to its first item in one hop
                session_id, items, first = await anyio.to_thread.run_sync(
                    self._start_and_follow, caller, call_id, name, arguments, host_id, abandon_on_cancel=True)
        except Refused as exc:
            return error_result(str(exc))
        except QuotaExceeded as exc:
            return quota_result(exc)
        except anyio.get_cancelled_exc_class():
            self.calls.cancel(call_id)  # the host aborts the script: killed, rolled back, a hold discarded
            raise
        if key:
            await ctx.report_progress(0, None, say("call_key", tool_call_id=call_id, idem=key))
        return await self._follow_call(ctx, session_id, call_id, name, items, key, first)

    def _start_and_follow(self, caller: Caller, call_id: str, name: str, arguments: dict[str, Any],
                          host_id: str | None) -> tuple[str, Iterator[Any], Any]:
        session_id, items = self.calls.start(caller, call_id, name, arguments, host_id)
        return session_id, items, _next_to_act_on(items)

    async def _follow_call(self, ctx: Context, session_id: str, call_id: str, name: str, items: Iterator[Any],
                           key: str | None, first: Any = None) -> CallToolResult | InputRequiredResult:
        """The call's chunks until its outcome (`first`: the item to act on that was read already); a held
        change is reviewed by the person where the client can ask them, else the call answers at once that it
        is held, and where to decide."""
        outcome: CallOutcome | None = None
        try:
            while outcome is None:
                # abandon_on_cancel: a notifications/cancelled reaches us now, not once the script has ended
                if first is None:
                    item = await anyio.to_thread.run_sync(_next_to_act_on, items, abandon_on_cancel=True)
                else:
                    item, first = first, None
                if isinstance(item, CallOutcome):
                    outcome = item
                elif item.type == "Metadata" and (item.metadata or {}).get("kind") == "approval_request":
                    if await self.card.offer(ctx, self.caller(ctx), session_id, call_id, name, item.metadata or {}):
                        continue  # the client renders the review card, which decides
                    asked = await self._review_call(ctx, session_id, call_id, name, item.content, key)
                    if isinstance(asked, InputRequiredResult):
                        self._waiting[call_id] = (items, item.content, key)
                        return asked
                    if asked is not None:
                        return asked
        except Refused as exc:
            return error_result(str(exc))
        except anyio.get_cancelled_exc_class():
            self.calls.cancel(call_id)  # the host aborts the script: killed, rolled back, a hold discarded
            raise
        finally:
            self.card.held.forget(call_id)
        return self.result(outcome, call_id, name, key)

    def _minutes(self) -> float:
        return round(self.backend.settings.approval_timeout_s / 60, 1)

    async def _review_call(self, ctx: Context, session_id: str, call_id: str, name: str, summary: str,
                           key: str | None) -> CallToolResult | InputRequiredResult | None:
        """Under `ask`, a held change of a direct call: None once the person decided here (elicitation mid-call,
        before 2026-07-28); the input_required result that asks them (2026-07-28); or, where the client cannot
        ask, the held result saying where to decide (the chat page shows the change as for any run)."""
        if can_elicit(ctx) and asks_by_input_required(ctx):
            return InputRequiredResult(input_requests={REVIEW_KEY: review_request(summary)},
                                       request_state=json.dumps({"review": call_id}))
        if can_elicit(ctx) and await self._elicit_decision(ctx, session_id, call_id, summary):
            return None
        await ctx.report_progress(0, None, self._held_note(session_id, call_id))
        await log(ctx, "notice", self._held_note(session_id, call_id))  # also for a client without a progress token
        return self.held_result(session_id, call_id, name, key)

    def _held_note(self, session_id: str, call_id: str) -> str:
        return say("approval_elsewhere", link=self.backend.session_link(session_id), minutes=self._minutes(),
                   tool_call_id=call_id)

    def held_result(self, session_id: str, call_id: str, name: str, key: str | None) -> CallToolResult:
        link = self.backend.session_link(session_id)
        held = {"tool_call_id": call_id, "name": name, "ok": True, "held": True, "committed": False,
                "review_status": "pending", "decide_at": link,
                "note": say("approval_held_note", link=link, tool_call_id=call_id)}
        if key:
            held["idempotency_key"] = key
        # The first text says it in words (a client that shows only text); the second is the structured content.
        return CallToolResult(content=[TextContent(text=self._held_note(session_id, call_id)),
                                       TextContent(text=as_text(held))], structured_content=held, is_error=False)

    async def _elicit_decision(self, ctx: Context, session_id: str, call_id: str, summary: str) -> bool:
        """Ask the person mid-call (before 2026-07-28) and deliver their decision; False if the client could
        not ask after all (a bridge whose own client cannot)."""
        decision = decision_of(None, None, self._minutes())
        with anyio.move_on_after(self.backend.settings.approval_timeout_s):
            try:
                answer = await ctx.elicit(say("approval_elicit", report=summary), ApprovalAnswer)
            except MCPError:
                return False
            content = answer.data.model_dump() if answer.action == "accept" and answer.data is not None else None
            decision = decision_of(answer.action, content, self._minutes())
        await anyio.to_thread.run_sync(self.calls.decide, session_id, call_id, decision)
        return True

    async def _resume_call(self, caller: Caller, call_id: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        """The client answered the review question of a call it made before (2026-07-28): the decision is
        delivered and the call followed to its outcome."""
        worker = self.calls.worker(caller.user, call_id)
        waiting = self._waiting.pop(call_id, None)
        if worker is None:
            return error_result(say("unknown_call", tool_call_id=call_id))
        if waiting is None:  # answered already (a repeated retry): the outcome, once there
            return await self._outcome_of(worker, call_id, ctx, wait_s=DEFAULT_RUN_WAIT_S)
        items, summary, key = waiting
        answer = review_answer(ctx)
        if answer is None:  # retried without an answer: ask again
            self._waiting[call_id] = waiting
            return InputRequiredResult(input_requests={REVIEW_KEY: review_request(summary)},
                                       request_state=json.dumps({"review": call_id}))
        decision = decision_of(*answer, self._minutes())
        await anyio.to_thread.run_sync(self.calls.decide, worker.session_id, call_id, decision)
        return await self._follow_call(ctx, worker.session_id, call_id, worker.name, items, key)

    async def _repeat(self, caller: Caller, earlier: Any, key: str, ctx: Context) -> CallToolResult:
        """A retried call with an idempotency key already used: the first call's outcome, never a second run."""
        if isinstance(earlier, tuple):  # run by an earlier process of this deployment
            session_id, call_id = earlier
            outcome = await anyio.to_thread.run_sync(self.calls.stored_outcome, session_id, call_id)
            if outcome is None:  # it never finished (the process ended mid-call): nothing was kept
                return error_result(say("unknown_call", tool_call_id=call_id))
            return self.result(outcome, call_id, str((outcome.person or {}).get("name", "")), key, repeated=True)
        call_id = next(c for c, w in self.calls.calls_of(caller.user) if w is earlier)
        if not earlier.done.is_set():
            await ctx.report_progress(0, None, say("repeat_running", idem=key, tool_call_id=call_id))
        return await self._outcome_of(earlier, call_id, ctx, wait_s=DEFAULT_RUN_WAIT_S, key=key, repeated=True)

    async def _outcome_of(self, worker: Any, call_id: str, ctx: Context, wait_s: float, key: str | None = None,
                          repeated: bool = False) -> CallToolResult:
        """A call's outcome, waiting up to `wait_s` for it; while it waits for a review, the held result."""
        with anyio.move_on_after(wait_s):
            while not worker.done.is_set():
                await anyio.sleep(PROGRESS_POLL_S)
        if worker.outcome is not None:
            return self.result(worker.outcome, call_id, worker.name, key, repeated=repeated)
        if worker.failure is not None:
            return error_result(str(worker.failure))
        if self.backend.channel.awaiting_decision(worker.session_id):
            return self.held_result(worker.session_id, call_id, worker.name, key)
        return structured_result({"tool_call_id": call_id, "name": worker.name, "ok": True,
                                  "review_status": "running", "note": say("call_running", tool_call_id=call_id)})

    async def review_status(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        """What became of a call (held for review, or still running): its outcome once decided."""
        caller = self.caller(ctx)
        call_id = arguments["tool_call_id"]
        self.calls.audit(caller, None, None, "mcp_" + uuid.uuid4().hex[:16], "review_status", arguments)
        try:
            await self._admit_call(caller.user)
        except QuotaExceeded as exc:
            return quota_result(exc)
        worker = self.calls.worker(caller.user, call_id)
        if worker is None:
            session_id = await anyio.to_thread.run_sync(self.calls.session_of, caller.user, call_id)
            outcome = session_id and await anyio.to_thread.run_sync(self.calls.stored_outcome, session_id, call_id)
            if not outcome:
                return error_result(say("unknown_call", tool_call_id=call_id))
            return self.result(outcome, call_id, str((outcome.person or {}).get("name", "")), None)
        return await self._outcome_of(worker, call_id, ctx, wait_s=float(arguments.get("wait_s", 0)))

    async def _review(self, ctx: Context, session_id: str, call_id: str, summary: str) -> InputRequiredResult | None:
        """Under `ask`, a held change of a delegated run: asked through elicitation where the client can ask
        (None once decided, or the input_required result under 2026-07-28); otherwise the chat page (or the
        host) decides, as for any run, and the client is told where."""
        if can_elicit(ctx) and asks_by_input_required(ctx):
            return InputRequiredResult(input_requests={REVIEW_KEY: review_request(summary)},
                                       request_state=json.dumps({"review": call_id, "run": session_id}))
        if not can_elicit(ctx) or not await self._elicit_decision(ctx, session_id, call_id, summary):
            await ctx.report_progress(0, None, self._held_note(session_id, call_id))
        return None

    def result(self, outcome: CallOutcome, call_id: str, name: str, key: str | None = None,
               repeated: bool = False) -> CallToolResult:
        person = outcome.person or {"tool_call_id": call_id, "name": name, "ok": not outcome.is_error,
                                    "summary": outcome.text}
        images = [ImageContent(data=image["data"], mime_type=image.get("media_type", "image/png"))
                  for image in outcome.images]
        structured = capped_copy(person, outcome.session_id, self.backend.settings)
        decision = structured.get("decision")
        if isinstance(decision, dict) and decision.get("decision") in ("keep", "discard"):
            structured["review_status"] = "kept" if decision["decision"] == "keep" else "discarded"
        if key:
            structured["idempotency_key"] = key
        if repeated:
            structured["repeated"] = True
        return with_card(name, structured_result(structured, outcome.is_error, images))

    # hosts, delegated runs
    async def list_hosts(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        caller = self.caller(ctx)
        try:
            await self._admit_call(caller.user)
        except QuotaExceeded as exc:
            self.calls.audit(caller, None, None, "mcp_" + uuid.uuid4().hex[:16], "list_hosts", arguments)
            return quota_result(exc)
        hosts = [connection.describe() for connection in self.calls.hosts_for(caller.user)]
        self.calls.audit(caller, None, None, "mcp_" + uuid.uuid4().hex[:16], "list_hosts", arguments)
        listing = {"hosts": [{k: h[k] for k in ("host_id", "host_app", "host_version", "document", "display_name")
                              if k in h} for h in hosts]}
        return structured_result(listing)

    async def run_task(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult | InputRequiredResult:
        caller = self.caller(ctx)
        answered = review_state(ctx)
        if answered is not None and "run" in answered:
            return await self._resume_run(caller, answered, ctx)
        user = caller.user
        slot = None
        try:
            # As the chat API: a new session (sessions per hour), a slot among the runs in progress (concurrent
            # runs, counted and taken in one step); the slot is released when the run ends or does not start.
            await self._admit_call(user)
            if self.backend.quotas is not None:
                await anyio.to_thread.run_sync(self.backend.quotas.admit_session, user)
                slot = await anyio.to_thread.run_sync(self.backend.quotas.admit_run, user)
            host = self.calls.resolve_host(user, arguments.get("host"))
        except QuotaExceeded as exc:
            self.calls.audit(caller, None, None, "mcp_" + uuid.uuid4().hex[:16], "run_task", arguments)
            return quota_result(exc)
        except Refused as exc:
            if slot is not None:
                slot.release()
            return error_result(str(exc))
        try:
            return await self._start_run(caller, host, arguments, ctx, slot)
        finally:
            if slot is not None and not slot.bound:
                slot.release()

    async def _start_run(self, caller: Caller, host: Any, arguments: dict[str, Any], ctx: Context,
                         slot: Any) -> CallToolResult:
        self.calls.audit(caller, None, host, "mcp_" + uuid.uuid4().hex[:16], "run_task", arguments)
        spec = arguments.get("model") or await anyio.to_thread.run_sync(self._default_model)
        if not spec:
            return error_result(say("no_model"))
        try:
            model = await anyio.to_thread.run_sync(self.models, spec)
        except Exception as exc:  # the spec's own error names what was wrong
            return error_result(say("bad_model", spec=spec, detail=exc))
        run = await anyio.to_thread.run_sync(self.runs.start, caller.user, host.host_id, model, arguments["prompt"])
        if slot is not None:
            slot.release_on(run.done)
        return await self._follow(run, ctx, float(arguments.get("wait_s", DEFAULT_RUN_WAIT_S)))

    def _default_model(self) -> str | None:
        return self.default_model() if callable(self.default_model) else self.default_model

    async def get_run(self, arguments: dict[str, Any], ctx: Context) -> CallToolResult | InputRequiredResult:
        caller = self.caller(ctx)
        answered = review_state(ctx)
        if answered is not None and "run" in answered:
            return await self._resume_run(caller, answered, ctx)
        user = caller.user
        self.calls.audit(caller, None, None, "mcp_" + uuid.uuid4().hex[:16], "get_run", arguments)
        try:
            await self._admit_call(user)
        except QuotaExceeded as exc:
            return quota_result(exc)
        found = self.runs.get(user, arguments["handle"])
        if found is None:
            return error_result(say("unknown_run", handle=arguments["handle"]))
        if isinstance(found, dict):
            return self._run_result(found)
        return await self._follow(found, ctx, float(arguments.get("wait_s", 0)))

    async def _follow(self, run: DelegatedRun, ctx: Context, wait_s: float) -> CallToolResult | InputRequiredResult:
        """A progress notification for each of the run's steps, in order, while it goes on; its result, or
        its handle if it outlasts `wait_s`. Every step the run took before it ended is reported before its
        result, also when it ended between two looks here."""
        reported = 0
        with anyio.move_on_after(wait_s):
            while True:
                ended = run.done.is_set()  # read first: the steps noted before the end are all seen below
                for step in run.steps[reported:]:
                    reported += 1
                    await ctx.report_progress(reported, None, step)
                    await log(ctx, "info", f"run {run.handle}: {step}")
                if run.approvals:  # a change held under `ask`: the person decides, here if the client can ask
                    call_id, summary = run.approvals.pop(0)
                    asked = await self._review(ctx, run.handle, call_id, summary)
                    if asked is not None:
                        self._run_reviews[(run.handle, call_id)] = (summary, wait_s)
                        return asked
                    continue
                if ended:
                    break
                await anyio.sleep(PROGRESS_POLL_S)
        if run.done.is_set():
            await anyio.to_thread.run_sync(self.runs.released, run)
        return self._run_result(run.summary())

    async def _resume_run(self, caller: Caller, answered: dict[str, Any], ctx: Context) -> CallToolResult | InputRequiredResult:
        """The client answered the review question of a delegated run's held change (2026-07-28)."""
        handle, call_id = str(answered["run"]), answered["review"]
        found = self.runs.get(caller.user, handle)
        if found is None:
            return error_result(say("unknown_run", handle=handle))
        if isinstance(found, dict):
            return self._run_result(found)
        waiting = self._run_reviews.pop((handle, call_id), None)
        summary, wait_s = waiting if waiting is not None else ("", DEFAULT_RUN_WAIT_S)
        answer = review_answer(ctx)
        if answer is None and waiting is not None:  # retried without an answer: ask again
            self._run_reviews[(handle, call_id)] = waiting
            return InputRequiredResult(input_requests={REVIEW_KEY: review_request(summary)},
                                       request_state=json.dumps({"review": call_id, "run": handle}))
        if answer is not None and waiting is not None:
            decision = decision_of(*answer, self._minutes())
            await anyio.to_thread.run_sync(self.calls.decide, handle, call_id, decision)
        return await self._follow(found, ctx, wait_s)

    def _run_result(self, summary: dict[str, Any]) -> CallToolResult:
        summary = {**summary, "results": [capped_copy(r, summary["handle"], self.backend.settings)
                                          for r in summary["results"]]}
        if summary["status"] == "running":
            summary["note"] = say("run_running", handle=summary["handle"], steps=len(summary["steps"]))
        return structured_result(summary, is_error=summary["status"] in ("error", "cancelled"))

    # resources and prompts
    async def read_context(self, host_id: str | None) -> str:
        """The context block; a read that cannot be answered (no such host, over quota, the host could not
        start) is an error of the read, not a block whose text is the error."""
        user = self.user_of()
        try:
            await self.ready()
            await self._admit_call(user)  # a read asks the host: it counts as a call
            return await anyio.to_thread.run_sync(self.context_block, user, host_id)
        except Refused as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        except QuotaExceeded as exc:
            raise MCPError(INVALID_REQUEST, quota_text(exc)) from None

    def context_block(self, user: str, host_id: str | None) -> str:
        host = self.calls.resolve_host(user, host_id)
        link = WebSocketHostLink(self.backend.hosts, self.backend.channel, host.host_id, user,
                                 "ctx_" + uuid.uuid4().hex[:12])
        return render_context_block(link, fetch_context(link, threading.Event()), self.refs)

    def _resources(self, server: MCPServer) -> None:
        @server.resource("nexus://context", name="context", mime_type="text/plain",
                         description="The connected host's context block: document, storeys or levels, selection.")
        async def context() -> str:
            return await self.read_context(None)

        @server.resource("nexus://hosts/{host_id}/context", name="host_context", mime_type="text/plain",
                         description="A connected host's context block, by host_id (see list_hosts).")
        async def host_context(host_id: str) -> str:
            return await self.read_context(host_id)

    def _prompts(self, server: MCPServer) -> None:
        specs = prompts()

        def audit(focus: str = "") -> str:
            return prompt_text("audit").format(focus=f", concentrating on {focus}" if focus else "")

        def renumber(category: str, scheme: str, scope: str = "") -> str:
            return prompt_text("renumber").format(category=category, scheme=scheme,
                                                  scope=f" ({scope})" if scope else "")

        def report(topic: str) -> str:
            return prompt_text("report").format(topic=topic)

        for name, fn in (("audit", audit), ("renumber", renumber), ("report", report)):
            prompt = Prompt.from_function(fn, name=name, description=specs[name]["description"])
            for argument in prompt.arguments or []:
                argument.description = specs[name]["arguments"][argument.name]
            server.add_prompt(prompt)

    def _completions(self, server: MCPServer) -> None:
        """Host ids for the host context resource, the suggestions prompts.json lists for prompt arguments."""
        @server.completion()
        async def complete(ref: Any, argument: CompletionArgument, context: Any) -> Completion | None:
            typed = argument.value.lower()
            if isinstance(ref, ResourceTemplateReference) and argument.name == "host_id":
                if self._parts is None:  # the host is still starting: nothing connected yet to offer
                    return Completion(values=[])
                values = [h.host_id for h in self.calls.hosts_for(self.user_of())]
            elif isinstance(ref, PromptReference) and ref.name in prompts():
                values = prompts()[ref.name].get("suggestions", {}).get(argument.name, [])
            else:
                return None
            matching = [v for v in values if v.lower().startswith(typed)]
            return Completion(values=matching[:100], total=len(matching), has_more=len(matching) > 100)
