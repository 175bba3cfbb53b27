'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

/**
 * The protocol registry. A protocol is `{ start(ctx) → Promise<listener> }`
 * where the listener is `{ address(), close() → Promise }`. `ctx` gives
 * `host`, `port`, `options`, `logger`, `dispatch(message, force) → boolean`
 * (false: every worker is saturated and the disk buffer, if on, is full;
 * `force`: take it past maxInFlight), `dropFull()` (a message refused by
 * dispatch thrown away: counted as `queueFull`, or `bufferFull` with a disk
 * buffer),
 * `dispatchEntries(buffer, end)` (datagrams already packed in the batch
 * format of lib/shared/batch-codec.js; each that no worker can take is dropped
 * and counted), `drop(reason)` (a received message
 * thrown away), `count(event, reason?)` (e.g. 'connections', or
 * ('connectionsRejected', 'perSourceLimit'): counted in `events` and, with a
 * reason, in `eventReasons[event][reason]`), `onCapacity(fn)`
 * (fn runs once when workers have room again) and `fail(error)` (the
 * listener broke after start; the balancer restarts it with backoff).
 *
 * Dispatched messages are `{ data: Buffer, rinfo }` (datagrams) or
 * `{ data: Buffer, remote: { address, port } }` (streams).
 */
const registry = new Map()

function register (name, protocol) {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidOptionError('protocol name', name, 'must be a non-empty string')
  if (!protocol || typeof protocol.start !== 'function') throw new InvalidOptionError(`protocol "${name}"`, protocol, 'must be an object with a start(ctx) function')
  registry.set(name, protocol)
}

function get (name) {
  const protocol = registry.get(name)
  if (!protocol) throw new InvalidOptionError('protocol', name, `must be one of ${[...registry.keys()].join(', ')}`)
  return protocol
}

function has (name) {
  return registry.has(name)
}

function list () {
  return [...registry.keys()]
}

register('udp', require('./udp'))
register('tcp_server', require('./tcp-server'))
register('tcp_client', require('./tcp-client'))

module.exports = { register, get, has, list }
