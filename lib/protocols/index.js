'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

/**
 * The protocol registry. A protocol is `{ start(ctx) → Promise<listener> }`
 * where the listener is `{ address(), close() → Promise }`. `ctx` gives
 * `host`, `port`, `options`, `logger`, `dispatch(message, force) → boolean`
 * (a message `{ data, rinfo | remote, receivedAt }`, receivedAt the epoch ms
 * it arrived, now when absent)
 * (true: a worker took it, counted as received; false: no worker could,
 * nothing is counted and the caller still holds it: it waits for
 * `onCapacity`, as TCP does, or gives it up with `dropRefused()`; `force`:
 * take it past maxInFlight, refused only when no worker is up),
 * `dropRefused()` (a message dispatch refused is thrown away; the master
 * counts it under the reason it knows: `bufferFull` when the disk buffer is
 * full, else `queueFull`: every worker saturated, or none up),
 * `dispatchEntries(buffer, end, count)` (`count` datagrams already packed in the batch
 * format of lib/shared/batch-codec.js; each that no worker can take is
 * dropped and counted as by `dropRefused`), `drop(reason)` (a received
 * message thrown away for a reason of the protocol's own: `oversize`,
 * `badFrame`, `partial`, `notAllowed`), `count(event, reason?)` (e.g. 'connections', or
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
