'use strict'

// A real peer (SIPp, tcpdump, sngrep, heplify) run for a test: its last
// output kept for the assertion that reads it, killed when the test ends.

const { spawn } = require('node:child_process')
const { once } = require('node:events')

/** `{ child, output() }`: the process, and the last 20,000 characters it wrote (stdout and stderr). */
function runPeer (t, command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  let output = ''
  for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', (chunk) => { output = (output + chunk).slice(-20000) })
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, output: () => output }
}

/** The peer's exit code, once it has exited. */
async function exitCode (peer) {
  if (peer.child.exitCode !== null) return peer.child.exitCode
  const [code] = await once(peer.child, 'exit')
  return code
}

module.exports = { runPeer, exitCode }
