'use strict'
const CollectorError = require('./collector-error')

/**
 * A message could not be decoded. `reason` is a short stable token
 * (e.g. 'bad-version', 'truncated') used as the key of the malformed
 * counters, so operators can see *why* input is rejected.
 */
class DecodeError extends CollectorError {
  constructor (reason, message) {
    super(message || reason, 'ERR_DECODE', { reason })
  }
}

module.exports = DecodeError
