// wizard's sandbox wrapper: the sandbox runtime started once on one policy, for one run.
//
// `node sandbox_wrap.mjs RUNTIME_ENTRY SETTINGS_FILE` loads the settings file as the runtime's
// own command line does (a missing, empty or invalid file is refused, never replaced by the
// defaults), starts the runtime (its network proxies live as long as this process), writes
// `{"ready": true}`, then answers JSON lines on stdin, one at a time:
//
//   {"id", "op": "wrap", "command", "cwd"}  ->  {"id", "wrapped"}   the command line that
//                                     runs `command` in the sandbox from the folder `cwd`
//   {"id", "op": "cleanup"}          ->  {"id"}             after each wrapped command ends
//
// and, for the sandbox made ahead for the next command and kept for those after it while it
// fits (`sandbox_ahead.mjs`; wizard runs it and hands it each command over a socket):
//
//   {"id", "op": "ahead", "cwd"}     ->  {"id", "wrapped"}   the line of a sandbox that waits
//                                     for its commands (its clean-up, once it has gone, is a
//                                     "cleanup" too)
//   {"id", "op": "note", "cwd"}      ->  {"id"}             once it is ready: the folders the
//                                     runtime looks into, as they are now
//   {"id", "op": "unchanged"}        ->  {"id", "unchanged"} whether they still are (asked
//                                     before each command it is kept for)
//
// wizard runs the wrapped line itself (its own process group, limits and timeout), exactly as
// the runtime's command line would have, without starting Node and the runtime per command.
// The runtime looks for dangerous names below its working folder, so it moves to the
// command's folder before each wrap, where its command line would have been started.
// Closing stdin ends it: it stops the runtime (its proxies and bridges), writes
// `{"left": true}`, and exits.
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import { STUB, keepingConfig, noteFolders, watchedRoots } from "./sandbox_ahead.mjs";

const [entry, settings] = process.argv.slice(2);
const fail = (message) => {
  process.stderr.write(`wizard sandbox wrapper: ${message}\n`);
  process.exit(1);
};
const { SandboxManager } = await import(pathToFileURL(entry).href);
const { loadConfig } = await import(
  pathToFileURL(path.join(path.dirname(entry), "utils", "config-loader.js")).href
);
const loaded = loadConfig(settings);
if (loaded.kind !== "ok") fail(`the settings ${settings} cannot be used (${loaded.kind})`);
// Its seccomp helper started through wizard's launcher, beside the settings (closed to
// commands), so that a sandbox made ahead is kept for the commands after it.
await SandboxManager.initialize(await keepingConfig(loaded.config, path.dirname(settings), entry));

const say = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("close", () => {
  Promise.race([SandboxManager.reset(), new Promise((resolve) => setTimeout(resolve, 2000))]).then(
    () => {
      say({ left: true }); // what is left is Node's own teardown, which wizard need not wait for
      process.exit(0);
    },
  );
});
say({ ready: true });
let noted = null; // the folders as the sandbox made ahead saw them, watched since
for await (const line of lines) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    fail("a request that is not JSON");
  }
  try {
    if (request.op === "wrap") {
      process.chdir(request.cwd);
      say({ id: request.id, wrapped: await SandboxManager.wrapWithSandbox(request.command) });
    } else if (request.op === "ahead") {
      process.chdir(request.cwd);
      say({ id: request.id, wrapped: await SandboxManager.wrapWithSandbox(STUB) });
    } else if (request.op === "note") {
      noted?.close();
      noted = await noteFolders(watchedRoots(loaded.config, request.cwd));
      say({ id: request.id });
    } else if (request.op === "unchanged") {
      say({ id: request.id, unchanged: noted !== null && (await noted.unchangedNow()) });
    } else if (request.op === "cleanup") {
      SandboxManager.cleanupAfterCommand();
      say({ id: request.id });
    } else {
      say({ id: request.id, error: `unknown op ${request.op}` });
    }
  } catch (err) {
    say({ id: request.id, error: err?.message ?? String(err) });
  }
}
