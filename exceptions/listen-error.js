'use strict'
const CollectorError = require('./collector-error')

const CAUSES = Object.freeze({
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'address not available on this host',
  ENOTFOUND: 'host name not found'
})

/**
 * The listener could not bind when the collector started: the one error a
 * retry cannot fix by itself, so start() fails at once. `cause` is the
 * socket's error.
 */
class ListenError extends CollectorError {
  constructor (protocol, host, port, cause) {
    const code = cause && cause.code
    const why = CAUSES[code] || (cause && cause.message) || 'unknown error'
    super(`cannot listen on ${host}:${port} (${protocol}): ${why}${code ? ` (${code})` : ''}`, 'ERR_LISTEN', { protocol, host, port, cause, syscallCode: code })
  }

  /** Whether a first bind failing with `err` should fail the start rather than be retried. */
  static isBindError (err) {
    return Boolean(err && Object.hasOwn(CAUSES, err.code))
  }
}

module.exports = ListenError
