'use strict'

const EventEmitter = require('node:events')
const ipc = require('../shared/ipc')
const { KIND_UDP, KIND_TCP, entrySize, writeEntry, remoteOf } = require('../shared/batch-codec')

const BATCH_BYTES = 256 * 1024

/**
 * The master's view of one forked worker: its counters, the batch being
 * filled for it, and every batch it was sent and has not acknowledged yet.
 * Those batches stay here, bytes and all, until the worker says their
 * messages are done (for a storing worker: stored), so a worker that dies
 * loses nothing: the pool hands them to another worker. The messages they
 * hold, plus the batch being filled, are its in-flight count, which
 * `maxInFlight` bounds.
 *
 * Events: 'ack' (after an acknowledgement), 'idle' (in-flight reached 0),
 * 'dropped' (reason, n: messages the worker refused by name), 'ready',
 * 'initFailed' (message), 'closed', 'log', 'stats'.
 */
class WorkerHandle extends EventEmitter {
  /**
   * @param {object} clusterWorker
   * @param {number} slot
   * @param {object} options the balancer's options
   * @param {{ runId: string, next(): number }} batchIds the master's batch identities
   */
  constructor (clusterWorker, slot, { batchSize, batchDelay = 0, maxInFlight }, batchIds) {
    super()
    this.worker = clusterWorker
    this.id = clusterWorker.id
    this.pid = clusterWorker.process.pid
    this.key = `${batchIds.runId}_${clusterWorker.id}`
    this.slot = slot
    this.state = 'starting' // → ready → closing → gone
    this.startedAt = Date.now()
    this.readyAt = 0
    this.batchSize = batchSize
    this.batchDelay = batchDelay
    this.maxInFlight = maxInFlight
    this.batchIds = batchIds
    this.dispatched = 0
    this.processed = 0
    this.failed = 0
    this.inFlight = 0
    this.unacked = [] // batch records sent, oldest first: { id, kind, bytes, count, origin, redelivered, sentAt }
    this.buffer = Buffer.allocUnsafe(BATCH_BYTES)
    this.offset = 0
    this.count = 0
    this.kind = KIND_UDP
    this.flushTimer = null
    this.flushNow = () => this.flush()
    clusterWorker.on('message', (message) => this.onMessage(message))
    // A send to a worker that just died fails later with EPIPE as an 'error'
    // event; unhandled it would kill the master. The exit handler takes the
    // batches back, so the error is only worth a debug line.
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
    if (this.count === 0) this.firstAt = Date.now()
    this.count++
    this.dispatched++
    this.inFlight++
    if (this.count >= this.batchSize) this.flush()
    else if (this.flushTimer === null) {
      this.flushTimer = this.batchDelay > 0 ? setTimeout(this.flushNow, this.batchDelay) : setImmediate(this.flushNow)
    }
  }

  sendAlone (message, remote, kind, size) {
    const bytes = Buffer.allocUnsafe(size)
    writeEntry(bytes, 0, message.data, remote.address, remote.port)
    this.dispatched++
    this.inFlight++
    this.sendBatch(this.newBatch(kind, bytes, 1))
  }

  /** Sends the pending batch, keeping its own copy of the bytes until it is acknowledged. */
  flush () {
    if (this.flushTimer !== null) {
      if (this.batchDelay > 0) clearTimeout(this.flushTimer)
      else clearImmediate(this.flushTimer)
      this.flushTimer = null
    }
    const batch = this.takeBatch()
    if (batch) this.sendBatch(batch)
  }

  takeBatch () {
    if (this.count === 0) return null
    const bytes = Buffer.allocUnsafeSlow(this.offset)
    this.buffer.copy(bytes, 0, 0, this.offset)
    const batch = this.newBatch(this.kind, bytes, this.count, this.firstAt)
    this.offset = 0
    this.count = 0
    return batch
  }

  newBatch (kind, bytes, count, receivedAt = Date.now()) {
    return { id: this.batchIds.next(), kind, bytes, count, origin: this.key, redelivered: false, receivedAt, sentAt: 0, deliveries: 0 }
  }

  sendBatch (batch) {
    batch.sentAt = Date.now()
    this.unacked.push(batch)
    this.send([ipc.BATCH, batch.kind, batch.bytes, batch.count, batch.id, batch.origin, batch.redelivered, batch.receivedAt])
  }

  /** Sends a batch another worker held when it died; it keeps its id and origin. */
  redeliver (batch) {
    batch.redelivered = true
    this.inFlight += batch.count
    this.sendBatch(batch)
  }

  /** Every batch this worker holds, sent or not, taken back (the worker is gone); oldest first. */
  takeUndelivered () {
    const pending = this.takeBatch()
    const batches = this.unacked
    if (pending) {
      pending.sentAt = Date.now()
      batches.push(pending)
    }
    this.unacked = []
    this.inFlight = 0
    return batches
  }

  /** When the oldest batch still waiting for this worker's acknowledgement was sent; 0 if none. */
  oldestSentAt () {
    return this.unacked.length > 0 ? this.unacked[0].sentAt : 0
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
      case ipc.ACK: return this.onAck(message[1], message[2], message[3], message[4])
      case ipc.READY: return this.emit('ready')
      case ipc.INIT_FAILED: return this.emit('initFailed', message[1])
      case ipc.CLOSED: return this.emit('closed')
      case ipc.LOG: return this.emit('log', message[1], message[2], message[3])
      case ipc.STATS_RES: return this.emit('stats', message[1], message[2])
    }
  }

  onAck (batches, processed, failed, dropped) {
    let messages = 0
    for (const batch of this.unacked.splice(0, batches)) messages += batch.count
    this.processed += processed
    this.failed += failed
    this.inFlight -= messages
    if (dropped) for (const reason of Object.keys(dropped)) this.emit('dropped', reason, dropped[reason])
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
  snapshot (now = Date.now()) {
    const oldest = this.oldestSentAt()
    return {
      id: this.id,
      slot: this.slot,
      pid: this.pid,
      state: this.state,
      dispatched: this.dispatched,
      processed: this.processed,
      failed: this.failed,
      inFlight: this.inFlight,
      oldestUnackedMs: oldest ? now - oldest : 0
    }
  }
}

const NO_REMOTE = Object.freeze({ address: '', port: 0 })

module.exports = WorkerHandle
