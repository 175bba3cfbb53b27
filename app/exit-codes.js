'use strict'

const fs = require('node:fs')

/**
 * The collector entry's exit codes (PM2 restarts on any other non-zero).
 * BAD_USAGE: the flags are wrong; START_FAILED: it could not start under PM2
 * (the port is taken, workers cannot come online) while `collector start`
 * waits to report it: restarting fixes neither, so both are in the
 * launcher's stop_exit_codes.
 */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, BAD_USAGE: 2, START_FAILED: 3 })

// Set by the process that starts an app under PM2 and waits for it
// (`collector start`, `collector db start`): its pid and, on Linux, its
// start time, so that a saved environment restored after a reboot (`pm2
// resurrect`) names no process alive, even one given the same pid.
const WAITER_ENV = 'COLLECTOR_START_WAITER'

/** The environment that names this process as the one waiting for the start of the app it is given to. */
function startWaiterEnv () {
  return { [WAITER_ENV]: `${process.pid}:${startTimeOf(process.pid) || ''}` }
}

// Field 22 of /proc/PID/stat: the process's start, in clock ticks since
// boot; null where there is no /proc (or no such process).
function startTimeOf (pid) {
  let stat
  try { stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8') } catch { return null }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || null
}

function waiterAlive (mark) {
  const m = /^(\d+):(\d*)$/.exec(mark || '')
  if (!m) return false
  try { process.kill(Number(m[1]), 0) } catch (err) { if (err.code !== 'EPERM') return false }
  return !m[2] || startTimeOf(Number(m[1])) === m[2]
}

/**
 * The exit code of a start that failed. In a terminal, FAILED. Under PM2,
 * START_FAILED (not restarted) only on the app's first start while the
 * process that started it waits to report it (`collector start`, `collector
 * db start`). Otherwise FAILED: a restart PM2 made after a crash
 * (`restart_time`, PM2's count, set in the app's environment) or a start
 * nobody waits for (`pm2 resurrect` after a reboot, an app started by `pm2
 * start` itself) has nobody to report to, and a cause that passes (the port
 * still held, an address not up yet, the database's JVM killed while it
 * started) must not leave the collector or its database down for good. PM2
 * then tries again with its backoff, up to 15 s apart.
 * @param {NodeJS.ProcessEnv} env
 * @returns {number}
 */
function startFailedCode (env) {
  if (env.pm_id === undefined) return EXIT.FAILED
  if (Number(env.restart_time || 0) > 0) return EXIT.FAILED
  return waiterAlive(env[WAITER_ENV]) ? EXIT.START_FAILED : EXIT.FAILED
}

module.exports = Object.freeze({ ...EXIT, startFailedCode, startWaiterEnv })
