'use strict'

const MongoWorker = require('./mongo-worker')
const { createSink } = require('./sink-stores')
const { sinkHost } = require('./sink')
const { Refusal, entriesOf } = require('./sink-output')
const DecodeError = require('../exceptions/decode-error')
const { NewKeyLimit } = require('./new-key-limit')
const { KeptState } = require('./kept-state')
const { Tallies } = require('./tallies')
const { DefinitionWarm } = require('./definition-warm')
const { definitionStats, withStoresState } = require('./definition-stats')

/**
 * The worker of a collector definition (lib/collector/define-collector.js):
 * each message is decoded (the definition's pure `decode`, given the
 * message, the settings and its arrival `{ receivedAt, remote }`: when
 * the message arrived, the same when it is delivered again), optionally
 * enriched with state this worker keeps (`enrich`), and handed to every
 * sink, which keeps what it stores until its next write. The
 * acknowledgement is computed here, once, from the sinks: everything older
 * than the oldest checkpoint any sink still holds is stored. A decoder's
 * DecodeError refuses the message (counted in `malformed` and the master's
 * `dropped[reason]`); `tally` counts names a record carries. A sink that
 * holds its `maxBatch` entries has them written at once (hasBacklog).
 *
 * What one message costs is bounded: one that gives more records than the
 * definition's `maxRecords` (from decode, or from enrich) is refused whole
 * (`tooManyRecords`). With `cardinality`, a decoded record whose key is new
 * beyond this worker's share of `maxNewKeysPerMinute` is left out (before
 * enrich and the tallies: it costs no state either), counted in
 * `newKeys.refused`; the message is stored with the records left, and
 * refused (`newKeyLimit`) when none is left. What the sinks hold
 * (heldBytes) the master counts against this worker's share of memoryBudget.
 *
 * Nothing is read on the way in (but `warm`'s at the start): each sink's writes are exactly once by themselves
 * (inserts by message key; updates whose `$inc` is conditional on the batch watermark): a batch delivered again goes as a first one.
 */
// No batch for this long: the input paused, a coalescing sink is written (writePending).
const QUIET_MS = 100
const REFUSED = Symbol('refused') // run()'s answer for a message refused by its reason
const REFUSED_KEEPING = Symbol('refused, its kept state kept') // by a DecodeError with keepState

class DefinitionWorker extends MongoWorker {
  /**
   * @param {object} options the worker options (the collector's `workerOptions`)
   * @param {object} definition the collector's definition (defineCollector)
   * @param {object} settings its workers' settings declaration
   */
  constructor (options, definition, settings) {
    super(options, {}, settings)
    this.definition = definition
    const host = sinkHost(this)
    this.sinks = this.definition.sinks.map((spec) => createSink(spec, this.settings, host))
    this.tallies = new Tallies(this.definition.tally)
    this.counts = { messages: 0, records: 0, malformed: {}, dropped: 0 }
    this.lastBatchAt = 0 // when the latest batch began (contextOf): none for QUIET_MS means input paused
    this.enrichState = this.definition.state ? this.definition.state(this.settings) : {}
    this.newKeys = this.definition.cardinality && this.settings.maxNewKeysPerMinute > 0
      ? new NewKeyLimit({ share: Math.ceil(this.settings.maxNewKeysPerMinute / this.settings.newKeyShares), known: this.settings.maxKnownKeys })
      : null
    this.kept = this.definition.keep ? KeptState.of(this.definition, () => this.heldSince()) : null
    this.warm = DefinitionWarm.of(this.definition, this) // the definition's warm-up of enrichState: messages wait for it
    this.refusal = null // the DecodeError of the message refused last (refusedBy)
    this.refusalFields = () => ({ reason: this.refusal.reason, remote: addressOf(this.context) })
    this.refusalText = () => `refused (${this.refusal.reason}): ${this.refusal.message}`
    // Everything the worker writes and acknowledges through: the sinks, and what the definition
    // keeps, written last (a message delivered again meets a state that has not moved past it).
    this.stores = this.kept ? [...this.sinks, this.kept] : this.sinks
    this.context = {
      mark: null,
      index: 0,
      seq: 0,
      redelivered: false,
      many: false, // the message gave an array of records
      record: 0, // the place of the record being stored among them, as decode gave them
      key: () => this.messageKey(),
      message: { receivedAt: null, remote: null, kept: null, redelivered: false, key: () => this.messageKey() }
    }
  }

  async prepare () {
    for (const store of this.stores) await store.prepare(this.connection.db)
    if (this.warm !== null) await this.warm.start(this.connection.db) // before any write: it reads what was there
  }

  // A message whose scope of kept state this worker has not read yet waits for that read
  // (doWork returns its promise: the runtime holds the next message until it is done).
  doWork (message) {
    if (this.warm !== null && !this.warm.done) return this.warm.ready.then(() => this.doWork(message))
    if (this.kept === null) return this.work(message, null)
    const { scope, ready } = this.kept.scopeReady(message)
    if (ready) return this.work(message, scope)
    return this.readKept(scope).then(() => this.work(message, scope))
  }

  // A scope's kept state, read once the database is there; a failed read is tried again with the flush backoff
  // (the message waits: it cannot be decoded without it, and is not refused for a database that is away).
  async readKept (scope) {
    for (;;) {
      await this.whenPrepared()
      try {
        return await this.kept.load(scope)
      } catch (err) {
        this._onDbError(err, 'kept state read')
        await new Promise((resolve) => setTimeout(resolve, Math.max(50, this.retryAt - Date.now())))
      }
    }
  }

  // The kept state a message changed is kept with it: dropped when it is refused or fails, as the message is.
  work (message, scope) {
    this.counts.messages++
    const context = this.contextOf(message)
    if (scope === null) {
      this.hold(message, context)
      return
    }
    context.message.kept = this.kept.bind(scope, context)
    let kept = false
    try {
      kept = this.hold(message, context)
    } finally {
      this.kept.settle(kept)
    }
  }

  // Decoded, shaped and held by the sinks, or nothing to store: true; false when the message is refused (true if its refusal keeps its kept state).
  hold (message, context) {
    let records = this.run('decode', () => this.definition.decode(message, this.settings, context.message))
    if (records === REFUSED) return false
    if (records === null || records === REFUSED_KEEPING) return true
    if (this.tooMany(records, context)) return false
    context.many = Array.isArray(records)
    let places = null // where each record left stood in decode's answer, when some were left out
    if (this.newKeys) {
      ({ records, places } = this.withKnownKeys(records, context))
      if (records === null) return false
    }
    this.tallies.add(records) // the decoded records taken (before enrich)
    if (this.definition.enrich) {
      const given = records
      records = this.run('enrich', () => this.definition.enrich(records, this.enrichState, context.message))
      if (records === REFUSED) return false
      if (records === null || records === REFUSED_KEEPING) return true
      if (this.tooMany(records, context)) return false
      // An item per record given (an array as long) keeps its record's place, else numbered as it comes:
      // a redelivered message takes every key (withKnownKeys), and its items must land where they did.
      if (!Array.isArray(given) || !Array.isArray(records) || records.length !== given.length) places = null
      context.many = context.many || Array.isArray(records)
    }
    const shaped = this.shapeAll(records, context.message)
    if (shaped instanceof Refusal) return this.refused(shaped, context)
    if (!this.hasRoomFor(shaped)) return this.drop()
    this.acceptAll(shaped, places, context)
    if (this.hasBacklog()) this.flushSoon()
    return true
  }

  // decode or enrich: its answer, null when there is nothing to store, or
  // REFUSED (REFUSED_KEEPING) for a DecodeError returned or thrown (the message is refused by its reason).
  run (hook, fn) {
    let out
    try {
      out = fn()
    } catch (err) {
      if (!err || typeof err.reason !== 'string') throw err
      return this.refusedBy(err)
    }
    if (out instanceof DecodeError) return this.refusedBy(out)
    // A definition's mistakes, failing the message (`failed`, logged) rather
    // than storing nothing, or a Promise, as if that were what it gave.
    if (out === undefined) throw new TypeError(`${hook} returned undefined: return null when a message has nothing to store (a missing return?)`)
    if (out !== null && typeof out.then === 'function') throw new TypeError(`${hook} returned a Promise: decode and enrich are synchronous (state a message needs read first: keep)`)
    return out
  }

  // Every record through every sink's `of` (checked: sink-output.js) before any sink holds one: a
  // definition's mistake (an `of` that throws or gives what its sink cannot store) fails the message
  // whole, nothing of it held. shaped[r * sinks + s]: record r, sink s. A sink's Refusal (what the
  // message carries cannot be stored) is the answer instead.
  shapeAll (records, message) {
    const list = Array.isArray(records) ? records : [records]
    const shaped = new Array(list.length * this.sinks.length)
    for (let r = 0; r < list.length; r++) {
      if (list[r] === null || typeof list[r] !== 'object') throw new TypeError(`decode or enrich gave a record that is ${list[r] === null ? 'null' : `a ${typeof list[r]}`}: a record is an object (null alone, not in an array, stores nothing)`)
      for (let s = 0; s < this.sinks.length; s++) {
        const value = shaped[r * this.sinks.length + s] = this.sinks[s].shape(list[r], message)
        if (value instanceof Refusal) return value
      }
    }
    return shaped
  }

  // The definition refused the message: counted by its reason, and why (its text) and who sent it
  // said once a while per reason (the text was in no log, status or verify report: QA).
  // Nothing is built per refusal unless it is said (a flood of refusals is a hot path).
  refusedBy (err) {
    this.refuse(err.reason)
    this.refusal = err
    this.logAtMost(err.reason, 'info', this.refusalFields, this.refusalText)
    return err.keepState ? REFUSED_KEEPING : REFUSED
  }

  // A sink refused a record by name: the message is dropped, nothing of it held (false: hold's answer).
  refused (refusal, context) {
    this.refuse(refusal.reason)
    this.logAtMost(refusal.reason, 'warn', () => ({ remote: addressOf(context) }), refusal.text)
    return false
  }

  acceptAll (shaped, places, context) {
    const n = this.sinks.length
    for (let r = 0; r * n < shaped.length; r++) {
      context.record = places === null ? r : places[r]
      this.counts.records++
      for (let s = 0; s < n; s++) this.sinks[s].accept(shaped[r * n + s], context)
    }
  }

  // A batch delivered again: a worker that died with it may have stored kept state since this one read it, so each scope is read again.
  async prepareRedelivered (messages, delivery) {
    await super.prepareRedelivered(messages, delivery)
    for (const sink of this.sinks) if (sink.prepareRedelivered) await sink.prepareRedelivered(messages, delivery)
    if (this.kept) this.kept.forgetStored()
  }

  tooMany (records, context) { // more records than the definition's maxRecords: refused whole
    if (!Array.isArray(records) || records.length <= this.definition.maxRecords) return false
    this.refuse('tooManyRecords')
    this.logAtMost('tooManyRecords', 'warn', () => ({ records: records.length, maxRecords: this.definition.maxRecords, remote: addressOf(context) }),
      'a message gave more records than its definition\'s maxRecords: refused whole (dropped.tooManyRecords)')
    return true
  }

  // The records whose keys are known or new within the share
  // (NewKeyLimit#take); the message is refused (newKeyLimit) when none is
  // left. A redelivered message's keys all pass: the worker that died with it decided.
  withKnownKeys (records, context) {
    const refused = this.newKeys.counts.refused
    const taken = this.newKeys.take(records, this.definition.cardinality, addressOf(context), context.redelivered)
    if (this.newKeys.counts.refused > refused) {
      this.logAtMost('newKeyLimit', 'warn', () => ({ maxNewKeysPerMinute: this.settings.maxNewKeysPerMinute, ...this.newKeys.minuteStats(), refused: this.newKeys.counts.refused }),
        'new keys beyond this worker\'s share of maxNewKeysPerMinute: the records bringing them are refused (dropped.newKeyLimit when a message has none left); busiestSource brought the most this minute')
    }
    if (taken.records === null) this.dropMessage('newKeyLimit')
    return taken
  }

  // Whether every sink has room under maxPending for all a message brings it (one entry
  // at least); else it is dropped whole (workerFull), no part held. Kept state has its own bound.
  hasRoomFor (shaped) {
    const n = this.sinks.length
    for (let s = 0; s < n; s++) if (!this.sinks[s].roomFor(Math.max(1, entriesOf(shaped, s, n)), this.settings.maxPending)) return false
    return true
  }

  // One object, refilled per message: the sinks read it synchronously.
  contextOf (message) {
    const context = this.context
    const delivery = this.delivery()
    if (context.mark !== delivery) {
      context.mark = delivery
      this.lastBatchAt = Date.now()
      context.seq = delivery.seq
      context.redelivered = context.message.redelivered = Boolean(delivery.redelivered) // decode's too: it may meet kept state it changed
    }
    // The message's own arrival; one Date for a run of messages of one time
    // (a Date is kept by what a sink holds: never changed once given).
    const receivedAt = message.receivedAt || delivery.receivedAt || Date.now()
    if (context.message.receivedAt === null || +context.message.receivedAt !== Math.floor(receivedAt)) context.message.receivedAt = new Date(receivedAt)
    context.index = this.messageIndex()
    context.message.remote = message.rinfo || message.remote || null
    return context
  }

  // Before each batch (the runtime asks): a sink over half its maxPending, which messages of many records fill long
  // before the master's in-flight bound (in messages), has the batch wait for a write rather than be refused (workerFull).
  holdsTooMuch () {
    const half = Math.ceil(this.settings.maxPending / 2)
    return this.sinks.some((sink) => !sink.roomFor(half, this.settings.maxPending))
  }

  // The bytes its sinks hold of what it took and has not stored (Sink#heldBytes; kept state has its own bound).
  heldBytes () { return this.sinks.reduce((bytes, sink) => bytes + sink.heldBytes, 0) }

  drop () {
    this.counts.dropped++
    this.dropMessage('workerFull')
    this.logAtMost('drop', 'error', { maxPending: this.settings.maxPending, dropped: this.counts.dropped },
      'a message brings more entries than a sink has room for under maxPending (the database away or slower, or one message of many records); dropping it (dropped.workerFull)')
    return false
  }

  // Every sink writes, at once (each is exactly once by itself, so their
  // writes need no order among them: one bulk of each in flight together);
  // the first failure is thrown once the others have tried. The kept state
  // of the messages they write, taken with them (not that of messages
  // processed meanwhile), is written once they all stored theirs, and kept
  // for the next write otherwise: it never runs ahead of the sinks.
  // A sink that coalesces across flushes (Sink.due) waits for its turn
  // unless the master waits for acknowledgements (onMasterWaiting), no
  // batch came for QUIET_MS (input paused: counting since the last write
  // instead, a write that took long had always seen some, and the last
  // lines of a burst waited two more), at stop, and always beside kept
  // state, which must not run ahead of any sink.
  async writePending () {
    await this.batchThrough()
    const now = Date.now()
    const quiet = this.finishing || this.masterWaiting || this.kept !== null || now - this.lastBatchAt >= QUIET_MS
    this.masterWaiting = false
    const due = this.sinks.filter((sink) => sink.due(now, quiet))
    const kept = this.kept ? this.kept.take() : null
    const results = await Promise.allSettled(due.map((sink) => sink.write()))
    const failed = results.find((result) => result.status === 'rejected')
    if (kept !== null && failed) this.kept.putBack(kept)
    else if (kept !== null) await this.kept.write(kept)
    if (failed) throw failed.reason
    // Retried at the next flush when it fails: the sinks' writes stand.
    if (this.kept !== null) await this.kept.touchSeen().catch((err) => this.logAtMost('seen', 'warn', { error: err.message }, `kept state: moving seenAt forward failed (${err.message}); tried again at the next flush`))
  }

  // A write waits while a batch is part way through doWork (a message of it
  // waits for its kept state): written now, the batch's messages before
  // that one would be stored under the batch's watermark, and the $inc of
  // those after it then taken as applied already.
  async batchThrough () {
    if (this.kept === null) return // doWork is synchronous (a first message's wait for warm holds none of its batch before it)
    for (let delivery = this.delivery(); delivery && !this.finished(delivery.seq); delivery = this.delivery()) {
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  hasPending () { return this.stores.some((sink) => sink.size > 0) }

  hasBacklog () { return this.sinks.some((sink) => sink.hasBacklog()) }

  oldestPending () {
    let min = Infinity
    for (const sink of this.stores) min = Math.min(min, sink.oldestPending())
    return min
  }

  abandonPending () {
    const held = this.stores.map((sink) => sink.abandon())
    this.logger.warn({ held, uri: this.uri },
      'database too slow or unavailable at shutdown: what the sinks held is not known stored; the master still has its messages (the slot\'s next worker takes them, or a stop keeps them in the disk buffer or as dead letters); writes not confirmed may still land')
  }

  // A sink with work of its own (streams: the sweeper) hears of leadership and closing.
  onLeader (isLeader) {
    super.onLeader(isLeader)
    for (const sink of this.sinks) sink.onLeader(isLeader)
  }

  // What the sinks write that retention and the budget reach, and the kept state (by when its scope was last in use).
  storageTargets () {
    return this.stores.flatMap((sink) => sink.storageTargets())
  }

  async close () {
    for (const sink of this.sinks) await sink.close()
    await super.close()
  }

  // Beside the watermarks, what the sinks remember and the definition's state (definition-stats.js).
  stateStats () { return withStoresState(super.stateStats(), this) }

  stats () { return definitionStats(this) }
}

function addressOf (context) {
  return context.message.remote ? context.message.remote.address : null
}

module.exports = DefinitionWorker
