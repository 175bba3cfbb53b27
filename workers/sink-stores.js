'use strict'

const { UpdateStore } = require('./storage/update-store')
const { CounterStore, counterTarget } = require('./storage/counter-store')
const { counterSchema } = require('./storage/schemas')
const { StreamsSink } = require('./streams-sink')
const { DocumentsSink } = require('./documents-sink')
const { guardsEveryWrite } = require('./storage/write-guard')
const { Sink, HELD_ENTRY_BYTES } = require('./sink')
const { CounterKeyCap } = require('./counter-key-cap')
const { updateProblem, countProblem, cappedCountProblem, checkAll } = require('./sink-output')
const { createIndexes, ageTarget } = require('./sink-collections')

// The counter documents' own index (CounterStore's layout), declared once in schemas.js.
const COUNTER_INDEXES = counterSchema.indexes().map(([key, options]) => ({ key, ...options }))

/**
 * The stores behind a definition's sinks (lib/collector/sinks.js), each
 * keeping the contract of Sink (sink.js, docs/sinks.md). An updates sink:
 * upserts by key (UpdateStore); a sink naming no date field (`expireBy`)
 * is kept whatever the retention.
 */
class UpdatesSink extends Sink {
  // The host's server says whether every counting upsert is guarded (storage/write-guard.js).
  constructor (spec, host = null) {
    super(spec, host)
    this.guardAll = () => guardsEveryWrite(host && host.server)
    this.store = this.createStore(spec)
    this.key = spec.key || '_id'
    this.maxBatch = spec.maxBatch || Infinity
  }

  createStore (spec) {
    return new UpdateStore(null, { what: `${spec.collection} upserts`, key: spec.key, guardAll: this.guardAll, onGivenUp: (entries, refusal) => this.givenUp(entries, refusal) })
  }

  // Upserts the server refused for a reason no state of it changes (a $inc
  // on a field holding text): not written again. The messages that gave them were counted
  // processed and stay so (their other writes are stored); the sink's
  // `refused` counts the upserts, and the log names their keys.
  givenUp (entries, { code, errmsg }) {
    if (!this.host) return
    this.host.logAtMost(`refused:${this.spec.collection}`, 'error', { collection: this.spec.collection, code, errmsg, keys: entries.slice(0, 5).map((entry) => entry.id) },
      `${this.spec.collection} upserts: the server refused ${entries.length} for good (${code}: ${errmsg}); not written again (the sink's refused)`)
  }

  async prepare (db) {
    this.store.collection = db.collection(this.spec.collection)
    await createIndexes(this.store.collection, this.spec.indexes, this.spec.expireBy)
  }

  // By the date field the sink names (`expireBy`), which each upsert moves
  // forward (a last activity) or which never changes (a minute's). A
  // document written before that field existed gets it at the leader's start
  // from `expireFrom` (a minute's own date), else as of then (the kept
  // state's `seenAt`): it expires too, not never.
  storageTargets () {
    return this.spec.expireBy ? [{ ...ageTarget(this.spec), legacy: legacyFrom(this.spec.expireFrom) }] : []
  }

  shape (record, message) {
    return checkAll(listOf(this.spec.of(record, message)), updateProblem, this.spec, this.key)
  }

  accept (updates, context) {
    for (const u of updates) {
      const latest = u.last ? lastValues(u.last, [context.mark.batchId, context.index]) : undefined
      this.store.update(u[this.key], { inc: u.inc, min: u.min, max: u.max, latest, set: u.set }, context.mark, u.setOnInsert || null)
    }
  }

  get size () { return this.store.size }
  get heldBytes () { return this.store.held * HELD_ENTRY_BYTES } // those of a write in progress too
  hasBacklog () { return this.size >= this.maxBatch }
  // `taken`: what take() took earlier (by default, what is pending now).
  write (taken) { return this.store.flush(taken) }
  take () { return this.store.take() }
  putBack (taken) { this.store.putBack(taken) }
  oldestPending () { return this.store.oldestPending() }

  abandon () {
    const held = this.store.size
    this.store.clear()
    return held
  }

  stats () {
    return { pending: this.store.size, writes: this.store.stats.ops, splits: this.store.stats.splits, refused: this.store.stats.refused, repeats: this.store.repeats() }
  }
}

// Per-metric, per-day counter documents (CounterStore's layout).
class CountersSink extends UpdatesSink {
  constructor (spec, host = null) {
    super(spec, host)
    this.keyCap = CounterKeyCap.of(spec, host, this.store) // counts whose `key` a sender chooses
    this.countProblem = this.keyCap === null ? countProblem : cappedCountProblem
  }

  createStore (spec) {
    return new CounterStore(null, { preallocateRate: spec.preallocateRate || 0, guardAll: this.guardAll })
  }

  async prepare (db) {
    this.store.collection = db.collection(this.spec.collection)
    await createIndexes(this.store.collection, [...COUNTER_INDEXES, ...(this.spec.indexes || [])])
  }

  storageTargets () {
    return [counterTarget(this.spec.collection)]
  }

  shape (record, message) {
    return checkAll(listOf(this.spec.of(record, message)), this.countProblem, this.spec)
  }

  accept (counts, context) {
    for (let i = 0; i < counts.length; i++) this.count(counts[i], context)
  }

  count (c, context) {
    const at = c.at === undefined ? context.message.receivedAt : c.at
    this.store.increment(this.keyCap === null ? c.metric : this.keyCap.metricOf(c, context, at), at, c.n === undefined ? 1 : c.n, context.mark)
  }

  // A batch delivered again: which `otherwise` documents hold it (CounterKeyCap).
  prepareRedelivered (messages, delivery) { return this.keyCap && this.keyCap.prepareRedelivered(messages, delivery) }

  stats () {
    return this.keyCap === null ? super.stats() : { ...super.stats(), ...this.keyCap.stats() }
  }
}

const SINKS = { updates: UpdatesSink, counters: CountersSink, documents: DocumentsSink, streams: StreamsSink }

/**
 * The store of a sink declaration, the fields it names in `fromSettings`
 * taken from the worker's `settings`; `host`, what it may use of its
 * worker (sink.js sinkHost: a streams sink logs, sweeps and counts drops
 * through it).
 */
function createSink (spec, settings = {}, host = null) {
  return new SINKS[spec.kind](withSettings(spec, settings), host)
}

function withSettings (spec, settings) {
  if (!spec.fromSettings) return spec
  const resolved = { ...spec }
  for (const [field, setting] of Object.entries(spec.fromSettings)) {
    if (settings[setting] !== undefined) resolved[field] = settings[setting]
  }
  return resolved
}

// last: { field: value } → latest: { field: { order, value } }
function lastValues (last, order) {
  const latest = {}
  for (const field in last) if (last[field] !== undefined) latest[field] = { order, value: last[field] }
  return latest
}

function listOf (value) {
  if (value === null || value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

function legacyFrom (field) {
  if (!field) return Object.freeze({ projection: { _id: 1 }, value: () => new Date() })
  return Object.freeze({ projection: { [field]: 1 }, value: (doc) => doc[field] instanceof Date ? doc[field] : null })
}

module.exports = { createSink, UpdatesSink }
