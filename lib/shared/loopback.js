'use strict'

// Used by the master (metrics endpoint) and the embedded database's starter.

const net = require('node:net')

/**
 * Whether a bind address reaches this machine only: `localhost`, 127.0.0.0/8,
 * `::1` or an IPv4-mapped loopback. Anything else (0.0.0.0, `::`, an
 * interface's address, a host name) may be reachable from the network.
 * @param {string} host
 * @returns {boolean}
 */
function isLoopback (host) {
  const h = String(host).toLowerCase()
  return h === 'localhost' || (net.isIP(h) !== 0 && (h === '::1' || /^(::ffff:)?127\./.test(h)))
}

module.exports = { isLoopback }
