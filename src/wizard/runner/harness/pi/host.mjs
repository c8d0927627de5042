// wizard's pi host: one pi agent session, in process through pi's own SDK, for one
// conversation. Run by the pinned Node against the pinned pi (`node host.mjs`, with
// WIZARD_PI_ENTRY and WIZARD_SANDBOX_ENTRY naming pi's SDK and the sandbox runtime in the
// engine). Its first line on stdin is wizard's word that it has checked the engine's files
// against their install record (Node's own start-up overlaps that check, and nothing of the
// engine is loaded before it); it then loads pi and waits for its launch (the conversation's
// settings) as the next line: wizard starts a host while it gets the rest of the run ready,
// so the engine's own start-up overlaps wizard's. The sandbox runtime loads and starts once
// the first model request has gone out, and every tool call waits for it ("the OS sandbox").
//
// Why not `pi --mode rpc`: RPC writes the whole message so far, twice, with every streamed
// delta, so a reply of n characters costs n²/k bytes on the pipe and kills pi on long replies.
// This host speaks a compact JSON Lines protocol instead (described in session.py):
// text deltas and block ends, complete assistant messages without their tool arguments, tool
// starts and ends with bounded previews, and one `agent_end` per prompt. What it writes is
// paced by wizard's reading: the listener awaits each write, which holds pi's agent loop (and
// so the model stream) until wizard has read it.
//
// It also owns what pi must do differently under wizard: host tools forwarded to wizard over
// a Unix socket, the fence asked before every tool call (fail closed), bash children with an
// allowlisted environment only and inside the OS sandbox (`@anthropic-ai/sandbox-runtime`,
// with the policy wizard wrote), and one tool call at a time. pi's own file tools are not
// used: wizard's `read` / `write` / `edit` are host tools, so the path wizard checks is the
// path it opens (pi maps look-alike names before opening them).
import diagnostics from "node:diagnostics_channel";
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { SandboxAhead, keepingConfig, watchedRoots } from "../../../tools/sandbox_ahead.mjs";

const PREVIEW_CHARS = 300;
let sandboxStarting = null; // the sandbox runtime, loading and starting (`sandboxStarted`)
let sandboxRuntime = null; // the runtime, once started
let leaving = false; // `leave` has begun: no sandbox starts after this
let ahead = null; // the next command's sandbox, made while the model thinks (sandbox_ahead.mjs)
let makeAhead = null; // how `ahead` is made once the runtime has started (`sandboxedBash`)
// The first command's sandbox (`firstSandboxAhead`): "wanted" until it is asked for, "gone" once
// another tool came first (it may come before the runtime, and so `ahead`, exists).
let firstAhead = "wanted";

function die(message, code = 70) {
  process.stderr.write(`wizard pi host: ${message}\n`);
  process.exit(code);
}

/**
 * Leave: stop the sandbox runtime's helpers (its proxy bridges) first, say so (what is left is
 * Node's own teardown, a tenth of a second, which wizard need not wait for), then exit.
 */
async function leave(code = 0) {
  leaving = true;
  const stopped = (async () => {
    // The next command's sandbox, with its placeholders in the project (one still being
    // wrapped is not waited for: it will never start).
    await ahead?.discard({ wrapping: false });
    // A started runtime is stopped in order (its proxies and bridges). One still loading
    // starts nothing now, and one still starting is not waited for: once the host has left,
    // wizard ends its process group, bridges and all (`PiSession.close`).
    await sandboxRuntime?.reset();
  })();
  await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 2000))]);
  process.stdout.write(JSON.stringify({ type: "left" }) + "\n");
  process.exit(code);
}

process.on("SIGTERM", () => void leave(143));
process.on("uncaughtException", (err) => die(err?.message ?? String(err)));
process.on("unhandledRejection", (err) => die(err?.message ?? String(err)));
// wizard went away: nobody is left to report to.
process.stdout.on("error", () => process.exit(0));

// --- input: the engine's check, the launch, then commands -----------------------------------

let pending = "";
let onLine = null; // who takes the next line: `nextMessage`'s reader, then the command handler
const early = []; // lines that came before anyone could take them
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  pending += chunk;
  let end;
  while ((end = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, end).trim();
    pending = pending.slice(end + 1);
    if (!line) continue;
    if (onLine) onLine(line);
    else early.push(line);
  }
});
let stdinEnded = null; // set once the session exists; before that, an end means leave now
process.stdin.on("end", () => (stdinEnded ? stdinEnded() : void leave(0)));

/** The next line on stdin (`what`), parsed. */
function nextMessage(what) {
  return new Promise((resolve) => {
    const take = (line) => {
      onLine = null;
      try {
        resolve(JSON.parse(line));
      } catch {
        die(`the ${what} is not JSON`);
      }
    };
    if (early.length) take(early.shift());
    else onLine = take;
  });
}

if ((await nextMessage("engine's check")).engine !== "checked") die("the engine is not checked");
// Loading starts now; nothing of pi runs a session or a command before the launch.
const piLoading = import(pathToFileURL(process.env.WIZARD_PI_ENTRY).href);
piLoading.catch(() => {}); // awaited below; an early failure must not be unhandled first
const launch = await nextMessage("launch");
process.chdir(launch.cwd);

// --- output, paced by the reader ------------------------------------------------------------

async function send(message) {
  if (process.stdout.write(JSON.stringify(message) + "\n")) return;
  await new Promise((resolve) => {
    const timer = setTimeout(
      () => die(`wizard stopped reading the engine's events for ${launch.stallSeconds} s`),
      launch.stallSeconds * 1000,
    );
    process.stdout.once("drain", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const respond = (id, success, extra = {}) => send({ type: "response", id, success, ...extra });

function preview(text) {
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

/** The tool's arguments as an object whose long strings are cut short. */
function boundedArgs(args) {
  const out = {};
  for (const [key, value] of Object.entries(args ?? {})) {
    const json = typeof value === "string" ? value : JSON.stringify(value) ?? "";
    out[key] = json.length > PREVIEW_CHARS ? preview(json) : value;
  }
  return out;
}

function resultText(result) {
  const content = result?.content;
  if (!Array.isArray(content)) return preview(String(result ?? ""));
  return preview(content.filter((c) => c?.type === "text").map((c) => c.text).join("\n"));
}

function assistantSummary(message) {
  const content = Array.isArray(message.content) ? message.content : [];
  return {
    type: "message_end",
    text: content.filter((c) => c.type === "text").map((c) => c.text),
    tools: content.filter((c) => c.type === "toolCall").map((c) => c.name),
    stopReason: message.stopReason,
    errorMessage: message.errorMessage ?? null,
  };
}

/** The compact form of one agent event, or null for events wizard does not need. */
function compact(event) {
  switch (event.type) {
    case "message_update": {
      const update = event.assistantMessageEvent;
      const index = update.contentIndex ?? 0;
      if (update.type === "text_start") return { type: "text_start", index };
      if (update.type === "text_delta") return { type: "text_delta", index, delta: update.delta };
      if (update.type === "text_end") return { type: "text_end", index };
      return null;
    }
    case "message_end":
      return event.message.role === "assistant" ? assistantSummary(event.message) : null;
    case "tool_execution_start":
      return { type: "tool_start", id: event.toolCallId, name: event.toolName, args: boundedArgs(event.args) };
    case "tool_execution_end":
      return {
        type: "tool_end",
        id: event.toolCallId,
        name: event.toolName,
        isError: Boolean(event.isError),
        result: resultText(event.result),
      };
    default:
      return null;
  }
}

// --- the host bridge: wizard's tools and fence over a Unix socket ---------------------------

function askHost(payload, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error("The operation was aborted"));
    const socket = net.createConnection(launch.socket);
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

function hostTool(spec) {
  return sequential({
    name: spec.name,
    label: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    async execute(toolCallId, params, signal) {
      const answer = await askHost({ op: "tool", name: spec.name, id: toolCallId, input: params }, signal);
      if (answer.isError) throw new Error(answer.text);
      return { content: [{ type: "text", text: answer.text }], details: {}, terminate: answer.terminate === true };
    },
  });
}

/**
 * An inline extension whose job is to ask wizard's fence before every tool call, once the OS
 * sandbox has started (`sandboxStarted`).
 */
function fenceExtension(api) {
  api.on("tool_call", async (event, ctx) => {
    await sandboxStarted();
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

function scrubbedEnv(env) {
  const out = {};
  for (const [key, value] of Object.entries(env)) {
    if (launch.envAllow.includes(key) || launch.envAllowPrefixes.some((p) => key.startsWith(p))) {
      out[key] = value;
    }
  }
  return out;
}

/** pi's shell, its children with an allowlisted environment, inside the OS sandbox. */
function shellTool(pi, cwd) {
  const bash = pi.createBashToolDefinition(cwd, {
    // The sandbox's own variables (a private temp folder and package caches) come last.
    spawnHook: ({ command, cwd: dir, env }) => ({ command, cwd: dir, env: commandEnv(env) }),
    operations: launch.sandbox ? sandboxedBash(pi, cwd) : undefined,
  });
  return sequential(withTimeout(bash));
}

/**
 * Every command gets a time limit: the one it asks for, else wizard's default, never more than
 * wizard's maximum (pi's own bash has none, and a command that never ends held the run).
 */
function withTimeout(definition) {
  const { timeoutDefault, timeoutMax } = launch.commandTimeout;
  return {
    ...definition,
    execute: (id, params, ...rest) => {
      const asked = Number(params?.timeout);
      const timeout = asked > 0 ? Math.min(asked, timeoutMax) : timeoutDefault;
      return definition.execute(id, { ...params, timeout }, ...rest);
    },
  };
}

/**
 * One tool call at a time: a file tool never runs while a command of the same message does,
 * so nothing can swap what a path names between wizard's check and its use. One sequential
 * tool in a message makes pi run that whole message's calls in order.
 */
function sequential(definition) {
  return { ...definition, executionMode: "sequential" };
}

// --- the OS sandbox: every command the agent runs, and all it starts ------------------------

/**
 * The sandbox runtime, loaded and started with wizard's policy (null with `--no-sandbox`).
 * Started once the first model request has gone out (its body sent), not with pi: on the
 * host's one thread, loading and starting it is a fifth of a second that the first request
 * need not wait for, and the model's reply takes longer. Every tool call waits for it (and
 * starts it, were no request made through Node's fetch: `fenceExtension`); one that cannot
 * start ends the host, and so the run, before any tool runs.
 */
function sandboxStarted() {
  if (!launch.sandbox) return Promise.resolve(null);
  sandboxStarting ??= (async () => {
    const entry = process.env.WIZARD_SANDBOX_ENTRY;
    const { SandboxManager } = await import(pathToFileURL(entry).href);
    if (leaving) return null;
    // Its seccomp helper started through wizard's launcher, in pi's folder (closed to
    // commands), so that a sandbox is kept for the commands after the one it was made for.
    await SandboxManager.initialize(await keepingConfig(launch.sandbox.config, launch.agentDir, entry));
    sandboxRuntime = SandboxManager;
    ahead = makeAhead?.(SandboxManager) ?? null;
    return SandboxManager;
  })();
  return sandboxStarting.catch((err) => die(`the OS sandbox did not start: ${err?.message ?? err}`));
}
diagnostics.subscribe("undici:request:bodySent", () => void sandboxStarted());

/**
 * pi's own local shell, with each command in the OS sandbox: the one made ahead and kept
 * (`sandbox_ahead.mjs`) when it is still good, else one the runtime wraps now. A command that
 * failed on a read-only folder gets the policy's note, which says why (a preview's copy).
 */
function sandboxedBash(pi, cwd) {
  const local = pi.createLocalBashOperations();
  const note = launch.sandbox.readOnlyNote;
  const limits = launch.sandbox.limitNotes;
  const { prefix } = launch.sandbox;
  makeAhead = (sandbox) =>
    new SandboxAhead({
      sandbox,
      shell: pi.getShellConfig(),
      prefix,
      cwd,
      roots: watchedRoots(launch.sandbox.config, cwd),
      env: firstCommandEnv(pi),
    });
  return {
    exec: async (command, dir, options) => {
      const sandbox = await sandboxStarted();
      if (!sandbox) throw new Error("the session is closing; no command runs now");
      const prepared = await ahead?.take(dir, options.env, command);
      const wrapped = prepared ? null : prefix + (await sandbox.wrapWithSandbox(command));
      let readOnly = false;
      let tail = "";
      const onData = (data) => {
        const text = data.toString();
        readOnly ||= Boolean(note) && text.includes("Read-only file system");
        tail = (tail + text).slice(-4096);
        options.onData(data);
      };
      try {
        const result = prepared
          ? await prepared.run(command, dir, { ...options, onData })
          : await local.exec(wrapped, dir, { ...options, onData });
        if (readOnly && result.exitCode !== 0) options.onData(Buffer.from(`\n${note}\n`));
        // A command a limit stopped says which (the same rules as wizard's own shell).
        const limit = result.exitCode
          ? limits.find((r) => r.exit === result.exitCode || (r.text && tail.includes(r.text)))
          : undefined;
        if (limit) options.onData(Buffer.from(`\n${limit.note}\n`));
        return result;
      } finally {
        // bubblewrap leaves empty files where it mounted over a missing denied name (those
        // of a sandbox made ahead go when it does: `sandbox_ahead.mjs`).
        if (!prepared) sandbox.cleanupAfterCommand();
      }
    },
  };
}

/**
 * Make the first command's sandbox while the model thinks (wizard asks, `sandbox_ahead`, once
 * a model request has gone on a tenth of a second unanswered), or as the model's first `bash`
 * call begins to stream (its arguments still coming, then the fence's word on it) if that is
 * sooner, once the run is ready for tools (the project's first snapshot taken and the skill
 * installed: the sandbox stands placeholders in the project, and is made from what is there).
 * The first command finds it made where the model took longer than the making, and the second
 * finds it kept; a run whose first reply comes at once and calls no `bash` makes none.
 */
async function firstSandboxAhead() {
  if (firstAhead !== "wanted" || !launch.sandbox) return;
  firstAhead = "asked";
  await sandboxStarted();
  const answer = await askHost({ op: "ready" }).catch(() => null);
  if (answer?.ready === true && firstAhead === "asked" && !leaving) ahead?.prepareFirst();
}

/** The environment pi gives a command (its shell's, pi's bin folder first on PATH) as the
 * spawn hook makes it; the commands after the first are prepared with the last one's. */
function firstCommandEnv(pi) {
  const bin = path.join(pi.getAgentDir(), "bin");
  const entries = (process.env.PATH ?? "").split(path.delimiter).filter(Boolean);
  const PATH = entries.includes(bin) ? process.env.PATH : [bin, ...entries].join(path.delimiter);
  return commandEnv({ ...process.env, PATH });
}

// The certificates the user's NODE_EXTRA_CA_CERTS names: the host starts without them (Node
// would read them as it starts, and the host never speaks TLS), its commands get them back.
const certs = process.env.WIZARD_COMMAND_NODE_EXTRA_CA_CERTS;
const commandCerts = certs === undefined ? {} : { NODE_EXTRA_CA_CERTS: certs };

/** A command's environment: the allowlisted part of pi's, the user's certificates, then the
 * sandbox's own variables (a private temp folder and package caches). */
function commandEnv(env) {
  return { ...scrubbedEnv(env), ...commandCerts, ...(launch.sandbox?.env ?? {}) };
}

// --- the session ----------------------------------------------------------------------------

/** pi's credential store, holding nothing and keeping nothing (`CredentialStore`): the only
 * key pi uses is the one in models.json. */
function noCredentials() {
  return {
    read: async () => undefined,
    list: async () => [],
    modify: async (_provider, change) => change(undefined),
    delete: async () => {},
  };
}

async function createSession() {
  const pi = await piLoading;
  const { cwd, agentDir } = launch;
  // The gateway (wizard's proxy and the run's token) is the one provider, from the models.json
  // wizard wrote into pi's private folder; no credential is read or kept anywhere else, and no
  // model catalog is fetched.
  const modelRuntime = await pi.ModelRuntime.create({
    credentials: noCredentials(),
    modelsPath: path.join(agentDir, "models.json"),
    refreshOnCreate: false,
  });
  const model = modelRuntime.getModel(launch.provider, launch.model);
  if (!model) die(`the model ${launch.provider}/${launch.model} is not configured`, 1);
  const settingsManager = pi.SettingsManager.inMemory({
    retry: { enabled: false, provider: { maxRetries: launch.retries } },
    // No request wizard did not ask for: no cache-warming requests between turns, no install
    // telemetry or attribution headers.
    cacheWarming: "off",
    enableInstallTelemetry: false,
  });
  const resourceLoader = new pi.DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    noExtensions: true,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
    extensionFactories: [fenceExtension],
    // Never a project's own .pi/SYSTEM.md: pi's default prompt plus wizard's notes.
    systemPromptOverride: () => undefined,
    appendSystemPromptOverride: () => [launch.systemPrompt],
  });
  await resourceLoader.reload();
  const { session } = await pi.createAgentSession({
    cwd,
    agentDir,
    modelRuntime,
    model,
    settingsManager,
    resourceLoader,
    sessionManager: pi.SessionManager.inMemory(cwd),
    tools: launch.tools,
    customTools: [shellTool(pi, cwd), ...launch.hostTools.map(hostTool)],
  });
  return session;
}

const session = await createSession();
let lastAssistant = null;
// The agent awaits its listeners: awaiting the write here is what paces pi to wizard's reading.
session.agent.subscribe(async (event) => {
  if (event.type === "message_end" && event.message.role === "assistant") lastAssistant = event.message;
  // Tool calls run one at a time: the next command's sandbox is kept or made once a call has
  // ended (the first's while the model thinks or as its first `bash` call streams:
  // `firstSandboxAhead`), and none is kept while another tool runs (what it changes must be
  // in the next one, and it must not find the sandbox's placeholders in the project).
  if (event.type === "message_update" && event.assistantMessageEvent.type === "toolcall_start") {
    const { partial, contentIndex } = event.assistantMessageEvent;
    if (partial?.content?.[contentIndex]?.name === "bash") void firstSandboxAhead();
  }
  if (event.type === "tool_execution_start" && event.toolName !== "bash") {
    firstAhead = "gone";
    await ahead?.discard();
  }
  if (ahead && event.type === "tool_execution_end") ahead.prepare();
  const line = compact(event);
  if (line !== null) await send(line);
});

function agentEnd(error) {
  return {
    type: "agent_end",
    stopReason: error ? "error" : lastAssistant?.stopReason ?? "stop",
    errorMessage: error ?? lastAssistant?.errorMessage ?? null,
  };
}

function prompt(id, text) {
  let accepted = false;
  lastAssistant = null;
  session
    .prompt(text, {
      preflightResult: (ok) => {
        if (ok) {
          accepted = true;
          void respond(id, true);
        }
      },
    })
    .then(
      () => send(agentEnd(null)),
      (err) => (accepted ? send(agentEnd(err.message)) : respond(id, false, { error: err.message })),
    );
}

async function handle(command) {
  const id = command.id;
  switch (command.type) {
    case "prompt":
      return prompt(id, command.message);
    case "abort":
      await session.abort();
      return respond(id, true);
    case "sandbox_ahead": // the model is thinking (wizard's proxy saw it): the first one now
      void firstSandboxAhead();
      return respond(id, true);
    case "stats": {
      const tokens = session.getSessionStats().tokens ?? {};
      return respond(id, true, { data: { tokens } });
    }
    case "close":
      await session.abort();
      await respond(id, true);
      session.dispose();
      return leave(0);
    default:
      return respond(id, false, { error: `unknown command ${command.type}` });
  }
}

function command(line) {
  let parsed;
  try {
    parsed = JSON.parse(line);
  } catch {
    void respond(null, false, { error: "a command that is not JSON" });
    return;
  }
  handle(parsed).catch((err) => respond(parsed.id, false, { error: err.message }));
}
onLine = command;
early.splice(0).forEach(command);
// stdin closed: wizard is done with this conversation.
stdinEnded = () => session.abort().finally(() => leave(0));
await send({ type: "ready" });
