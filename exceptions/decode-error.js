'use strict'
const CollectorError = require('./collector-error')
const { checkReason } = require('../lib/shared/drop-reasons')

/**
 * A message could not be decoded. `reason` is a short stable token
 * (e.g. 'bad-version', 'truncated') used as the key of the malformed
 * counters, so operators can see *why* input is rejected.
 */
class DecodeError extends CollectorError {
  /**
   * @param {string} reason
   * @param {string} [message]
   * @param {{ keepState?: boolean }} [options] keepState: the message is
   *   refused, but what it changed in the kept state stays (a NetFlow
   *   datagram's templates, beside data of a template not known yet)
   */
  constructor (reason, message, { keepState = false } = {}) {
    checkReason(reason, 'DecodeError')
    super(message || reason, 'ERR_DECODE', { reason })
    if (keepState) this.keepState = true
  }
}

module.exports = DecodeError
