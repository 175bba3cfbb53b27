'use strict'

const ipc = require('../shared/ipc')
const { checkReason } = require('../shared/drop-reasons')
const { BatchReader } = require('../shared/batch-codec')
const { messageKey, originRunIdBytes } = require('../shared/batch-ids')
const { OwnSocketIntake } = require('./own-socket-intake')
const { LEVELS } = require('../shared/logger')
const { printable, printableLines } = require('../shared/printable-text')
const { RUNTIME } = require('../shared/symbols') // where a Worker finds the runtime that drives it
const { ProgressToMaster } = require('./progress-to-master')
const { DiskBufferReads } = require('./disk-buffer-reads')
const { HeldSince } = require('./held-since')

const FAILURE_LOG_INTERVAL_MS = 1000
// receive 'reuseport': what the worker's own socket brought reaches the master's counters with the next ACK, or this long after it came.
const RECEIVED_REPORT_MS = 50

/**
 * Runs a Worker instance inside a forked process: processes batches in
 * arrival order, acknowledges them in that order, answers stats requests,
 * and on SHUTDOWN finishes the queue, flushes, closes and reports CLOSED.
 *
 * Acknowledgement: a worker whose `acknowledge` is 'processed' (the default) has a batch acknowledged once doWork
 * returned (or settled) for each of its messages. One that buffers sets it to 'stored' and reports
 * `stored(checkpoint)` when all up to a checkpoint is durable; until then the master keeps the batches.
 *
 * With receive 'reuseport' the worker binds the port itself (`listen()`, lib/worker/reuseport-listener.js):
 * what its socket brings is queued as a batch of its own, processed and acknowledged like one from the
 * master, in the same order, under its own run id and batch ids. Nobody else holds those datagrams, so the
 * ACK only reports them: how many came, how many were refused at the door (queueFull past maxInFlight),
 * how many the kernel dropped, and how many of them are done.
 */
class WorkerRuntime {
  /** worker: the user's Worker; channel: the IPC channel to the master; settings: { minLevel (the master's log level, an index in LEVELS), progressFile (where to say how many batches are finished, else over IPC) } */
  constructor (worker, channel = process, { minLevel = 0, progressFile = null } = {}) {
    this.worker = worker
    this.channel = channel
    // The run id of the origin last seen (a message key takes its run's id
    // from its batch's origin: the same when a later run replays it).
    this.origin = null
    this.runIdBytes = null
    this.queue = [] // BATCH messages not yet processed
    this.running = false
    this.shuttingDown = false
    this.processed = 0
    this.failed = 0
    this.failuresSinceLog = 0
    this.lastFailureLog = 0
    this.idleWaiters = []
    // The master's level (an index in LEVELS): records below it never cross IPC.
    this.minLevel = minLevel
    this.seq = 0 // batches received; the checkpoint of a message is its batch's seq
    this.completed = 0 // every batch up to this seq has been through doWork
    this.storedThrough = 0
    this.progress = new ProgressToMaster(worker, (message) => this.send(message), progressFile)
    this.bufferReads = new DiskBufferReads()
    this.unacked = [] // { seq, processed, failed, dropped } of batches done but not yet acknowledged
    this.batch = null // the batch being processed: { seq, id, origin, redelivered }
    this.index = 0 // of the message being processed, in its batch
    this.dropReason = null
    this.local = null // receive 'reuseport': the worker's own socket and its counts (OwnSocketIntake)
    this.reportTimer = null // receive 'reuseport': when they reach the master, at the latest
    this.held = new HeldSince((message) => this.send(message)) // Worker#heldSince
    worker[RUNTIME] = this
  }

  /** receive 'reuseport': binds the port shared with the other workers (listen: { host, port, udpReceiver, recvBufferSize, batchDelay, maxInFlight }); resolves with its address. */
  async listen (listen) {
    const { openReuseportListener } = require('./reuseport-listener')
    this.local = new OwnSocketIntake(listen.maxInFlight)
    this.local.listener = await openReuseportListener(this, listen, this.createLogger())
    return this.local.listener.address()
  }

  /** Datagrams from the worker's own socket, `buf[0, end)` in batch format (see OwnSocketIntake#admit). */
  receiveEntries (buf, end, count) {
    const message = this.local.admit(buf, end, count)
    if (message !== null) this.enqueue(message)
    if (this.reportTimer === null) this.reportTimer = setTimeout(() => this.reportReceived(), RECEIVED_REPORT_MS)
  }

  // What the socket brought and the kernel dropped since the last report, and `done` of its messages finished; null without one.
  takeReceived (done) {
    if (this.local === null) return null
    clearTimeout(this.reportTimer)
    this.reportTimer = null
    return this.local.take(done)
  }

  reportReceived () {
    this.send([ipc.ACK, 0, 0, 0, null, this.takeReceived(0)])
  }

  /** Closes the worker's own socket (reading its queue empty first) and reports; idempotent. */
  async unlisten () {
    const listener = this.local && this.local.listener
    if (!listener) return
    this.local.listener = null
    await listener.close()
    this.local.kernelDrops = listener.kernelDrops()
    this.reportReceived()
  }

  /** A pino-like logger whose records go to the master's logger. */
  createLogger () {
    const logger = { level: 'info', child: () => logger }
    for (const level of LEVELS) logger[level] = (fields, msg) => this.log(level, fields, msg)
    return logger
  }

  log (level, fields, msg) {
    if (LEVELS.indexOf(level) < this.minLevel) return
    if (typeof fields === 'string') [fields, msg] = [{}, fields]
    if (fields && fields.err instanceof Error) fields = { ...fields, err: { type: fields.err.name, message: printable(fields.err.message), code: fields.err.code, stack: printableLines(fields.err.stack) } } // its text may quote a sender's (a duplicate key)
    this.send([ipc.LOG, level, fields || {}, msg])
  }

  // A send racing the master's death fails with EPIPE; without a callback that is an 'error' event on process,
  // which would kill this worker before it flushes. The error is dropped. Whether it was sent (false: closed).
  send (message, cb = ignoreSendError) {
    const open = this.channel.connected
    if (open) this.channel.send(message, cb)
    else cb()
    return open
  }

  onMessage (message) {
    if (!Array.isArray(message)) return
    switch (message[0]) {
      case ipc.BATCH: return this.enqueue(message)
      case ipc.STATS_REQ: return this.replyStats(message[1])
      case ipc.ROLE: return this.setLeader(Boolean(message[1] && message[1].leader))
      case ipc.HELD_RES: return this.held.answer(message[1], message[2])
      case ipc.WRITE: return this.progress.write()
      case ipc.SHUTDOWN: return this.shutdown()
      case ipc.UNLISTEN: return this.unlisten().then(() => this.send([ipc.UNLISTENED]))
    }
  }

  enqueue (message) { // the BATCH message as it came; run() decodes it in turn
    this.queue.push(message)
    if (!this.running) this.run()
  }

  async run () {
    this.running = true
    while (this.queue.length > 0) {
      if (this.worker.holdsTooMuch) await this.roomForBatch()
      const [, kind, where, count, id, origin, redelivered, receivedAt, local, waits, byteShare] = this.queue.shift()
      const bytes = Buffer.isBuffer(where) ? where : this.readBuffered(where)
      if (bytes === null) return // this worker exits (readBuffered)
      const batch = { seq: ++this.seq, id, origin, redelivered: Boolean(redelivered), processed: 0, failed: 0, dropped: null, local: local ? count : 0 }
      batch.delivery = Object.freeze({ seq: batch.seq, batchId: id, origin, redelivered: batch.redelivered, receivedAt })
      this.batch = batch
      if (origin !== this.origin) {
        this.origin = origin
        this.runIdBytes = originRunIdBytes(origin)
      }
      if (batch.redelivered) await this.prepareRedelivered(bytes, kind, batch.delivery)
      const reader = new BatchReader(bytes, kind, receivedAt)
      this.index = 0
      for (let message = reader.next(); message !== null; message = reader.next(), this.index++) {
        const pending = this.process(message, batch)
        if (pending) await pending
      }
      this.completed = batch.seq
      this.unacked.push(batch)
      if (this.worker.acknowledge !== 'stored') this.storedThrough = batch.seq
      this.acknowledge()
      if (batch.local === 0) this.progress.batchFinished()
      if (waits) this.progress.answerWaits(waits, byteShare)
    }
    this.bufferReads.close()
    this.running = false
    for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  // A worker whose stores hold too much (`holdsTooMuch()`: a database away) takes its next batch once a write made room:
  // the master holds what comes (in flight, then on disk), where the worker refused it. Not at a stop the master asked for;
  // always once it is gone: what an orphan stores after a drop (uncounted) raises the watermark past it (docs/delivery.md).
  async roomForBatch () {
    while ((!this.shuttingDown || this.channel.connected === false) && this.worker.holdsTooMuch()) await new Promise((resolve) => setTimeout(resolve, 50))
  }

  // A batch's bytes where the master wrote them in the disk buffer; null when they cannot be read there:
  // the master is told and this worker exits, so that the master delivers what it held again, with the bytes.
  readBuffered (where) {
    try {
      return this.bufferReads.read(where)
    } catch (err) {
      this.send([ipc.BUFFER_UNREADABLE, `worker cannot read a batch from the disk buffer (${err.message})`], () => process.exit(1))
      return null
    }
  }

  // The worker sees a redelivered batch whole before its first doWork (to read what it needs in one go);
  // a failure there is logged, not fatal: doWork still runs, on its own.
  async prepareRedelivered (bytes, kind, delivery) {
    const reader = new BatchReader(bytes, kind, delivery.receivedAt)
    const messages = []
    for (let message = reader.next(); message !== null; message = reader.next()) messages.push(message)
    try {
      await this.worker.prepareRedelivered(messages, delivery)
    } catch (err) {
      this.log('error', { err }, 'prepareRedelivered failed')
    }
  }

  // A synchronous doWork stays synchronous; a returned promise is awaited before the next message.
  process (message, batch) {
    let result
    this.dropReason = null
    try {
      result = this.worker.doWork(message)
    } catch (err) {
      this.fail(err, batch)
      return null
    }
    if (result && typeof result.then === 'function') {
      return result.then(() => this.done(batch), (err) => this.fail(err, batch))
    }
    this.done(batch)
    return null
  }

  done (batch) {
    if (batch.failedPlaces && batch.failedPlaces.has(this.index)) {
      this.failed++
      batch.failed++
      return
    }
    if (this.dropReason === null) {
      this.processed++
      batch.processed++
      return
    }
    const dropped = batch.dropped || (batch.dropped = {})
    dropped[this.dropReason] = (dropped[this.dropReason] || 0) + 1
  }

  /** The worker refused the message it is processing, by name (counted as dropped, not processed). */
  dropMessage (reason) {
    checkReason(reason, 'dropMessage') // one that cannot be its own fails the message, said so
    this.dropReason = reason
  }

  // Messages of batch `seq` (their places in it) that a store gave up on:
  // failed, each once, instead of processed; one still in doWork when done().
  failMessages (seq, places) {
    const batch = this.batch && this.batch.seq === seq ? this.batch : this.unacked.find((b) => b.seq === seq)
    if (!batch) return
    const failed = batch.failedPlaces || (batch.failedPlaces = new Set())
    for (const place of places) {
      if (failed.has(place)) continue
      failed.add(place)
      if (batch === this.batch && batch.seq > this.completed && place >= this.index) continue // counted when done()
      Object.assign(batch, { processed: batch.processed - 1, failed: batch.failed + 1 })
      this.processed--
      this.failed++
    }
  }

  /** The checkpoint of the message being processed (its batch's seq). */
  checkpoint () {
    return this.batch ? this.batch.seq : 0
  }

  /** Whether every message of `checkpoint`'s batch has been through doWork. */
  finished (checkpoint) {
    return checkpoint <= this.completed
  }

  /** Everything up to `checkpoint` is stored (Infinity: every batch doWork has finished so far). */
  stored (checkpoint) {
    const through = Math.min(checkpoint, this.completed)
    if (through > this.storedThrough) this.storedThrough = through
    this.acknowledge()
  }

  // One ACK for every finished batch up to the stored checkpoint, oldest first: the master's counted in `batches`, the worker's own in `done`.
  acknowledge () {
    const through = Math.min(this.storedThrough, this.completed)
    let n = 0
    let own = 0
    let processed = 0
    let failed = 0
    let dropped = null
    while (n < this.unacked.length && this.unacked[n].seq <= through) {
      const batch = this.unacked[n++]
      own += batch.local
      processed += batch.processed
      failed += batch.failed
      if (batch.dropped) dropped = mergeCounts(dropped || {}, batch.dropped)
    }
    if (n === 0) return
    const ownBatches = own > 0 ? this.unacked.slice(0, n).filter((batch) => batch.local > 0).length : 0
    this.unacked.splice(0, n)
    this.progress.acked += n - ownBatches
    this.send([ipc.ACK, n - ownBatches, processed, failed, dropped, this.takeReceived(own), this.progress.finished, this.progress.held()])
  }

  /** Identity of the message being processed, stable across redelivery: 12 bytes (an ObjectId's worth) from the master's run, the batch and the message's place in it. */
  messageKey () {
    return messageKey(this.batch.id, this.runIdBytes, this.index)
  }

  /** The place of the message being processed in its batch (0-based): with its batch id, the order of arrival. */
  messageIndex () {
    return this.index
  }

  /** The batch of the message being processed: `{ seq, batchId, origin, redelivered }` (one object per batch). */
  delivery () {
    return this.batch ? this.batch.delivery : null
  }

  fail (err, batch) {
    this.failed++
    if (batch) batch.failed++
    this.failuresSinceLog++
    const now = Date.now()
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return
    this.log('error', { err, failures: this.failuresSinceLog }, `doWork failed: ${printable(String(err && err.message !== undefined ? err.message : err).split('\n')[0])}`) // what went wrong on the line itself (QA: only in err.message)
    this.lastFailureLog = now
    this.failuresSinceLog = 0
  }

  async replyStats (requestId) {
    if (this.local !== null) this.reportReceived()
    let custom = null
    try {
      custom = await this.worker.stats()
    } catch (err) {
      custom = { error: err.message }
    }
    this.send([ipc.STATS_RES, requestId, { processed: this.processed, failed: this.failed, ...custom }])
  }

  setLeader (isLeader) {
    this.worker.leader = isLeader
    try {
      const result = this.worker.onLeader(isLeader)
      if (result && typeof result.catch === 'function') result.catch((err) => this.log('error', { err }, 'onLeader failed'))
    } catch (err) {
      this.log('error', { err }, 'onLeader failed')
    }
  }

  idle () {
    if (!this.running && this.queue.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  // The master is gone: nobody will kill this worker, so finishing what it was given is bounded by its orphanTimeout
  // (also when a stop the master asked for is under way); then flush, close, exit. Batches still wait for room (roomForBatch).
  orphaned () {
    const ms = Number.isFinite(this.worker.orphanTimeout) && this.worker.orphanTimeout >= 0 ? this.worker.orphanTimeout : ipc.ORPHAN_TIMEOUT_MS
    const timer = setTimeout(() => this.stopWaiting(ms), ms)
    this.idle().then(() => clearTimeout(timer))
    return this.shutdown()
  }

  // No channel for a log record now: stderr (the master's, inherited, which PM2 or the terminal still holds).
  stopWaiting (ms) {
    const batches = this.queue.length + (this.running ? 1 : 0)
    process.stderr.write(JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, slot: this.worker.slot, batches, msg: `master gone and ${batches} batch(es) not finished within orphanTimeout (${ms} ms): flushing what is held and exiting; the rest is replayed from the disk buffer by the next run, if it has one` }) + '\n')
    for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  /** Finish everything received, flush, close, report CLOSED, exit. */
  async shutdown () {
    if (this.shuttingDown) return
    this.shuttingDown = true
    await this.unlisten()
    await this.idle()
    await this.step('flush')
    await this.step('close')
    this.send([ipc.CLOSED], () => process.exit(0))
  }

  async step (name) {
    try {
      await this.worker[name]()
    } catch (err) {
      this.log('error', { err }, `${name}() failed`)
    }
  }
}

function ignoreSendError () {}

function mergeCounts (into, counts) {
  for (const key of Object.keys(counts)) into[key] = (into[key] || 0) + counts[key]
  return into
}

module.exports = WorkerRuntime
