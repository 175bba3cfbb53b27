'use strict'

const { createNoopLogger } = require('../lib/shared/logger')

const { RUNTIME } = require('../lib/shared/symbols')
const { ORPHAN_TIMEOUT_MS } = require('../lib/shared/ipc')

/**
 * Base class of a collector's worker. Extend it and override what you need;
 * every hook may return a Promise.
 *
 * - `init()`: once, before the first message (connect to the database…).
 * - `doWork(message)`: per message. UDP: `{ data: Buffer, rinfo,
 *   receivedAt }`; TCP: `{ data: Buffer, remote: { address, port },
 *   receivedAt }`; receivedAt: when the message arrived (epoch ms; the
 *   kernel's time, with a sub-ms fraction, on the native UDP path), the
 *   same when it is delivered again. A throw (or rejection) is counted as
 *   failed and logged; the worker keeps going.
 * - `flush()`: on stop and before a rolling restart replaces this worker:
 *   write out anything buffered.
 * - `close()`: last; release resources (close the database last of all).
 * - `stats()`: extra counters, reported per worker in the master's stats().
 * - `onLeader(isLeader)`: exactly one worker of a collector is the leader
 *   at any time (for singleton jobs such as sweeping idle streams).
 *
 * When the master dies, a worker finishes the batches it was given, then
 * flush(), close() and exits; `this.orphanTimeout` (ms, default 60,000)
 * bounds the first step, so a doWork that never settles (a hung call, a
 * database that stays away) cannot keep a masterless worker alive: past
 * it the worker flushes what it holds and exits, and what it did not
 * finish is the next run's to replay from the disk buffer, if it has one.
 *
 * The runtime sets `this.logger` (forwarded to the master's logger),
 * `this.slot`, `this.collectorName` and `this.leader`.
 *
 * Acknowledgement (docs/delivery.md): the master keeps every message until
 * its worker acknowledges it, and hands what a dead worker held to another.
 * By default a message is acknowledged when `doWork` returns (or its
 * promise settles). A worker that buffers and writes later sets
 * `this.acknowledge = 'stored'`, takes `this.checkpoint()` while it holds a
 * message, and calls `this.stored(checkpoint)` once everything up to that
 * checkpoint is durable (`this.stored(Infinity)`: everything it was given).
 * `messageKey()` names the message being processed (12 bytes, the same
 * when it is redelivered); `delivery()` tells its batch: `{ seq, batchId,
 * origin, redelivered, receivedAt }` (redelivered: a worker holding it died,
 * so part of its effects may be stored already; `origin` names the worker it
 * was first given to; `receivedAt`: when the batch's first message
 * arrived, epoch ms; each message has its own); `dropMessage(reason)` refuses it by name (counted in the
 * master's `dropped`). `prepareRedelivered(messages, delivery)` is called
 * with the whole of a redelivered batch before its first doWork, to read
 * in one query what deciding each message would otherwise read one by one.
 */
class Worker {
  constructor (options = {}) {
    this.options = options
    this.logger = createNoopLogger()
    this.slot = 0
    this.collectorName = ''
    this.leader = false
    /** 'processed' (acknowledge when doWork returns) or 'stored' (when you call stored()). */
    this.acknowledge = 'processed'
    /** ms a worker whose master died waits for its batches before it flushes and exits. */
    this.orphanTimeout = ORPHAN_TIMEOUT_MS
  }

  /** The checkpoint of the message being processed: pass it to stored() once that message is durable. */
  checkpoint () {
    return this[RUNTIME] ? this[RUNTIME].checkpoint() : 0
  }

  /** Whether every message of `checkpoint`'s batch has been through doWork (its batch is complete). */
  finished (checkpoint) {
    return this[RUNTIME] ? this[RUNTIME].finished(checkpoint) : true
  }

  /** Everything up to and including `checkpoint` is durable (acknowledges it to the master). */
  stored (checkpoint) {
    if (this[RUNTIME]) this[RUNTIME].stored(checkpoint)
  }

  /**
   * When the master received the oldest message it still holds for any
   * worker of this collector (sent and not acknowledged, or waiting): epoch
   * ms; Infinity when it holds none (or the worker runs without a master,
   * as in a unit test); 0 when it cannot say (gone, or no answer in 5 s). A job that concludes from what is stored (the streams'
   * sweeper ending calls) concludes nothing about activity after it: a
   * message received before may still be on its way to storage.
   */
  heldSince () {
    return this[RUNTIME] ? this[RUNTIME].held.ask() : Promise.resolve(Infinity)
  }

  /** 12 bytes naming the message being processed, for good: use it as an idempotent `_id`. */
  messageKey () {
    return this[RUNTIME] ? this[RUNTIME].messageKey() : null
  }

  /** The place of the message being processed in its batch (0-based); batch id and index order messages by arrival at the master. */
  messageIndex () {
    return this[RUNTIME] ? this[RUNTIME].messageIndex() : 0
  }

  /** The batch of the message being processed: `{ seq, batchId, origin, redelivered }`, or null outside doWork. */
  delivery () {
    return this[RUNTIME] ? this[RUNTIME].delivery() : null
  }

  /** Refuses the message being processed: counted in the master's `dropped[reason]`, not processed. */
  dropMessage (reason) {
    if (this[RUNTIME]) this[RUNTIME].dropMessage(reason)
  }

  /**
   * Messages of batch `seq` (a delivery's seq), by their places in it, that
   * a store gave up on (the server refused what they gave for good): each
   * is counted failed instead of processed, once however often named. Only
   * for a batch not acknowledged yet.
   */
  failMessages (seq, places) {
    if (this[RUNTIME]) this[RUNTIME].failMessages(seq, places)
  }

  async init () {}

  /** Before the doWork calls of a redelivered batch: all its messages (a worker that checks what is stored can read it in bulk here). */
  async prepareRedelivered (messages, delivery) {
  }

  async doWork (message) {
    throw new Error(`${this.constructor.name} must implement doWork(message)`)
  }

  async flush () {}

  async close () {}

  stats () {
    return {}
  }

  onLeader (isLeader) {
  }

  /**
   * The master has nearly this worker's share of maxInFlight (or
   * memoryBudget) in flight: it sends little more until acknowledgements
   * come. A worker that acknowledges once stored and holds writes back for
   * a while should write what it holds now. Called after the batch that
   * says so has been through doWork; with heldBytes, not when only
   * memoryBudget is near and it holds under 3/4 of its share of it.
   */
  onMasterWaiting () {
  }

  /**
   * The bytes this worker holds of the messages it took and has not
   * stored, or null (the default): the master then counts, against its
   * share of memoryBudget, every batch it was sent and has not acknowledged
   * as the batch's own bytes. A worker whose messages shrink or grow once
   * decoded (coalesced into a few updates, or held as larger documents)
   * says so here, and the master counts this instead of the bytes of the
   * batches it has been through (lib/master/in-flight-bytes.js). Asked
   * with every acknowledgement and after a batch that says the master
   * waits: keep it cheap.
   */
  heldBytes () {
    return null
  }
}

module.exports = Worker
