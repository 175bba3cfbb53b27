'use strict'
const CollectorError = require('./collector-error')

/** A programmatic option (constructor argument, registry entry) is wrong. */
class InvalidOptionError extends CollectorError {
  constructor (option, value, expected) {
    super(`option "${option}" ${expected}, got ${describe(value)}`, 'ERR_INVALID_OPTION', { option, value })
  }
}

function describe (value) {
  if (typeof value === 'function') return 'a function'
  try { return JSON.stringify(value) } catch { return String(value) }
}

module.exports = InvalidOptionError
