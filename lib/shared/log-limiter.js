'use strict'

// Used in the master (listeners, metrics endpoint): one interval for every
// line a sender can cause, so the docs can state it once (10 s).

/**
 * Log lines about what a sender can cause at any rate (a refused source, a
 * failed handshake): at most one per `intervalMs` for each key; the next
 * line written says how many were held back in between (`suppressed`).
 */
class LogLimiter {
  /** @param {number} [intervalMs] */
  constructor (intervalMs = 10000) {
    this.intervalMs = intervalMs
    this.keys = new Map() // key → { at, suppressed }; keys are the callers' few fixed names
  }

  /**
   * Writes `message` at `level` unless a line for `key` was written less
   * than an interval ago. `fields` may be a function, called only when the
   * line is written, so that a hot path builds no strings for lines held back.
   * @returns {boolean} whether the line was written
   */
  log (logger, level, key, fields, message) {
    const now = Date.now()
    const state = this.keys.get(key)
    if (state !== undefined && now - state.at < this.intervalMs) {
      state.suppressed++
      return false
    }
    const values = typeof fields === 'function' ? fields() : fields
    const suppressed = state === undefined ? 0 : state.suppressed
    logger[level](suppressed > 0 ? { ...values, suppressed } : values, message)
    this.keys.set(key, { at: now, suppressed: 0 })
    return true
  }
}

module.exports = LogLimiter
