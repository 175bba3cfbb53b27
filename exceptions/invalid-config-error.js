'use strict'
const CollectorError = require('./collector-error')

/**
 * Every problem found in argv/options, reported together.
 * `problems` is an array of `{ flag, message }`.
 */
class InvalidConfigError extends CollectorError {
  constructor (problems) {
    const list = problems.map((p) => (p.flag ? `--${p.flag}: ${p.message}` : p.message))
    // One line for one problem (the CLI prints the message as it is); one line each for several.
    super(list.length === 1 ? `invalid configuration: ${list[0]}` : `invalid configuration:\n  ${list.join('\n  ')}`, 'ERR_INVALID_CONFIG', { problems })
  }
}

module.exports = InvalidConfigError
