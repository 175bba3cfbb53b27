'use strict'

const udp = require('../protocols/udp')
const { entrySize, writeEntry } = require('../shared/batch-codec')

const BATCH_BYTES = 256 * 1024

/**
 * receive 'reuseport': the worker's own UDP socket, bound with
 * SO_REUSEPORT on the port every worker of the collector shares (the
 * kernel picks one socket per 4-tuple). It is the master's listener
 * (lib/protocols/udp.js, native or dgram), given a context that hands what
 * it reads to this worker's runtime instead of to workers: the native path
 * already packs datagrams in batch format; the dgram path packs them here,
 * one batch per turn of the event loop (or per batchSize bytes' worth).
 * A socket error ends the worker, flushing first; the master respawns it
 * and the replacement binds again.
 * @param {import('./worker-runtime')} runtime
 */
async function openReuseportListener (runtime, listen, logger) {
  const packer = new EntryPacker((buf, end, count) => runtime.receiveEntries(buf, end, count), listen.batchDelay)
  const ctx = {
    host: listen.host,
    port: listen.port,
    reusePort: true,
    options: { udpReceiver: listen.udpReceiver, recvBufferSize: listen.recvBufferSize, batchDelay: listen.batchDelay },
    logger,
    allowList: null,
    dispatchEntries: (buf, end, count) => runtime.receiveEntries(buf, end, count),
    dispatch: (message) => packer.push(message),
    dropRefused: () => {},
    fail: (err) => {
      logger.error({ err }, `own UDP socket failed (${err.message}); this worker stops and is respawned`)
      runtime.shutdown()
    }
  }
  let listener
  try {
    listener = await udp.start(ctx)
  } catch (err) {
    err.message = `cannot bind ${listen.host}:${listen.port} (udp, reusePort): ${err.message}`
    throw err
  }
  return { ...listener, close: async () => { await listener.close(); packer.flush() } }
}

// node:dgram gives one datagram per callback: they are packed into batch
// entries and handed over together batchDelay ms after the first (0: at
// the end of the turn), as the master batches for a worker: one turn of
// the event loop reads only a few datagrams, and each batch costs an ACK
// to the master. A UDP datagram, at most 64 KiB, always fits.
class EntryPacker {
  constructor (deliver, delayMs) {
    this.deliver = deliver
    this.delayMs = delayMs
    this.bytes = Buffer.allocUnsafe(BATCH_BYTES)
    this.length = 0
    this.count = 0
    this.timer = null
  }

  push ({ data, rinfo, receivedAt }) {
    const size = entrySize(data, rinfo.address)
    if (this.count > 0 && this.length + size > this.bytes.length) this.flush()
    this.length = writeEntry(this.bytes, this.length, data, rinfo.address, rinfo.port, receivedAt)
    this.count++
    if (this.timer === null) this.timer = this.delayMs > 0 ? setTimeout(() => this.flush(), this.delayMs) : setImmediate(() => this.flush())
    return true
  }

  flush () {
    clearTimeout(this.timer)
    clearImmediate(this.timer)
    this.timer = null
    if (this.count === 0) return
    const { length, count } = this
    this.length = 0
    this.count = 0
    this.deliver(this.bytes, length, count)
  }
}

module.exports = { openReuseportListener }
