'use strict'

/**
 * Delay before the next attempt: `initial`, then ×`factor` per consecutive
 * failure up to `max` (or `initial`, when that is longer: a first delay
 * asked for is never cut); `reset()` after a success.
 */
class Backoff {
  constructor ({ initial = 5000, factor = 1.5, max = 5 * 60 * 1000 } = {}) {
    this.initial = initial
    this.factor = factor
    this.max = Math.max(max, initial)
    this.failures = 0
  }

  /** The delay for this failure; counts it. */
  next () {
    const delay = Math.min(this.max, Math.round(this.initial * this.factor ** this.failures))
    this.failures++
    return delay
  }

  reset () {
    this.failures = 0
  }
}

module.exports = Backoff
