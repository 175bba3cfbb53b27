'use strict'
const CollectorError = require('./collector-error')

/**
 * Every problem found in argv/options, reported together.
 * `problems` is an array of `{ flag, message }`.
 */
class InvalidConfigError extends CollectorError {
  constructor (problems) {
    const list = problems.map((p) => (p.flag ? `--${p.flag}: ${p.message}` : p.message))
    super(`invalid configuration:\n  ${list.join('\n  ')}`, 'ERR_INVALID_CONFIG', { problems })
  }
}

module.exports = InvalidConfigError
