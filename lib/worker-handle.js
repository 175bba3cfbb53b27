'use strict'

const EventEmitter = require('node:events')
const ipc = require('./ipc')
const { KIND_UDP, KIND_TCP, entrySize, writeEntry, forEachMessage, remoteOf } = require('./batch-codec')

const BATCH_BYTES = 256 * 1024

/**
 * The master's view of one forked worker: its counters, the batch being
 * filled for it, and the in-flight count (dispatched, not yet acknowledged)
 * that bounds how much it may hold.
 *
 * Events: 'ack' (after an acknowledgement), 'idle' (in-flight reached 0),
 * 'ready', 'initFailed' (message), 'closed', 'log', 'stats'.
 */
class WorkerHandle extends EventEmitter {
  constructor (clusterWorker, slot, { batchSize, batchDelay = 0, maxInFlight }) {
    super()
    this.worker = clusterWorker
    this.id = clusterWorker.id
    this.pid = clusterWorker.process.pid
    this.slot = slot
    this.state = 'starting' // → ready → closing → gone
    this.startedAt = Date.now()
    this.batchSize = batchSize
    this.batchDelay = batchDelay
    this.maxInFlight = maxInFlight
    this.dispatched = 0
    this.processed = 0
    this.failed = 0
    this.inFlight = 0
    this.buffer = Buffer.allocUnsafe(BATCH_BYTES)
    this.offset = 0
    this.count = 0
    this.kind = KIND_UDP
    this.flushTimer = null
    this.flushNow = () => this.flush()
    clusterWorker.on('message', (message) => this.onMessage(message))
    // A send to a worker that just died fails later with EPIPE as an 'error'
    // event; unhandled it would kill the master. The exit handler accounts
    // for the messages (lost), so the error is only worth a debug line.
    clusterWorker.on('error', (err) => this.emit('log', 'debug', { err }, 'worker channel error'))
  }

  get saturated () {
    return this.inFlight >= this.maxInFlight
  }

  /**
   * Appends a message to the batch; sends it when full, else `batchDelay` ms
   * after its first message (0: at the end of this turn of the event loop).
   * One loop turn reads only a few datagrams, so waiting a millisecond turns
   * many small IPC messages into a few large ones, and IPC per message is
   * most of the master's work.
   */
  push (message) {
    const remote = remoteOf(message) || NO_REMOTE
    const kind = message.rinfo ? KIND_UDP : KIND_TCP
    const size = entrySize(message.data, remote.address)
    if (this.count > 0 && (kind !== this.kind || this.offset + size > this.buffer.length)) this.flush()
    if (size > this.buffer.length) return this.sendAlone(message, remote, kind, size)
    this.kind = kind
    this.offset = writeEntry(this.buffer, this.offset, message.data, remote.address, remote.port)
    this.appended()
  }

  /**
   * Appends a datagram already in batch format (`buf[start, end)`, from the
   * native receive path): one copy, nothing decoded.
   */
  pushEntry (buf, start, end) {
    const size = end - start
    if (this.count > 0 && (this.kind !== KIND_UDP || this.offset + size > this.buffer.length)) this.flush()
    this.kind = KIND_UDP
    buf.copy(this.buffer, this.offset, start, end)
    this.offset += size
    this.appended()
  }

  appended () {
    this.count++
    this.dispatched++
    this.inFlight++
    if (this.count >= this.batchSize) this.flush()
    else if (this.flushTimer === null) {
      this.flushTimer = this.batchDelay > 0 ? setTimeout(this.flushNow, this.batchDelay) : setImmediate(this.flushNow)
    }
  }

  sendAlone (message, remote, kind, size) {
    const buf = Buffer.allocUnsafe(size)
    writeEntry(buf, 0, message.data, remote.address, remote.port)
    this.dispatched++
    this.inFlight++
    this.send([ipc.BATCH, kind, buf, 1])
  }

  /** Sends the pending batch. Advanced serialization copies the bytes, so the buffer is reused. */
  flush () {
    if (this.flushTimer !== null) {
      if (this.batchDelay > 0) clearTimeout(this.flushTimer)
      else clearImmediate(this.flushTimer)
      this.flushTimer = null
    }
    if (this.count === 0) return
    const count = this.count
    const bytes = this.buffer.subarray(0, this.offset)
    this.offset = 0
    this.count = 0
    this.send([ipc.BATCH, this.kind, bytes, count])
  }

  /** Messages batched but not yet sent, taken back (the worker is gone). */
  takeUnsent () {
    const messages = []
    if (this.count > 0) forEachMessage(Buffer.from(this.buffer.subarray(0, this.offset)), this.kind, (m) => messages.push(m))
    this.inFlight -= this.count
    this.dispatched -= this.count
    this.offset = 0
    this.count = 0
    return messages
  }

  send (message) {
    if (this.state === 'gone' || !this.worker.isConnected()) return false
    try {
      this.worker.send(message)
      return true
    } catch {
      return false
    }
  }

  onMessage (message) {
    if (!Array.isArray(message)) return
    switch (message[0]) {
      case ipc.ACK: return this.onAck(message[1], message[2])
      case ipc.READY: return this.emit('ready')
      case ipc.INIT_FAILED: return this.emit('initFailed', message[1])
      case ipc.CLOSED: return this.emit('closed')
      case ipc.LOG: return this.emit('log', message[1], message[2], message[3])
      case ipc.STATS_RES: return this.emit('stats', message[1], message[2])
    }
  }

  onAck (processed, failed) {
    this.processed += processed
    this.failed += failed
    this.inFlight -= processed + failed
    this.emit('ack')
    if (this.inFlight === 0) this.emit('idle')
  }

  /** Resolves once every message sent to this worker is acknowledged (or it is gone). */
  waitIdle () {
    this.flush()
    if (this.inFlight === 0 || this.state === 'gone') return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.removeListener('idle', done)
        this.removeListener('gone', done)
        resolve()
      }
      this.on('idle', done)
      this.on('gone', done)
    })
  }

  /** Counters for stats(). */
  snapshot () {
    return {
      id: this.id,
      slot: this.slot,
      pid: this.pid,
      state: this.state,
      dispatched: this.dispatched,
      processed: this.processed,
      failed: this.failed,
      inFlight: this.inFlight
    }
  }
}

const NO_REMOTE = Object.freeze({ address: '', port: 0 })

module.exports = WorkerHandle
