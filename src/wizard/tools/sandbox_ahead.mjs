// One sandbox kept ready for the agent's next command.
//
// Each command the agent runs gets a sandbox of its own, made by the sandbox runtime from the
// run's policy: its own namespaces, mounts, network relays and seccomp filter, all gone when
// the command ends. Making one costs far more than the command usually does (the runtime
// walks the project for the names it must hide, then bubblewrap, two relays and the filter
// start), and none of it depends on the command's text. So as soon as a tool call ends, the
// next command's sandbox is made, around a stub that waits for the command on a socket, while
// the model decides what to do next. The command then only has to be handed over.
//
// What a command may reach stays exactly what a sandbox made at its start would allow:
//
// - a prepared sandbox is taken by one command, never reused; one that is not taken is killed;
// - it is made after the previous tool call ended (tool calls run one at a time), so whatever
//   wizard's tools or the previous command did is in it;
// - what others change meanwhile is caught at hand-over: the runtime's mounts depend on which
//   names exist (`.env` files at any depth, dangerous files, top-level folders), never on
//   what a file holds, and a name that appears, goes or is replaced changes its folder's
//   mtime. The folders the runtime looks into are noted once the sandbox is ready; if any
//   differs at hand-over, the sandbox is thrown away and the command gets a fresh one. A
//   folder changed so recently that a later change could share its timestamp is compared by
//   its listing instead (git's "racily clean" rule);
// - the command starts exactly as before: after the filter, from the same shell (`$BASH`, the
//   path the runtime resolved), with stdin closed, in its folder, with the environment it
//   asked for (a sandbox prepared for another environment or folder is not used).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

// Run by the runtime's shell inside the sandbox, after its filter: say "ready" on fd 3 (a
// socket), take a folder and a command from it, NUL-terminated, close it and become the
// command. fd 3, not stdin: a shell whose stdin is a socket (as Node's pipes are) takes
// itself for one started by ssh and reads the user's ~/.bashrc, and the line outside the
// sandbox must not.
export const STUB = [
  "printf R >&3",
  "IFS= read -r -d '' wizard_dir <&3 || exit 125",
  "IFS= read -r -d '' wizard_command <&3 || exit 125",
  "exec 3>&-",
  'cd -- "$wizard_dir" || exit 126',
  'exec "$BASH" -c "$wizard_command" </dev/null',
].join("\n");
// Timestamps closer than this to when a folder was noted may be shared by a later change.
const RACY_NS = 50_000_000n;
// On a file system that keeps whole seconds only, a second and then some.
const RACY_COARSE_NS = 2_500_000_000n;
const GLOB = /[*?[\]{}]/;
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

/** The folders `roots` names, as they are now (see `watchedRoots`). */
export async function noteFolders(roots) {
  const now = BigInt(Date.now()) * 1_000_000n;
  const noted = new Map(); // folder -> [stamp, listing if racily clean]
  // A folder that is not there is noted too: one made there meanwhile is a change.
  const note = (folder) => {
    const seen = folderStamp(folder);
    if (seen === null) return noted.set(folder, [null, null]) && false;
    const mtime = BigInt(seen.split(":")[0]);
    const margin = mtime % 1_000_000_000n === 0n ? RACY_COARSE_NS : RACY_NS;
    noted.set(folder, [seen, mtime > now - margin ? listing(folder) : null]);
    return true;
  };
  for (const folder of roots.shallow) note(folder);
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
        note(folder);
        continue;
      }
      if (visited.has(real)) continue;
      visited.add(real);
    }
    if (!note(folder)) continue;
    let entries;
    try {
      entries = fs.readdirSync(folder, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const child = path.join(folder, entry.name);
      if (entry.isDirectory()) stack.push([child, false]);
      else if (entry.isSymbolicLink() && folderStamp(child) !== null) stack.push([child, true]);
    }
    // A large tree takes a while: let the host read the model's reply meanwhile.
    if (++walked % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return noted;
}

/** Whether every noted folder is as it was. */
export function unchanged(noted) {
  for (const [folder, [was, list]] of noted) {
    if (folderStamp(folder) !== was) return false;
    if (list !== null && listing(folder) !== list) return false;
  }
  return true;
}

/**
 * A sandbox made ahead for the next command. `sandbox` is the started runtime; `shell` runs
 * each sandboxed line (`{shell, args}`, as pi's own shell runs commands); `prefix` runs before
 * it, outside the sandbox (the command's limits); `roots` are the folders to watch; `env` is
 * the environment the first command is expected to ask for (each later one, the last's).
 */
export class SandboxAhead {
  constructor({ sandbox, shell, prefix, cwd, roots, env }) {
    Object.assign(this, { sandbox, shell, prefix, cwd, roots, env });
    this.current = null; // the prepared sandbox: {child, env, ready (a promise), noted}
    this.generation = 0;
  }

  /** Make the next command's sandbox (throwing away any made before). */
  prepare() {
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
      control.once("data", resolve);
      control.once("end", () => reject(new Error("the sandbox did not start")));
      current.gone.then(() => reject(new Error("the sandbox did not start")));
    });
    current.noted = await noteFolders(this.roots);
  }

  /**
   * Throw away the prepared sandbox, if any; resolves once it is gone and the runtime has
   * removed what it mounted for it (the empty placeholders it made in the project), and one
   * still being wrapped has been given back, unless `wrapping` is false (the host leaving).
   */
  discard({ wrapping = true } = {}) {
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
   * The prepared sandbox, taken for one command in `dir` with `env`, if it is ready and all it
   * saw is as it was; otherwise null (and it is thrown away): the caller wraps afresh.
   */
  async take(dir, env, command) {
    this.env = env;
    const current = this.current;
    if (current === null) return null;
    await current.ready;
    const fits =
      this.current === current &&
      !current.failed &&
      current.child.exitCode === null &&
      dir === this.cwd &&
      !command.includes("\0") &&
      sameEnv(env, current.env) &&
      unchanged(current.noted);
    if (!fits) {
      if (this.current === current) await this.discard();
      return null;
    }
    this.current = null; // taken: its clean-up is the command's
    return new Prepared(current.child);
  }
}

/** A prepared sandbox given one command: pi's local shell's `exec`, on a running process. */
class Prepared {
  constructor(child) {
    this.child = child;
  }

  run(command, dir, { onData, signal, timeout }) {
    const child = this.child;
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const kill = () => killGroup(child.pid);
      const timer = timeout > 0 ? setTimeout(() => ((timedOut = true), kill()), timeout * 1000) : null;
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      const onAbort = () => kill();
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
      child.once("close", (code) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) reject(new Error("aborted"));
        else if (timedOut) reject(new Error(`timeout:${timeout}`));
        else resolve({ exitCode: code });
      });
      child.stdio[3].end(`${dir}\0${command}\0`);
    });
  }
}
