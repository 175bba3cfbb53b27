'use strict'

/**
 * The collector entry's exit codes (PM2 restarts on any other non-zero).
 * BAD_USAGE: the flags are wrong; START_FAILED: it could not start under PM2
 * (the port is taken, workers cannot come online): restarting fixes neither,
 * so both are in the launcher's stop_exit_codes.
 */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, BAD_USAGE: 2, START_FAILED: 3 })

/**
 * The exit code of a start that failed. In a terminal, FAILED. Under PM2,
 * START_FAILED (not restarted) on the app's first start, which `collector
 * start` or `collector db start` waits for and reports; but FAILED when PM2
 * restarted an app that had run (`restart_time`, PM2's count, is set in
 * the app's environment): nobody waits for that start, and a cause that
 * passes (the port still held as the app died, the database's JVM killed
 * while it started) must not leave the collector or its database down for
 * good. PM2 then tries again with its backoff, up to 15 s apart.
 * @param {NodeJS.ProcessEnv} env
 * @returns {number}
 */
function startFailedCode (env) {
  if (env.pm_id === undefined) return EXIT.FAILED
  return Number(env.restart_time || 0) > 0 ? EXIT.FAILED : EXIT.START_FAILED
}

module.exports = Object.freeze({ ...EXIT, startFailedCode })
