'use strict'

/**
 * The collector entry's exit codes (PM2 restarts on any other non-zero).
 * BAD_USAGE: the flags are wrong; START_FAILED: it could not start under PM2
 * (the port is taken, workers cannot come online): restarting fixes neither,
 * so both are in the launcher's stop_exit_codes.
 */
module.exports = Object.freeze({ OK: 0, FAILED: 1, BAD_USAGE: 2, START_FAILED: 3 })
