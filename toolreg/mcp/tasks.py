"""Tools that outlive a request: MCP's tasks extension (SEP-2663, final), both ways.

The wire, as toolreg speaks it (extension `io.modelcontextprotocol/tasks`, defined only on
the 2026-07-28 protocol; on the 2025 ones nothing here applies and calls run inline):

- **Negotiation.** The server lists the extension in `server/discover`
  (`capabilities.extensions["io.modelcontextprotocol/tasks"] = {}`). A client declares it
  per request, in `params._meta["io.modelcontextprotocol/clientCapabilities"].extensions`.
  The server alone decides, call by call, whether to answer with a task; it must never
  answer a task to a request that did not declare the extension. A call that can only run
  as a task, from a client that did not declare it, is JSON-RPC error -32021 (missing
  required client capability) with `data.requiredCapabilities.extensions` naming it.
- **Creation.** `tools/call` is answered with a `CreateTaskResult`: the flat task object
  with `resultType: "task"` — `taskId` (unguessable: it is the handle), `status`,
  `statusMessage?`, `createdAt`, `lastUpdatedAt` (ISO 8601), `ttlMs` (from creation;
  null: unlimited; may change), `pollIntervalMs?` (the client should wait that long
  between polls). The task exists (a `tasks/get` finds it) before the answer is sent.
- **Statuses.** `working`, `input_required` (with `inputRequests`: server-to-client
  requests such as `elicitation/create`, keyed, each key used once per task), and the
  terminal `completed` (`result`: the `CallToolResult`, `isError: true` included),
  `failed` (`error`: a JSON-RPC error, only for protocol-level failures) and `cancelled`.
- **`tasks/get {taskId}`** answers the task as it is now, with its payload, and
  `resultType: "complete"`. An unknown (or expired, or someone else's) id is -32602.
  There is no `tasks/result` (-32601) and no `tasks/list` (nothing can leak other
  callers' tasks).
- **`tasks/update {taskId, inputResponses}`** answers outstanding `inputRequests` (keys
  not outstanding are ignored); **`tasks/cancel {taskId}`** asks the task to stop. Both
  are acknowledged with an empty result (`resultType: "complete"`) and take effect
  eventually: a task may still complete after a cancel. `notifications/cancelled` is not
  used for tasks. All three need the extension declared on the request (else -32021).
- **Progress.** `notifications/progress` and `notifications/message` do not exist for tasks;
  a task's progress is its `statusMessage` (toolreg writes `ToolContext.report_progress`
  there). `notifications/tasks` (pushed status, after `subscriptions/listen` with
  `taskIds`) is optional; toolreg does not send it: clients poll.
- **HTTP.** `tasks/*` requests carry `Mcp-Name: <taskId>` (so a load balancer can route
  them to the process that holds the task; a mismatch with the body is refused).
- **Security.** Every `tasks/*` request is checked against the identity that created the
  task (the verified token's subject, else the client's address; and the HTTP session,
  when there is one): another caller's id is as unknown as a made-up one.

The installed `mcp` SDK (2.3) has no types for this extension (its `Task` types are the
2025-11-25 experimental ones), but it lets a server add request methods and advertise
extensions, passes a result with an unknown `resultType` through unsieved, and lets a client
extension claim `resultType: "task"` results (`ResultClaim`). This module builds on those.
"""

from __future__ import annotations

EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""
