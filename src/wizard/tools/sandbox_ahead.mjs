// One sandbox kept for the agent's commands, one after another, while it fits.
//
// Each command the agent runs is run by the sandbox runtime from the run's policy: in
// bubblewrap's namespaces and mounts, behind the runtime's network relays, under its seccomp
// filter. Making a sandbox costs far more than most commands (the runtime walks the project
// for the names it must hide, then bubblewrap, two relays and the filter's helper start), and
// none of it depends on the command's text. So a sandbox is made ahead, around a stub that
// waits for a command on a socket, while the model decides what to do next, and is kept for
// the commands after it as long as what it was made from has not changed.
//
// On Linux the runtime's seccomp helper (`apply-seccomp`) is what puts each command in its
// own process and mount namespaces under the filter, and kills whatever the command left when
// it ends. wizard has the runtime start the helper through a launcher of its own
// (`keepingConfig`): for every command the runtime wraps, it runs the helper exactly as the
// runtime would; for the stub, it runs the helper once per command it is handed, from outside
// the filter, where no command can open or trace it (a command runs as root of a user
// namespace of its own, nested below the launcher's). So each command still gets a fresh
// filter, namespaces and limits, and nothing it starts outlives it; only bubblewrap's
// mounts (what a command writes in its in-memory folders, the sandbox's home and /tmp, stays
// there for the next) and the relays are shared. Elsewhere (no helper) the stub runs one
// command and the sandbox ends with it.
//
// What a command may reach stays exactly what a sandbox made at its start would allow:
//
// - a sandbox is made after the previous tool call ended (tool calls run one at a time), so
//   whatever wizard's tools or the previous command did is in it; another tool's call throws
//   it away first;
// - what changes meanwhile, the kept sandbox's own commands included, is caught before each
//   command: the runtime's mounts depend on which names exist (`.env` files at any depth,
//   dangerous files, top-level folders), never on what a file holds, and a name that
//   appears, goes or is replaced changes its folder's mtime. The folders the runtime looks
//   into are noted once the sandbox is ready, and watched (inotify) from then on; if any
//   differs, the sandbox is thrown away and the command gets a fresh one. Only the folders an
//   event named, and those where the walk entered the tree, are compared before a command
//   (`NotedFolders`). A folder changed so recently that a later change could share its
//   timestamp is compared by its listing too (git's "racily clean" rule);
// - the command starts exactly as before: after the filter, from the same shell (the path
//   the runtime resolved), with stdin closed, in its folder, with the environment it asked
//   for (a sandbox prepared for another environment or folder is not used); its errors come
//   with its output, as wizard's own shell has always read them;
// - its end is told by a line only the host can write (a random token it sends with the
//   command, then the exit code): a command cannot end itself early or speak for the next.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { setImmediate as loopTurn } from "node:timers/promises";
import { pathToFileURL } from "node:url";

// Run by the runtime's shell inside the sandbox, after its filter, where no launcher of
// wizard's runs it (see the top): say "ready" on fd 3 (a socket), take a folder, a command and
// the token of its end from it, NUL-terminated, close it and become the command. fd 3, not
// stdin: a shell whose stdin is a socket (as Node's pipes are) takes itself for one started
// by ssh and reads the user's ~/.bashrc, and the line outside the sandbox must not.
export const STUB = [
  "printf R >&3",
  "IFS= read -r -d '' wizard_dir <&3 || exit 125",
  "IFS= read -r -d '' wizard_command <&3 || exit 125",
  "exec 3>&-",
  'cd -- "$wizard_dir" || exit 126',
  'exec "$BASH" -c "$wizard_command" </dev/null',
].join("\n");
const quote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * wizard's launcher of the runtime's seccomp `helper`, which the runtime starts as
 * `launcher SHELL -c COMMAND` after its relays, before the filter. For the stub, it says it
 * keeps ("K") and runs the helper on each folder and command it is handed, their output and
 * errors together, then the command's end token and exit code; for any other command, it is
 * the helper. `-p`: no start-up file or function from the environment runs here.
 */
function launcher(helper) {
  return [
    "#!/bin/bash -p",
    `helper=${quote(helper)}`,
    `if [[ $# -eq 3 && $3 == ${quote(STUB)} ]]; then`,
    "  printf K >&3 || exit 125",
    "  while IFS= read -r -d '' dir <&3 && IFS= read -r -d '' command <&3 &&",
    "      IFS= read -r -d '' end <&3; do",
    '    (cd -- "$dir" || exit 126; exec "$helper" "$1" "$2" "$command") </dev/null 2>&1 3>&-',
    `    printf '%s%d\\n' "$end" "$?"`,
    "  done",
    "  exit 125",
    "fi",
    'exec "$helper" "$@"',
    "",
  ].join("\n");
}

/**
 * The runtime's `config` (its settings) with its seccomp helper started through wizard's
 * launcher, written into a folder of its own in `folder` (one commands may not open: the
 * launcher alone is opened to reading), so that a sandbox made ahead is kept for the commands
 * after it; `entry` is the runtime's. `config` as it is where the runtime starts no helper
 * (not on Linux, Unix sockets allowed, none found) or is told which.
 */
export async function keepingConfig(config, folder, entry) {
  if (process.platform !== "linux" || config.seccomp || config.network?.allowAllUnixSockets) {
    return config;
  }
  const filter = path.join(path.dirname(entry), "sandbox", "generate-seccomp-filter.js");
  const { getApplySeccompBinaryPath } = await import(pathToFileURL(filter).href);
  const helper = getApplySeccompBinaryPath();
  if (!helper) return config;
  const own = path.join(folder, "seccomp");
  const file = path.join(own, "launcher");
  fs.rmSync(own, { recursive: true, force: true });
  fs.mkdirSync(own, { mode: 0o700 });
  fs.writeFileSync(file, launcher(helper), { mode: 0o500, flag: "wx" });
  const filesystem = config.filesystem ?? {};
  const allowRead = [...(filesystem.allowRead ?? []), file];
  return { ...config, seccomp: { applyPath: file }, filesystem: { ...filesystem, allowRead } };
}
// Timestamps closer than this to when a folder was noted may be shared by a later change.
const RACY_NS = 50_000_000n;
// On a file system that keeps whole seconds only, a second and then some.
const RACY_COARSE_NS = 2_500_000_000n;
const GLOB = /[*?[\]{}]/;
// Events after which no watcher's word is trusted: every noted folder is compared again.
const FLOOD = 1024;
// A sandbox thrown away that has not gone this long after its socket closed is killed.
const STUCK_MS = 3_000;

/** Every process group still held by a prepared sandbox, killed if the host exits first. */
const live = new Set();
process.on("exit", () => {
  for (const group of live) killGroup(group);
});

function killGroup(pid) {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // gone already
  }
}

function sameEnv(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/**
 * The folders whose listing the runtime's wrap reads for `config` (its filesystem settings),
 * seen from `cwd`: `/` (every top-level folder not allowed is hidden), the folder of each
 * named path, and every folder below the fixed start of each pattern, through links to
 * folders (as its pattern walk goes), below `cwd` too (its scan for dangerous names).
 */
export function watchedRoots(config, cwd) {
  const { denyRead = [], allowRead = [], allowWrite = [], denyWrite = [] } = config.filesystem ?? {};
  const shallow = new Set(["/"]);
  const deep = new Set([cwd]);
  for (const entry of [...denyRead, ...allowRead, ...allowWrite, ...denyWrite]) {
    const parts = entry.split("/");
    const first = parts.findIndex((part) => GLOB.test(part));
    if (first < 0) shallow.add(entry).add(path.dirname(entry));
    else deep.add(parts.slice(0, first).join("/") || "/");
  }
  return { shallow: [...shallow], deep: [...deep] };
}

/** What a folder is now: its mtime, change time and inode, or null if it is not a folder. */
export function folderStamp(folder) {
  try {
    const info = fs.statSync(folder, { bigint: true });
    return info.isDirectory() ? `${info.mtimeNs}:${info.ctimeNs}:${info.ino}` : null;
  } catch {
    return null;
  }
}

function listing(folder) {
  try {
    const names = fs.readdirSync(folder).sort();
    return names.map((name) => `${name}:${fs.lstatSync(path.join(folder, name)).ino}`).join("/");
  } catch {
    return null;
  }
}

/**
 * The folders the runtime looked into, as they were when a sandbox was made, then watched,
 * so that the check before each command costs next to nothing however large the project is.
 * Once every folder is watched, a folder is compared again (its stamp, and its listing if it
 * changed within a clock tick of the noting) only when the kernel has named it in an event,
 * or where a walk entered the tree (`/`, each named path, each root of a walk, each folder
 * reached through a link), since what such a path leads to can change without an event on
 * it (a folder above it renamed); below, a path changes only with an event on a folder that
 * is watched. Until then every folder is compared, as is each once more when all are watched
 * (a change between a folder's noting and its watch has no event): the watches are set after
 * the sandbox is ready, so that a command given at once does not wait for them.
 *
 * The events are read by Node's loop (`fs.watch`, on the process's one inotify instance): the
 * check first lets the loop read what is queued, which holds every change a command made
 * before it ended (the kernel queues an event as the change is made, and a command's end is
 * told after its last process is gone). A folder that cannot be watched (the user's limit of
 * watches reached, not there) is compared every time, and after a flood of events (which can
 * overflow the kernel's queue, whose lost events no watcher is told of) every folder is.
 */
export class NotedFolders {
  constructor() {
    this.folders = new Map(); // folder -> [stamp, listing if racily clean]
    this.always = new Set(); // the folders compared every time once all are watched
    this.dirty = new Set(); // and those an event named; null: all of them
    this.events = 0;
    this.watchers = [];
    this.watched = false; // every folder watched, and none changed before its watch
    this.watching = null; // resolves once `watched` is settled (`noteFolders`)
    this.closed = false;
    this.now = BigInt(Date.now()) * 1_000_000n;
  }

  /** Note `folder` as it is now (compared every time if `entered` there); whether it is a folder. */
  note(folder, entered) {
    if (entered) this.always.add(folder);
    // A folder that is not there is noted too: one made there meanwhile is a change.
    const seen = folderStamp(folder);
    if (seen === null) {
      this.folders.set(folder, [null, null]);
      return false;
    }
    const mtime = BigInt(seen.split(":")[0]);
    const margin = mtime % 1_000_000_000n === 0n ? RACY_COARSE_NS : RACY_NS;
    this.folders.set(folder, [seen, mtime > this.now - margin ? listing(folder) : null]);
    return true;
  }

  /** Watch every noted folder, a few at a time (the host reads meanwhile), unless closed. */
  async watch() {
    let count = 0;
    for (const folder of this.folders.keys()) {
      if (this.closed) return;
      const changed = () => this.changed(folder);
      try {
        const watcher = fs.watch(folder, { persistent: false }, changed);
        watcher.on("error", changed);
        this.watchers.push(watcher);
      } catch {
        this.always.add(folder);
      }
      if (++count % 64 === 0) await loopTurn();
    }
    this.watched = !this.closed && this.same(this.folders.keys());
  }

  /** An event named `folder` (or its watch failed). */
  changed(folder) {
    if (++this.events >= FLOOD) this.dirty = null;
    this.dirty?.add(folder);
  }

  /** Whether each of `folders` is as noted. */
  same(folders) {
    for (const folder of folders) {
      const [was, list] = this.folders.get(folder);
      if (folderStamp(folder) !== was) return false;
      if (list !== null && listing(folder) !== list) return false;
    }
    return true;
  }

  /** Whether every noted folder is as it was, by the events read so far. */
  unchanged() {
    if (!this.watched || this.dirty === null) return this.same(this.folders.keys());
    return this.same(this.always) && this.same(this.dirty);
  }

  /** `unchanged`, once the loop has read every event already queued: the check before a command. */
  async unchangedNow() {
    await loopTurn();
    return this.unchanged();
  }

  /** No longer watched (idempotent). */
  close() {
    this.closed = true;
    for (const watcher of this.watchers.splice(0)) watcher.close();
  }
}

/**
 * The folders `roots` names, as they are now (see `watchedRoots`); they are watched from then
 * on (`watching` resolves once all are).
 */
export async function noteFolders(roots) {
  const noted = new NotedFolders();
  for (const folder of roots.shallow) noted.note(folder, true);
  // Links to folders are followed once each (by where they lead), as the runtime's walk does.
  const visited = new Set();
  const stack = roots.deep.map((folder) => [folder, true]);
  let walked = 0;
  while (stack.length) {
    const [folder, viaLink] = stack.pop();
    if (viaLink) {
      let real;
      try {
        real = fs.realpathSync(folder);
      } catch {
        noted.note(folder, true);
        continue;
      }
      if (visited.has(real)) continue;
      visited.add(real);
    }
    if (!noted.note(folder, viaLink)) continue;
    let entries;
    try {
      entries = fs.readdirSync(folder, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) stack.push([path.join(folder, entry.name), false]);
      else if (entry.isSymbolicLink()) {
        const child = path.join(folder, entry.name);
        if (folderStamp(child) !== null) stack.push([child, true]);
      }
    }
    // A large tree takes a while: let the host read the model's reply meanwhile.
    if (++walked % 64 === 0) await loopTurn();
  }
  noted.watching = noted.watch();
  return noted;
}

/**
 * The sandbox for the agent's next command, made ahead and kept while it fits. `sandbox` is
 * the started runtime; `shell` runs each sandboxed line (`{shell, args}`, as pi's own shell
 * runs commands); `prefix` runs before it, outside the sandbox (the command's limits); `roots`
 * are the folders to watch; `env` is the environment the first command is expected to ask
 * for (each later one, the last's).
 */
export class SandboxAhead {
  constructor({ sandbox, shell, prefix, cwd, roots, env }) {
    Object.assign(this, { sandbox, shell, prefix, cwd, roots, env });
    // The sandbox: {child, gone, env, ready (a promise), noted, failed, keeps, busy}.
    this.current = null;
    this.generation = 0;
    // A command was taken or a sandbox thrown away (for another tool, or the host leaving):
    // the first sandbox is made ahead only before either (`prepareFirst`).
    this.begun = false;
  }

  /**
   * `prepare` the first command's sandbox, unless a command or another tool has come (each
   * command's end prepares the next; another tool must find no sandbox standing).
   */
  prepareFirst() {
    if (!this.begun && this.current === null) this.prepare();
  }

  /**
   * After a tool call: keep the sandbox for the next command if it can run one and all it
   * saw is as it was; else make another (throwing away the one before).
   */
  prepare() {
    const kept = this.current;
    if (kept?.keeps && !kept.busy && kept.child.exitCode === null && kept.noted?.unchanged()) {
      return;
    }
    const settled = this.discard();
    const generation = ++this.generation;
    const current = { child: null, gone: null, env: this.env, noted: null, failed: false };
    current.ready = settled
      .then(() => this._make(current, generation))
      .catch(() => {
        current.failed = true;
      });
    this.current = current;
  }

  async _make(current, generation) {
    if (generation !== this.generation) throw new Error("discarded");
    const wrapped = await this.sandbox.wrapWithSandbox(STUB);
    if (generation !== this.generation) {
      this.sandbox.cleanupAfterCommand(); // discarded while it was being wrapped
      throw new Error("discarded");
    }
    const child = spawn(this.shell.shell, [...this.shell.args, this.prefix + wrapped], {
      cwd: this.cwd,
      detached: true,
      env: current.env,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    current.child = child;
    // Gone: it and all it held (the sandbox's mounts included) are no more.
    current.gone = new Promise((resolve) => {
      child.once("close", resolve);
      child.once("error", resolve);
    });
    live.add(child.pid);
    child.once("exit", () => live.delete(child.pid));
    const control = child.stdio[3];
    control.on("error", () => {});
    await new Promise((resolve, reject) => {
      control.once("data", (said) => resolve((current.keeps = said[0] === 0x4b))); // "K"
      control.once("end", () => reject(new Error("the sandbox did not start")));
      current.gone.then(() => reject(new Error("the sandbox did not start")));
    });
    const noted = await noteFolders(this.roots);
    current.noted = noted;
    current.gone.then(() => noted.close());
  }

  /**
   * Throw away the sandbox, if any; resolves once it is gone and the runtime has removed
   * what it mounted for it (the empty placeholders it made in the project), and one still
   * being wrapped has been given back, unless `wrapping` is false (the host leaving).
   */
  discard({ wrapping = true } = {}) {
    this.begun = true;
    const current = this.current;
    if (current === null) return Promise.resolve();
    this.current = null;
    this.generation++;
    // A wrap still in progress is given back by `_make` when it sees the generation moved.
    if (current.child === null) return wrapping ? current.ready : Promise.resolve();
    // Closing the socket ends it: the stub reads the end (or cannot say "ready") and exits,
    // and the sandbox winds down as after any command. Not a kill: bubblewrap's init takes a
    // session of its own before it asks to die with its parent, and a kill in between leaves
    // it, and the runtime's network relays with it, running outside the group for good
    // (holding the output pipes, so this never resolved). Killed only if it is stuck.
    current.child.stdio[3].destroy();
    const stuck = setTimeout(() => killGroup(current.child.pid), STUCK_MS);
    return current.gone.then(() => {
      clearTimeout(stuck);
      this.sandbox.cleanupAfterCommand();
    });
  }

  /**
   * The sandbox, taken for one command in `dir` with `env`, if it is ready and all it saw is
   * as it was; otherwise null (and it is thrown away): the caller wraps afresh. What it
   * mounted is the runtime's to remove once it has gone, never after a command it is kept for.
   */
  async take(dir, env, command) {
    this.begun = true;
    this.env = env;
    const current = this.current;
    if (current === null) return null;
    await current.ready;
    const fits =
      this.current === current &&
      !current.failed &&
      !current.busy &&
      current.child.exitCode === null &&
      dir === this.cwd &&
      !command.includes("\0") &&
      sameEnv(env, current.env) &&
      (await current.noted.unchangedNow()) &&
      this.current === current;
    if (!fits) {
      if (this.current === current) await this.discard();
      return null;
    }
    current.busy = true;
    return { run: (...args) => this._run(current, ...args) };
  }

  /** pi's local shell's `exec`, for one command on the running sandbox `current`. */
  _run(current, command, dir, { onData, signal, timeout }) {
    const child = current.child;
    const token = crypto.randomBytes(16).toString("hex");
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const kill = () => killGroup(child.pid);
      const timer = timeout > 0 ? setTimeout(() => ((timedOut = true), kill()), timeout * 1000) : null;
      const onAbort = () => kill();
      const stdout = endOf(token, onData, (code) => {
        stop();
        current.busy = false;
        resolve({ exitCode: code });
      });
      const closed = (code) => {
        stop();
        stdout.flush();
        // Gone with its command (timed out, stopped, or a sandbox that runs one only).
        if (this.current === current) {
          this.current = null;
          this.sandbox.cleanupAfterCommand();
        }
        if (signal?.aborted) reject(new Error("aborted"));
        else if (timedOut) reject(new Error(`timeout:${timeout}`));
        else resolve({ exitCode: code });
      };
      const stop = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        child.stdout.off("data", stdout.write);
        child.stderr.off("data", onData);
        child.off("close", closed);
      };
      child.stdout.on("data", stdout.write);
      child.stderr.on("data", onData);
      child.once("close", closed);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
      child.stdio[3].write(`${dir}\0${command}\0${token}\0`);
    });
  }
}

/**
 * A command's output as it comes, handed to `onData` up to the line that ends it: `token`,
 * then its exit code, given to `ended`. What could be the start of that line is held back
 * until the next chunk says it is not; `flush` hands over what is held.
 */
function endOf(token, onData, ended) {
  const mark = Buffer.from(token);
  let held = Buffer.alloc(0);
  let at = -1; // where the token begins in `held`, once seen
  return {
    write(chunk) {
      held = held.length ? Buffer.concat([held, chunk]) : chunk;
      if (at < 0) {
        at = held.indexOf(mark);
        const keep = at < 0 ? Math.max(held.length - mark.length + 1, 0) : at;
        if (keep > 0) onData(held.subarray(0, keep));
        held = held.subarray(keep);
        if (at < 0) return;
        at = 0;
      }
      const line = held.indexOf(0x0a, mark.length);
      if (line >= 0) ended(Number(held.subarray(mark.length, line).toString()));
    },
    flush() {
      if (held.length && at < 0) onData(held);
      held = Buffer.alloc(0);
    },
  };
}
