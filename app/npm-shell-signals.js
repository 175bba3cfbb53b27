'use strict'

// npm (npx, npm exec, npm run, npm start) runs a package's bin through
// `sh -c` and forwards SIGINT and SIGTERM to that shell alone. Debian's and
// Ubuntu's sh (dash) does not exec the command it runs: it stays between
// npm and us, holds a SIGINT until its child exits (trusting that a
// terminal's Ctrl-C reached the child too) and dies of a SIGTERM, leaving
// us running on our own. So a signal sent to npx alone, as a process
// manager, an IDE's stop button or a test harness sends it, never reached a
// collector run through npx. At a terminal Ctrl-C reaches every process of
// the foreground group, us included, and needs none of this.
//
// Where this process runs so (Linux, started by npm, its parent a `-c`
// shell), the shell is watched. It sleeps in wait() for its one child, us:
// woken, it was sent a signal, and the only one npm forwards that it
// catches is SIGINT; gone, a signal ended it. Either is raised here, so the
// process stops as it does when the signal reaches it directly. A SIGINT
// that did reach us directly (the terminal's) is not raised again, and a
// wake-up our own stop and continue caused (Ctrl-Z, `fg`) is not a signal.

const fs = require('node:fs')
const { performance } = require('node:perf_hooks')

const POLL_MS = 200
// A terminal's Ctrl-C, which reaches us too, and our being continued after
// a stop (a SIGCHLD to the shell) wake the shell within milliseconds, but
// not always before the next look at it: wake-ups this close after our own
// SIGINT or SIGCONT are theirs. Taking a Ctrl-C's for a second signal would
// cut the drain short (app/collector-entry.js), hence the longer wait.
const AFTER_SIGINT_MS = 2000
const AFTER_SIGCONT_MS = 1000

/**
 * Watches the shell npm runs this process in, if it does, and raises here
 * the signal that shell was sent. Call it once the process's own SIGINT
 * and SIGTERM handlers are installed, or before in the same tick: it
 * raises from a timer.
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @param {(signal: 'SIGINT'|'SIGTERM') => void} [options.raise] default: sends the signal to this process
 * @param {number} [options.intervalMs=200]
 * @returns {{ watching: boolean, stop: () => void }}
 */
function relayNpmShellSignals ({ env = process.env, raise = (signal) => process.kill(process.pid, signal), intervalMs = POLL_MS } = {}) {
  const shell = process.ppid
  let wakes = isNpmShell(shell, env) ? wakeCount(shell) : null
  if (wakes === null) return { watching: false, stop () {} }
  let ownWakeUntil = -Infinity
  const onSigint = () => { ownWakeUntil = Math.max(ownWakeUntil, performance.now() + AFTER_SIGINT_MS) }
  const onSigcont = () => { ownWakeUntil = Math.max(ownWakeUntil, performance.now() + AFTER_SIGCONT_MS) }
  const stop = () => {
    clearInterval(timer)
    process.removeListener('SIGINT', onSigint)
    process.removeListener('SIGCONT', onSigcont)
  }
  const timer = setInterval(() => {
    const now = process.ppid === shell ? wakeCount(shell) : null
    if (now === null) {
      stop()
      return raise('SIGTERM')
    }
    if (now === wakes) return
    wakes = now
    // A SIGINT or SIGCONT of ours that came with the wake-up is handled in
    // this turn of the event loop's poll phase, before setImmediate runs.
    setImmediate(() => {
      if (performance.now() > ownWakeUntil) raise('SIGINT')
    })
  }, intervalMs)
  timer.unref()
  process.on('SIGINT', onSigint)
  process.on('SIGCONT', onSigcont)
  return { watching: true, stop }
}

// npm says it started us (npm_lifecycle_event: 'npx' for npx and npm exec,
// the script's name for npm run); the parent is a shell given a command.
function isNpmShell (pid, env) {
  if (process.platform !== 'linux' || !env.npm_lifecycle_event) return false
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return argv[1] === '-c'
  } catch {
    return false
  }
}

// How often the process has gone back to sleep: a waiting shell does so
// only after something woke it. null once it is gone.
function wakeCount (pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    const count = (name) => Number((new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status) || [])[1])
    const total = count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches')
    return Number.isFinite(total) ? total : null
  } catch {
    return null
  }
}

module.exports = { relayNpmShellSignals }
