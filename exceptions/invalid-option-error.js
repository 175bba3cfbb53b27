'use strict'
const CollectorError = require('./collector-error')

/** A programmatic option (constructor argument, registry entry) is wrong. */
class InvalidOptionError extends CollectorError {
  constructor (option, value, expected) {
    super(`option "${option}" ${expected}, got ${describe(value)}`, 'ERR_INVALID_OPTION', { option, value })
    this.expected = expected // what a value of it must be, without the option and the value
  }

  /**
   * An option key nobody declared (a typo): names the closest known key.
   * @param {string} option the key as given
   * @param {string} [closest] the declared key it most likely meant
   */
  /**
   * A problem with a declaration, said without a value ("got ..." would
   * name the sink's kind or the collector, not what is wrong).
   * @param {string} option
   * @param {string} what
   */
  static problem (option, what) {
    const err = new InvalidOptionError(option, undefined, '')
    err.message = `option "${option}": ${what}`
    return err
  }

  static unknown (option, closest) {
    const err = new InvalidOptionError(option, undefined, '')
    err.message = `option "${option}" is unknown${closest ? `; did you mean "${closest}"?` : ''}`
    err.closest = closest
    return err
  }
}

function describe (value) {
  if (typeof value === 'function') return 'a function'
  try { return JSON.stringify(value) } catch { return String(value) }
}

module.exports = InvalidOptionError
