'use strict';
// The node-agent's spawn helper: a small Node.js process, forked once by HelperProcessSpawner,
// that starts task processes on the agent's behalf. Starting a process forks the parent, and a
// fork costs time in proportion to the parent's memory: from this process (about 40 MB) it is a
// fraction of what it is from the agent (well over 100 MB with NestJS and its clients loaded).
//
// Plain CommonJS with no imports of ours, so the same file is forked from the TypeScript sources
// (tests) and from dist/ (copied by tools/build.mjs).
//
// IPC (serialization 'advanced'), one task per id:
//   in:  { t: 'spawn', id, command, args, cwd, env }
//   out: { t: 'spawned', id, pid, startTime }      the process runs, as leader of its own group
//        { t: 'out', id, stream, data }            a chunk of its stdout or stderr
//        { t: 'exit', id, code, signal, error }    it ended and its output was drained, or it
//                                                  could not be started (error: message, code)
// Signals go straight from the agent to the process group; this helper only starts and watches.
// When the agent goes away (IPC closed) the helper exits and leaves the tasks' groups running,
// like the agent's own death does; the next agent process deals with them.
const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');

/** How long output is still read after the leader exited (OUTPUT_DRAIN_MS in process-spawner.ts). */
const OUTPUT_DRAIN_MS = 1000;

function startTimeOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

function send(message) {
  if (process.connected) process.send(message);
}

function start({ id, command, args, cwd, env }) {
  let child;
  try {
    child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    send({ t: 'exit', id, code: null, signal: null, error: { message: err.message, code: err.code } });
    return;
  }
  let ended = false;
  const end = (message) => {
    if (ended) return;
    ended = true;
    send({ t: 'exit', id, ...message });
  };
  // The fork happened inside spawn(): the leader (or its zombie) is there to be read.
  if (child.pid !== undefined) send({ t: 'spawned', id, pid: child.pid, startTime: startTimeOf(child.pid) });
  child.stdout.on('data', (data) => send({ t: 'out', id, stream: 'stdout', data }));
  child.stderr.on('data', (data) => send({ t: 'out', id, stream: 'stderr', data }));
  let drainTimer;
  child.once('error', (err) => {
    clearTimeout(drainTimer);
    end({ code: null, signal: null, error: { message: err.message, code: err.code } });
  });
  child.once('exit', (code, signal) => {
    drainTimer = setTimeout(() => {
      child.stdout.destroy();
      child.stderr.destroy();
      end({ code, signal });
    }, OUTPUT_DRAIN_MS);
  });
  child.once('close', (code, signal) => {
    clearTimeout(drainTimer);
    end({ code, signal });
  });
}

process.on('message', (message) => {
  if (message && message.t === 'spawn') start(message);
});
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });
