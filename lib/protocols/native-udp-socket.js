'use strict'

const EventEmitter = require('node:events')
const { OUTPUT } = require('../../native/build')
const { ENTRY_LAYOUT } = require('../shared/batch-codec')

// Datagrams handed over per call into JavaScript are packed in here; 1 MiB
// holds about 4,000 datagrams of 200 bytes and always one of 64 KiB.
const OUT_BYTES = 1024 * 1024

// Loaded on first use: workers and TCP collectors never load it.
let addon
let loadError = null

function load () {
  if (addon === undefined) {
    try {
      addon = require(OUTPUT)
      // Built from an older source (not rebuilt since an upgrade), it would
      // write entries the workers misread.
      if (addon.layout !== ENTRY_LAYOUT) throw new Error(`${OUTPUT} writes batch entries of an older layout; rebuild it (npm install, or node native/build.js)`)
    } catch (err) {
      addon = null
      loadError = err
    }
  }
  return addon
}

/**
 * The master's UDP socket on the native receive path (native/udp_receiver.c):
 * recvmmsg() reads up to 64 datagrams per system call and hands them to
 * JavaScript packed in the batch format, one call per wake-up instead of one
 * per datagram. Same contract as a dgram socket where the master uses one:
 * `address()`, `close(cb)`, an 'error' event when receiving fails.
 */
class NativeUdpSocket extends EventEmitter {
  /** Whether the addon is built and loads; see `unavailableReason()`. */
  static get available () {
    return load() !== null
  }

  static unavailableReason () {
    load()
    return loadError ? loadError.message.split('\n')[0] : null
  }

  /**
   * Binds at once (throws EADDRINUSE and the like, like dgram's bind error).
   * `holdoffMs`: after a wake-up that found few datagrams, wait this long
   * before polling again when the kernel buffer can safely hold what
   * arrives meanwhile (see native/udp_receiver.c); 0 never waits.
   * `reusePort`: SO_REUSEPORT, so that other sockets may bind the port too.
   */
  constructor ({ host, port, ipv6, recvBufferSize, holdoffMs = 0, reusePort = false }) {
    super()
    this.holdoffMs = holdoffMs
    if (load() === null) throw new Error(`the native UDP receiver is not built: ${NativeUdpSocket.unavailableReason()}`)
    this.handle = addon.bind(host, port, ipv6, recvBufferSize, reusePort)
    this.closed = false
  }

  /** Starts receiving: `onEntries(buffer, count, bytes)` gets every datagram, in batch entries from offset 0. */
  start (onEntries) {
    const out = Buffer.allocUnsafe(OUT_BYTES)
    addon.start(this.handle, out, (count, bytes) => onEntries(out, count, bytes), (err) => this.emit('error', err), this.holdoffMs)
  }

  address () {
    return addon.address(this.handle)
  }

  /** Wake-ups, recvmmsg calls, hold-offs and truncated datagrams so far. */
  counters () {
    return addon.stats(this.handle)
  }

  /** Reads what the kernel has queued for the socket now (at most `limit` datagrams), synchronously. */
  drain (limit) {
    return this.closed ? 0 : addon.drain(this.handle, limit)
  }

  close (cb) {
    if (!this.closed) {
      this.closed = true
      addon.close(this.handle)
    }
    if (cb) process.nextTick(cb)
  }
}

module.exports = NativeUdpSocket
