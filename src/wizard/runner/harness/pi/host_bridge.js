// wizard's host-tool bridge for pi, loaded with `pi -e host_bridge.js`.
//
// It registers the host's tools from the spec file the Python side writes, forwards each
// call to the host over a Unix socket (one JSON line each way), asks the host's fence
// whether every tool call may run (built-in or not), and replaces pi's bash tool with one
// whose children get only the allowlisted environment. Every host call takes pi's abort
// signal, and any failure to reach the host blocks the call (fail closed).
import { readFileSync } from "node:fs";
import net from "node:net";
import { createBashTool } from "@mariozechner/pi-coding-agent";

const SOCKET = process.env.WIZARD_HOST_SOCK;
const SPEC = JSON.parse(readFileSync(process.env.WIZARD_HOST_SPEC, "utf8"));

function askHost(payload, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error("The operation was aborted"));
    const socket = net.createConnection(SOCKET);
    let buffer = "";
    let settled = false;
    const finish = (fn, value) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      fn(value);
    };
    const onAbort = () => finish(reject, new Error("The operation was aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(JSON.stringify(payload) + "\n"));
    socket.on("data", (data) => {
      buffer += data;
      const end = buffer.indexOf("\n");
      if (end < 0) return;
      try {
        finish(resolve, JSON.parse(buffer.slice(0, end)));
      } catch (err) {
        finish(reject, err);
      }
    });
    socket.on("error", (err) => finish(reject, err));
    socket.on("close", () => finish(reject, new Error("the wizard host closed the connection")));
  });
}

function scrubbedEnv(env) {
  const out = {};
  for (const [key, value] of Object.entries(env)) {
    if (SPEC.envAllow.includes(key) || SPEC.envAllowPrefixes.some((p) => key.startsWith(p))) {
      out[key] = value;
    }
  }
  return out;
}

export default function (pi) {
  for (const tool of SPEC.tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      async execute(toolCallId, params, signal) {
        const answer = await askHost({ op: "tool", name: tool.name, id: toolCallId, input: params }, signal);
        if (answer.isError) throw new Error(answer.text);
        return { content: [{ type: "text", text: answer.text }], details: {} };
      },
    });
  }

  const bash = createBashTool(process.cwd(), {
    spawnHook: ({ command, cwd, env }) => ({ command, cwd, env: scrubbedEnv(env) }),
  });
  pi.registerTool({
    ...bash,
    execute: (id, params, signal, onUpdate) => bash.execute(id, params, signal, onUpdate),
  });

  pi.on("tool_call", async (event, ctx) => {
    try {
      const answer = await askHost(
        { op: "permit", name: event.toolName, id: event.toolCallId, input: event.input },
        ctx.signal,
      );
      if (!answer.allow) return { block: true, reason: answer.reason || "Blocked by the wizard's fence." };
    } catch (err) {
      return { block: true, reason: `Security check failed; tool blocked (fail-closed): ${err.message}` };
    }
    return undefined;
  });
}
