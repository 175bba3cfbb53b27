'use strict'

/**
 * Whether a bind address reaches this machine only: `localhost`, 127.0.0.0/8,
 * `::1` or an IPv4-mapped loopback. Anything else (0.0.0.0, `::`, an
 * interface's address, a host name) may be reachable from the network.
 * @param {string} host
 * @returns {boolean}
 */
function isLoopback (host) {
  const h = String(host).toLowerCase()
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\./.test(h)
}

module.exports = { isLoopback }
