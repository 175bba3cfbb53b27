'use strict'

const dgram = require('node:dgram')
const net = require('node:net')
const { receiverFor } = require('../protocols/udp')
const ListenError = require('../../exceptions/listen-error')
const InvalidOptionError = require('../../exceptions/invalid-option-error')

/**
 * A balancer's own distribute() or key() cannot be honoured: the kernel
 * picks the worker by the sender's address and port, so no affinity
 * across senders (one call's two directions) holds. `declared`: what the
 * balancer overrides (LoadBalancer#_declared).
 */
function checkChoices (declared, className) {
  if (declared.parts) throw new InvalidOptionError('receive', 'reuseport', `cannot honour a parts() of ${className}, which the master does: in this mode the master sees no datagram`)
  for (const method of ['distribute', 'key']) {
    if (declared[method]) throw new InvalidOptionError('receive', 'reuseport', `cannot honour a ${method}() of ${className}: the kernel picks the worker by the sender's address and port, so no affinity across senders (one call's two directions) holds`)
  }
}

/**
 * The port claimed (ListenError if taken; `ctx.port` becomes the one
 * bound) and what each worker binds.
 */
async function claimListen (ctx, options) {
  try {
    ctx.port = await claimPort(ctx.host, ctx.port)
  } catch (err) {
    throw ListenError.isBindError(err) ? new ListenError(options.protocol, ctx.host, ctx.port, err) : err
  }
  return listenSpec(options, ctx.port)
}

/**
 * receive 'reuseport', the master's side: the workers bind the port, each
 * with SO_REUSEPORT, and the master never reads a datagram.
 *
 * Before they do, the master binds the port once without SO_REUSEPORT and
 * lets it go: a port someone already holds fails the start with
 * ListenError, as in master mode, where the workers' bind would succeed
 * beside another reuseport socket of the same user (a second collector on
 * the port) and share its traffic silently. Port 0 is resolved there, so
 * every worker, and every replacement, binds the same port.
 * @returns {Promise<number>} the port
 */
function claimPort (host, port) {
  const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4')
  return new Promise((resolve, reject) => {
    socket.once('error', (err) => socket.close(() => reject(err)))
    socket.bind(port, host, () => {
      const bound = socket.address().port
      socket.close(() => resolve(bound))
    })
  })
}

/** What each worker is told to bind (lib/shared/ipc.js WORKER_ENV.listen). */
function listenSpec (options, port) {
  const { host, udpReceiver, recvBufferSize, batchDelay, maxInFlight } = options
  return { host, port, udpReceiver, recvBufferSize, batchDelay, maxInFlight }
}

/**
 * The workers' sockets as the LoadBalancer sees a listener: its address,
 * receive path and kernel drops, and close(): every worker closes its own
 * socket (its queue read first) and reports its final counts.
 * @param {import('./worker-pool')} pool
 */
function workersListener (pool, options) {
  return {
    receiver: receiverFor(options.udpReceiver),
    address: () => pool.address(),
    kernelDrops: () => pool.kernelDrops(),
    close: () => pool.unlisten()
  }
}

module.exports = { checkChoices, claimListen, claimPort, listenSpec, workersListener }
