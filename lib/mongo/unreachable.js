'use strict'

/**
 * Whether a driver error is a connection-level failure (no server,
 * refused, reset, timed out), as opposed to the server refusing a write:
 * a worker says "unreachable" for one, "failed" for the other.
 * @param {Error|null|undefined} err
 */
function isUnreachable (err) {
  if (!err) return false
  const name = String(err.name || '')
  return /ServerSelection|Network|Timeout|PoolCleared/.test(name) || /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND/.test(String(err.message))
}

module.exports = { isUnreachable }
