'use strict'

const dgram = require('node:dgram')
const dns = require('node:dns/promises')
const net = require('node:net')
const { setImmediate: nextTurn } = require('node:timers/promises')
const NativeUdpSocket = require('./native-udp-socket')
const { dgramKernelDrops } = require('./udp-kernel-drops')

// Closing a UDP socket discards what the kernel still holds for it, which
// was received (the sender is done with it) but not yet read. A listener
// reads its queue empty before it closes, within these bounds in case the
// traffic never pauses.
const CLOSE_DRAIN_DATAGRAMS = 1 << 20
const CLOSE_DRAIN_MS = 1000

/**
 * One UDP socket: the master's, or with receive 'reuseport' each worker's
 * (`ctx.reusePort`: the socket shares its port with the other workers',
 * lib/worker/reuseport-listener.js). Two receive paths with one behaviour:
 * - native (`udpReceiver` 'native', or 'auto' when the addon is built):
 *   recvmmsg() batches straight into the master's batch format, handed to
 *   `ctx.dispatchEntries` once per wake-up;
 * - dgram: node:dgram, each datagram dispatched as `{ data, rinfo,
 *   receivedAt }` (receivedAt: Date.now() when JavaScript reads it).
 */
// Datagrams may already wait batchDelay ms to share an IPC message, so
// waiting half of it (1 to HOLDOFF_MAX_MS) in the kernel buffer adds little
// latency and saves most wake-ups when the master is faster than its
// traffic: at 10,000 datagrams/s, 5 ms instead of 1 cut the whole
// collector's CPU per message by about 6 % (docs/benchmarks.md).
const HOLDOFF_MAX_MS = 5
function holdoffOf (batchDelay) {
  return Math.min(batchDelay, HOLDOFF_MAX_MS, Math.max(1, Math.floor(batchDelay / 2)))
}

async function start (ctx) {
  return receiverFor(ctx.options.udpReceiver) === 'native' ? startNative(ctx) : startDgram(ctx)
}

/** The receive path a `udpReceiver` option gives here: 'native' or 'dgram'. */
function receiverFor (mode) {
  return mode === 'native' || (mode === 'auto' && NativeUdpSocket.available) ? 'native' : 'dgram'
}

// A host name resolves as dgram resolves it: IPv4 unless the host is an
// IPv6 address.
async function startNative (ctx) {
  const ipv6 = net.isIPv6(ctx.host)
  const host = net.isIP(ctx.host) ? ctx.host : (await dns.lookup(ctx.host, { family: 4 })).address
  const socket = new NativeUdpSocket({
    host,
    port: ctx.port,
    ipv6,
    recvBufferSize: ctx.options.recvBufferSize,
    reusePort: Boolean(ctx.reusePort),
    holdoffMs: holdoffOf(ctx.options.batchDelay)
  })
  socket.on('error', (err) => ctx.fail(err))
  socket.start((buffer, count, bytes) => ctx.dispatchEntries(buffer, bytes, count))
  const kernelDrops = () => socket.counters().kernelDrops
  return listenerOf(socket, 'native', kernelDrops, async () => { socket.drain(CLOSE_DRAIN_DATAGRAMS) })
}

async function startDgram (ctx) {
  const type = net.isIPv6(ctx.host) ? 'udp6' : 'udp4'
  const socket = dgram.createSocket({ type, reusePort: Boolean(ctx.reusePort) })
  let seen = 0
  const receive = datagramReceiver(ctx)
  socket.on('message', (data, rinfo) => {
    seen++
    receive(data, rinfo)
  })
  await bind(socket, ctx)
  socket.on('error', (err) => ctx.fail(err))
  setBufferSize(socket, ctx.options.recvBufferSize, ctx.logger)
  // dgram cannot read on demand, but each turn of the event loop polls the
  // socket and reads what is queued. The first immediate may run in the turn
  // already under way, before its poll; between two immediates there is
  // always one poll. So two turns that bring nothing new mean the queue is
  // empty.
  const drain = async () => {
    const deadline = Date.now() + CLOSE_DRAIN_MS
    let quiet = 0
    while (quiet < 2 && Date.now() < deadline) {
      const before = seen
      await nextTurn()
      quiet = seen === before ? quiet + 1 : 0
    }
  }
  return listenerOf(socket, 'dgram', dgramKernelDrops(socket, type), drain)
}

// Chosen once: without `allow` a datagram costs no lookup. With it, one
// from elsewhere is dropped before distribution (dropped.notAllowed).
function datagramReceiver (ctx) {
  const dispatch = (data, rinfo) => { if (!ctx.dispatch({ data, rinfo, receivedAt: Date.now() })) ctx.dropRefused() }
  const allowList = ctx.allowList
  if (!allowList) return dispatch
  return (data, rinfo) => {
    if (allowList.allows(rinfo.address)) return dispatch(data, rinfo)
    ctx.drop('notAllowed')
    ctx.logNotAllowed('datagram', rinfo.address)
  }
}

// `kernelDrops()`: datagrams the kernel discarded for this socket so far
// (its receive buffer was full); read once more before close, it keeps
// answering with that last count afterwards.
function listenerOf (socket, receiver, kernelDrops, drain) {
  return {
    socket,
    receiver,
    kernelDrops,
    address: () => socket.address(),
    close: async () => {
      await drain().catch(() => {})
      kernelDrops()
      await new Promise((resolve) => socket.close(resolve))
    }
  }
}

function bind (socket, ctx) {
  return new Promise((resolve, reject) => {
    const onError = (err) => {
      socket.close()
      reject(err)
    }
    socket.once('error', onError)
    socket.bind(ctx.port, ctx.host, () => {
      socket.removeListener('error', onError)
      resolve()
    })
  })
}

// A large kernel buffer absorbs bursts while the master is busy; the kernel
// caps it at net.core.rmem_max, which is fine.
function setBufferSize (socket, size, logger) {
  if (!size) return
  try {
    socket.setRecvBufferSize(size)
  } catch (err) {
    logger.warn({ err, size }, 'could not set the UDP receive buffer size')
  }
}

module.exports = { start, receiverFor }
