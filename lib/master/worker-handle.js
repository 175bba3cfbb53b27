'use strict'

const EventEmitter = require('node:events')
const { whenAny } = require('../shared/when-any')
const ipc = require('../shared/ipc')
const { KIND_UDP } = require('../shared/batch-codec')
const { originOf } = require('../shared/batch-ids')
const { createBatch } = require('./batch')
const { FillingBatch, entryAlone, BATCH_BYTES } = require('./filling-batch')
const { InFlightBytes } = require('./in-flight-bytes')

// While batches wait in the disk buffer, a new one waits this long to fill (not batchDelay):
// latency is moot then, and fuller batches mean fewer records on disk and fewer of them described
// in the master's memory. Kept short: a batch is on disk only once formed, so a master killed
// meanwhile loses the one being filled.
const BACKLOG_BATCH_DELAY_MS = 25

/**
 * The master's view of one forked worker: its counters, the batch being filled for it, and every
 * batch it was sent and has not acknowledged yet. Those batches stay here, bytes and all, until
 * the worker says their messages are done (for a storing worker: stored), so a worker that dies
 * loses nothing: the pool hands them to another worker. The messages they hold, plus the batch
 * being filled, are its in-flight count, which `maxInFlight` bounds.
 *
 * With a disk buffer (`journal`, see journal.js) every batch is appended to it before it is sent,
 * and a batch formed while the worker is full waits in the buffer (`backlog`, its bytes on disk
 * only: `buffered` messages) and is sent, in order, as acknowledgements make room. A batch sent
 * keeps its bytes on disk only as well (read back if it must be delivered again), and the worker
 * is full also once the bytes it holds reach its share of `memoryBudget` (those of the batches it
 * has not taken yet, plus what it says it holds of those it took: in-flight-bytes.js): what the
 * database has not taken waits on disk, not in the worker's memory nor the master's.
 *
 * With receive 'reuseport' the worker receives on its own socket: its ACKs report what came
 * (`received`; counted in `dispatched` and `inFlight` until done: `ownInFlight`, lost if it dies)
 * and its kernel drops.
 *
 * Once the worker is gone, the handle stands for its slot's next worker until that one is ready
 * (with the disk buffer on, see WorkerPool#holders): messages pushed to it form batches as
 * before, written to the buffer and handed to the pool ('held') instead of being sent.
 *
 * A rolling restart's new worker of a slot may wait for the one before it (handover.js): `waiting`.
 *
 * Events: 'ack', 'idle' (in-flight reached 0), 'held' (batch: formed while the worker is gone),
 * 'dropped' (reason, n: messages the worker refused by name), 'received' (messages, bytes, dropped:
 * what its own socket brought), 'ready', 'initFailed' (message, where), 'closed', 'unlistened', 'log', 'stats'.
 */
class WorkerHandle extends EventEmitter {
  /**
   * @param {import('node:cluster').Worker} clusterWorker the forked process (not the user's Worker, which lives in it)
   * @param {number} slot
   * @param {object} options the balancer's options
   * @param {{ runId: string, next(): number }} batchIds the master's batch identities
   * @param {import('./journal').Journal|null} [journal] the disk buffer, if on
   */
  constructor (clusterWorker, slot, { batchSize, batchDelay = 0, maxInFlight, memoryBudget = 0, instances = 1 }, batchIds, journal = null) {
    super()
    this.clusterWorker = clusterWorker
    this.id = clusterWorker.id
    this.pid = clusterWorker.process.pid
    // Stamped on every batch first sent to this worker (not lb.key(), a message's flow key).
    this.origin = originOf(batchIds.runId, clusterWorker.id)
    this.formedFor = Object.freeze({ slot, of: instances }) // its slot, stamped on its batches for a later run's replay
    this.state = 'starting' // → ready → closing → gone
    this.retiring = null // once asked to finish (WorkerPool#retire): the promise of its exit
    this.startedAt = Date.now()
    this.readyAt = 0
    this.batchSize = batchSize
    this.batchDelay = batchDelay
    this.maxInFlight = maxInFlight
    // The slot's share of memoryBudget, with the buffer on (without it, what lies past the budget would be dropped).
    this.bytes = new InFlightBytes(journal !== null && memoryBudget > 0 ? Math.max(1, Math.floor(memoryBudget / instances)) : Infinity)
    this.askedToWrite = false // ipc.WRITE sent since the last acknowledgement
    this.batchIds = batchIds
    this.dispatched = 0
    this.processed = 0
    this.failed = 0
    this.inFlight = 0
    this.ownInFlight = 0 // receive 'reuseport': of inFlight, what the worker received itself
    this.kernelDrops = 0 // receive 'reuseport': its socket's, as last reported
    this.address = null // receive 'reuseport': its socket's
    this.unacked = [] // batches sent, oldest first (see batch.js)
    this.acked = 0 // batches acknowledged, since it started
    this.finished = 0 // batches it has been through (ipc.FINISHED, or acknowledged), since it started
    this.journal = journal
    this.backlog = [] // batches waiting for room, oldest first; sent in this order
    this.buffered = 0 // messages in the backlog
    this.waitingFor = null // the slot's worker before it, still draining (handover.js)
    this.waiting = [] // batches formed meanwhile, oldest first; counted in inFlight
    this.filling = new FillingBatch() // in memory; not the disk buffer
    this.readBytes = null // batches read back from the disk buffer, one at a time (load())
    this.pendingTimer = null
    this.timerIsTimeout = false
    this.sendPendingNow = () => this.sendPending()
    clusterWorker.on('message', (message) => this.onMessage(message))
    // A send to a worker that just died fails later with EPIPE as an 'error'
    // event; unhandled it would kill the master. The exit handler takes the
    // batches back, so the error is only worth a debug line.
    clusterWorker.on('error', (err) => this.emit('log', 'debug', { err }, 'worker channel error'))
  }

  /** Full: at maxInFlight or its share of memoryBudget, or batches wait in the buffer (new ones must queue behind them). */
  get saturated () {
    return this.inFlight >= this.maxInFlight || this.bytes.full || this.backlog.length > 0
  }

  // Whether `batch`, not counted in inFlight yet, may be sent now: it fits
  // under both bounds, or nothing is in flight (a batch larger than a bound
  // still goes, alone).
  fits (batch) {
    return this.inFlight === 0 || (this.inFlight + batch.count <= this.maxInFlight && this.bytes.fits(batch))
  }

  /**
   * Appends a message to the batch; sends it when full, else `batchDelay` ms
   * after its first message (0: at the end of this turn of the event loop).
   * One loop turn reads only a few datagrams, so waiting a millisecond turns
   * many small IPC messages into a few large ones, and IPC per message is
   * most of the master's work.
   */
  push (message) {
    const entry = FillingBatch.entryOf(message)
    if (this.filling.full(entry.kind, entry.size)) this.sendPending()
    if (this.filling.oversize(entry.size)) return this.sendAlone(message, entry)
    this.filling.append(message, entry)
    this.appended()
  }

  /**
   * Appends a datagram already in batch format (`buf[start, end)`, from the
   * native receive path): one copy, nothing decoded.
   */
  pushEntry (buf, start, end) {
    if (this.filling.full(KIND_UDP, end - start)) this.sendPending()
    this.filling.appendEntry(buf, start, end)
    this.appended()
  }

  appended () {
    this.dispatched++
    this.inFlight++
    if (this.filling.count >= this.batchSize) this.sendPending()
    else if (this.pendingTimer === null) {
      const delay = this.backlog.length > 0 || this.state === 'gone' ? BACKLOG_BATCH_DELAY_MS : this.batchDelay
      this.pendingTimer = delay > 0 ? setTimeout(this.sendPendingNow, delay) : setImmediate(this.sendPendingNow)
      this.timerIsTimeout = delay > 0
    }
  }

  sendAlone (message, entry) {
    this.dispatched++
    this.inFlight++
    this.dispatchBatch(this.newBatch(entry.kind, entryAlone(message, entry, entry.size), 1, message.receivedAt))
  }

  /**
   * Sends the batch being filled (if any) over IPC now, keeping its own copy
   * of the bytes until it is acknowledged. Not a Worker's flush(): that one
   * writes to the database, in the worker process.
   */
  sendPending () {
    if (this.pendingTimer !== null) {
      if (this.timerIsTimeout) clearTimeout(this.pendingTimer)
      else clearImmediate(this.pendingTimer)
      this.pendingTimer = null
    }
    // With the disk buffer, the batch lies on disk before this returns
    // (dispatchBatch shelves it): its bytes need no copy of their own.
    const batch = this.takePending(this.journal === null)
    if (batch) this.dispatchBatch(batch)
  }

  // A new batch: into the disk buffer (if on), then to the worker, or into
  // the backlog when the worker is full or others wait before it. A worker
  // that is gone stands for its slot's next one (see WorkerPool#holders):
  // what was formed for it is held for that one ('held').
  dispatchBatch (batch) {
    if (this.journal === null && this.state !== 'gone' && this.waitingFor === null) return this.sendBatch(batch)
    if (this.journal !== null && !this.journal.append(batch)) {
      this.emit('bufferWriteFailed', this.journal.lastWriteError)
      batch.loaded(Buffer.from(batch.bytes)) // kept in memory, then: a copy of its own (sendPending gave a view)
      this.journal.heldUnwritten(batch) // counted as the buffer's: the buffer says full at its bound, and batches are refused
    }
    if (this.state === 'gone') {
      this.inFlight -= batch.count
      batch.shelved()
      return this.emit('held', batch)
    }
    if (this.waitingFor !== null) return this.waiting.push(batch.shelved() || batch)
    this.inFlight -= batch.count
    // The bound pump() keeps: under maxInFlight was not enough, a batch of
    // 4 on top of 8 put 12 in flight past a bound of 10.
    if (this.backlog.length === 0 && this.fits(batch)) {
      this.inFlight += batch.count
      return this.sendBatch(batch)
    }
    this.toBacklog(batch)
    this.pump() // an ack that came while this batch filled could not send the backlog, and none else may come
  }

  // A journaled batch waits with its bytes on disk only; one the buffer
  // could not take keeps them in memory.
  toBacklog (batch) {
    batch.shelved()
    this.backlog.push(batch)
    this.buffered += batch.count
  }

  /**
   * Sends from the backlog while the next batch fits under maxInFlight (or
   * nothing is in flight: a batch larger than the bound still goes, alone);
   * a worker being retired is sent no more. Fitting matters: a storing
   * worker's own bound (maxPending) is often set to maxInFlight, and a batch
   * past it would be refused there (workerFull).
   */
  pump () {
    while (this.backlog.length > 0 && this.state === 'ready' && this.waitingFor === null && this.fits(this.backlog[0])) {
      const batch = this.backlog.shift()
      this.buffered -= batch.count
      if (batch.bytes === null && !this.sendsWhere(batch) && !this.load(batch)) continue
      this.inFlight += batch.count
      this.sendBatch(batch)
    }
    if (this.backlog.length > 0 && this.state === 'ready' && this.bytes.held !== null && !this.askedToWrite) this.askedToWrite = this.send([ipc.WRITE])
  }

  // The bytes of a batch waiting on disk. A segment cut short or removed
  // under a running collector cannot give them back: the batch is dropped,
  // by name (bufferUnreadable), and released.
  load (batch) {
    try {
      // Sent (and shelved) at once: the bytes are read into the same scratch buffer each time.
      if (this.readBytes === null) this.readBytes = Buffer.allocUnsafeSlow(BATCH_BYTES)
      batch.loaded(this.journal.read(batch, this.readBytes))
      return true
    } catch (err) {
      this.journal.release(batch)
      this.emit('bufferReadFailed', err)
      this.emit('dropped', 'bufferUnreadable', batch.count)
      return false
    }
  }

  get slot () { return this.formedFor.slot }

  takePending (copy = true) {
    const taken = this.filling.take(copy)
    return taken === null ? null : this.newBatch(taken.kind, taken.bytes, taken.count, taken.since)
  }

  newBatch (kind, bytes, count, receivedAt = Date.now()) {
    return createBatch(kind, bytes, count, this.batchIds.next(), this.origin, receivedAt, this.formedFor)
  }

  // A batch on its first delivery goes as where it lies in the disk buffer,
  // while workers can read it there; one delivered again goes with its
  // bytes (its worker may have died failing to read them).
  sendsWhere (batch) {
    return batch.at !== null && !batch.redelivered && this.journal.readableByWorkers
  }

  // The IPC message is serialized by send(): a journaled batch's bytes are
  // then kept on disk only (read back should it be delivered again).
  sendBatch (batch) {
    batch.sent()
    this.unacked.push(batch)
    this.bytes.sentBatch(batch)
    this.send([ipc.BATCH, batch.kind, this.sendsWhere(batch) ? this.journal.where(batch) : batch.bytes, batch.count, batch.id, batch.origin, batch.redelivered, batch.receivedAt, false,
      (this.inFlight >= ipc.WAITS_AT * this.maxInFlight ? ipc.WAITS_COUNT : 0) | (this.bytes.near ? ipc.WAITS_BYTES : 0), this.bytes.shareSent])
    batch.shelved()
  }

  /**
   * Takes a batch another worker held when it died, one formed for this
   * slot while no worker was up, or one a previous run left in the disk
   * buffer; it keeps its id and origin, and is marked redelivered if a
   * worker may have seen it. Sent at once when its bytes are at hand,
   * nothing waits before it and it fits under maxInFlight, else it waits
   * its turn in the backlog: batches of one origin stay in order.
   */
  redeliver (batch) {
    if (batch.sentAt > 0) batch.redeliver()
    if (batch.bytes !== null && this.backlog.length === 0 && this.waitingFor === null && this.fits(batch)) {
      this.inFlight += batch.count
      return this.sendBatch(batch)
    }
    this.toBacklog(batch)
    this.pump()
  }

  /**
   * Every batch this worker holds, sent or not, taken back (the worker is
   * gone); oldest first: sent, then waiting in the backlog, then the one
   * being filled (which, with a disk buffer, is appended to it now).
   */
  takeUndelivered () {
    const pending = this.takePending()
    const batches = this.unacked.concat(this.backlog, this.waiting)
    if (pending) {
      if (this.journal !== null && !this.journal.append(pending)) this.emit('bufferWriteFailed', this.journal.lastWriteError)
      batches.push(pending)
    }
    this.unacked = []
    this.backlog = []
    this.waiting = []
    this.buffered = 0
    this.inFlight = 0
    this.bytes.reset()
    this.askedToWrite = false
    return batches
  }

  /** When the oldest batch still waiting for this worker's acknowledgement was sent; 0 if none. */
  oldestSentAt () {
    return this.unacked.length > 0 ? this.unacked[0].sentAt : 0
  }

  send (message) {
    if (this.state === 'gone' || !this.clusterWorker.isConnected()) return false
    try {
      this.clusterWorker.send(message)
      return true
    } catch {
      return false
    }
  }

  onMessage (message) {
    if (!Array.isArray(message)) return
    switch (message[0]) {
      case ipc.ACK: return this.onAck(message[1], message[2], message[3], message[4], message[5], message[6], message[7])
      case ipc.READY:
        this.address = message[1] || null
        return this.emit('ready')
      case ipc.UNLISTENED: return this.emit('unlistened')
      case ipc.INIT_FAILED: return this.emit('initFailed', message[1], message[2], message[3])
      case ipc.CLOSED: return this.emit('closed')
      case ipc.LOG: return this.emit('log', message[1], message[2], message[3])
      case ipc.STATS_RES: return this.emit('stats', message[1], message[2])
      case ipc.HELD_REQ: return this.emit('heldRequest', message[1])
      case ipc.BUFFER_UNREADABLE:
        this.journal.readableByWorkers = false
        return this.emit('log', 'error', { worker: this.id }, `${message[1]}: the worker exits, and batches go to workers with their bytes from now on`)
      case ipc.FINISHED: return this.onFinished(message[1], message[2])
    }
  }

  onAck (batches, processed, failed, dropped, received, taken, held) {
    let messages = 0
    if (received) {
      this.onReceived(received)
      messages += received.done
    }
    const done = this.unacked.splice(0, batches)
    this.bytes.acknowledged(done, this.acked, taken, held, this.unacked)
    if (batches > 0) this.askedToWrite = false
    this.acked += batches
    for (const batch of done) {
      messages += batch.count
      if (this.journal !== null) this.journal.release(batch)
    }
    this.processed += processed
    this.failed += failed
    this.inFlight -= messages
    if (dropped) for (const reason of Object.keys(dropped)) this.emit('dropped', reason, dropped[reason])
    this.pump()
    this.emit('ack')
    if (this.inFlight === 0) this.emit('idle')
  }

  // It has been through `through` batches, and holds `held` bytes of them (ipc.FINISHED): room, maybe, for more.
  onFinished (through, held = null) {
    if (through > this.finished) this.finished = through
    if (held === null) return
    this.bytes.reported(through, held, this.unacked, this.acked)
    this.pump()
  }

  // What the worker's own socket brought (receive 'reuseport'), see ipc.ACK.
  onReceived ({ messages, bytes, dropped, kernelDrops, done }) {
    this.dispatched += messages
    this.inFlight += messages
    this.ownInFlight += messages - done
    this.kernelDrops = kernelDrops
    if (messages > 0 || dropped) this.emit('received', messages, bytes, dropped)
  }

  /** When the oldest message waiting in this worker's backlog was received; 0 if none. */
  oldestBufferedAt () {
    return this.backlog.length > 0 ? this.backlog[0].receivedAt : 0
  }

  /** Resolves once every message sent to this worker is acknowledged (or it is gone). */
  waitIdle () {
    this.sendPending()
    if (this.inFlight === 0 || this.state === 'gone') return Promise.resolve()
    return whenAny(this, ['idle', 'gone'])
  }
}

module.exports = WorkerHandle
