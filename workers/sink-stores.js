'use strict'

const { mongo: { ObjectId } } = require('mongoose') // the driver mongoose uses: one copy loaded
const { UpdateStore } = require('./storage/update-store')
const { CounterStore, counterTarget } = require('./storage/counter-store')
const { writeAccounted, toWriteAgain, refusedForGood } = require('./storage/write-accounting')
const { counterSchema } = require('./storage/schemas')
const { StreamsSink } = require('./streams-sink')
const { guardsEveryWrite } = require('./storage/write-guard')
const { WriteLanes } = require('./storage/write-lanes')
const { Sink } = require('./sink')
const { CounterKeyCap } = require('./counter-key-cap')
const { updateProblem, countProblem, cappedCountProblem, documentProblem, leftOutProblem, checkAll, Refusal } = require('./sink-output')
const { documentFate } = require('./storage/document-size')
const { SERIALIZED, Serialized, serialize, serializesAsHeld, serializedInserts } = require('./storage/serialized-inserts')

const SEQ = Symbol('checkpoint') // a document's checkpoint (its batch); symbol keys are not serialized
const MESSAGE = Symbol('message') // its message's place in that batch
const INSERT_CHUNK = 1000
const CHUNK_BYTES = 16 * 1024 * 1024 // of serialized documents per insert, well under a server's 48 MB message
// The counter documents' own index (CounterStore's layout), declared once in schemas.js.
const COUNTER_INDEXES = counterSchema.indexes().map(([key, options]) => ({ key, ...options }))
const REFUSALS = Object.freeze({
  tooLarge: new Refusal('documentTooLarge', 'a document over 16 MiB, MongoDB\'s bound on one document, can never be stored: its message is refused (dropped.documentTooLarge)'),
  unstorable: new Refusal('unstorable', 'a document BSON cannot hold (a key with a NUL byte, a value that refers to itself) can never be stored: its message is refused (dropped.unstorable)')
})

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

// A document per record, inserted by key (the message's, numbered within it).
class DocumentsSink extends Sink {
  constructor (spec, host = null) {
    super(spec, host)
    this.buffer = []
    this.writing = [] // the chunks of the write in progress: { docs, done, kept (of a done chunk, not proven stored) }
    this.lanes = new WriteLanes()
    this.counts = { stored: 0, writes: 0, splits: 0, tooLarge: 0, unstorable: 0, refused: 0 }
    this.maxBatch = spec.maxBatch || INSERT_CHUNK
    this.messageMark = null // the message whose documents are being numbered: its batch, place and key
    this.messageIndex = -1
    this.messageKey = null
    this.serialized = SERIALIZED // documents held as their BSON (storage/serialized-inserts.js)
    this.writer = null // what the inserts go through: the collection's serialized inserts, else the collection
  }

  async prepare (db) {
    this.collection = db.collection(this.spec.collection)
    // Held serialized only as this collection would serialize; those held so far are written either way.
    this.writer = SERIALIZED ? serializedInserts(this.collection) : this.collection
    if (this.serialized && !serializesAsHeld(this.collection)) this.serialized = false
    await createIndexes(this.collection, this.spec.indexes, this.spec.expireBy)
  }

  // Documents written before the sink named its date field take it from
  // their `_id`, whose ObjectId holds the second their batch arrived.
  storageTargets () {
    return this.spec.expireBy ? [{ ...ageTarget(this.spec), legacy: ARRIVAL_FROM_ID }] : []
  }

  // A message that gave one record storing one document keeps the message's
  // key as its _id (an ObjectId, in arrival order). Every other document is
  // numbered within its message: `{ m: <the message's key>, r: <the
  // record's place among the message's records> }` (a NetFlow datagram's 30
  // flows: r 0 to 29), with `d`, its place among them, when `of` gave a
  // record several documents: the same when the message is delivered
  // again, so each is stored once.
  // A document larger than the server stores, or one BSON cannot hold, is
  // refused (REFUSALS) before anything of its message is held.
  shape (record, message) {
    const docs = this.spec.of(record, message)
    if (docs === null || docs === undefined) return null
    if (!Array.isArray(docs)) {
      checkAll([docs], documentProblem, this.spec)
      return this.storable(docs) ? docs : this.refusal
    }
    checkAll(docs, documentProblem, this.spec)
    for (let i = 0; i < docs.length; i++) if (!this.storable(docs[i])) return this.refusal
    return docs
  }

  // Whether a document can be stored; if not, why (this.refusal), counted.
  storable (doc) {
    const fate = documentFate(doc)
    if (fate === 'fits') return true
    if (fate === 'leftOut') checkAll([doc], leftOutProblem, this.spec) // throws: the definition's mistake fails the message
    this.counts[fate]++
    this.refusal = REFUSALS[fate]
    return false
  }

  accept (docs, context) {
    if (docs === null) return
    const several = Array.isArray(docs)
    if (this.messageIndex !== context.index || this.messageMark !== context.mark) {
      this.messageIndex = context.index
      this.messageMark = context.mark
      this.messageKey = new ObjectId(context.key())
    }
    if (!several) return this.keep(docs, context.many ? { m: this.messageKey, r: context.record } : this.messageKey, context)
    for (let d = 0; d < docs.length; d++) this.keep(docs[d], { m: this.messageKey, r: context.record, d }, context)
  }

  // Held as its bytes, so that the document dies young; one that cannot be
  // serialized is held as it is, and its write fails as the driver's would.
  keep (doc, id, context) {
    doc._id = id
    let held = doc
    if (this.serialized) {
      try {
        held = new Serialized(serialize(doc))
      } catch {}
    }
    held[SEQ] = context.seq
    held[MESSAGE] = context.index
    this.buffer.push(held)
  }

  get size () { return this.buffer.length }
  hasBacklog () { return this.buffer.length >= this.maxBatch }

  // What is buffered now, in chunks of maxBatch, as many written at once as
  // the lanes say (inserts by key: no order among them); what arrives
  // meanwhile waits for the next flush, so that under steady input the
  // acknowledgement comes. What was not proven stored goes back first, in order.
  async write () {
    const chunks = this.writing = chunksOf(this.buffer, this.maxBatch)
    this.buffer = []
    let next = 0
    let error = null
    const lane = async () => {
      while (next < chunks.length) {
        const failed = await this.writeChunk(chunks[next++])
        error = error || failed
      }
    }
    await Promise.all(Array.from({ length: Math.min(this.lanes.size, chunks.length) }, lane))
    this.buffer = chunks.flatMap((chunk) => chunk.kept).concat(this.buffer)
    this.writing = []
    if (error) throw error
  }

  // One insert bulk; returns its error, if any (what it did not store is the chunk's `kept`).
  async writeChunk (chunk) {
    const what = `${this.spec.collection} inserts`
    const started = performance.now()
    const out = await writeAccounted(this.writer, chunk.docs.map((document) => ({ insertOne: { document } })), what)
    this.lanes.record(chunk.docs.length, performance.now() - started)
    // A duplicate on another unique index (one the definition declared) is
    // not this document stored before, as one on _id is: refused.
    for (const [i, index] of out.duplicateOn) {
      if (index === '_id') continue
      out.collided.splice(out.collided.indexOf(i), 1)
      out.refused.push({ index: i, code: 11000, errmsg: `a document with the same ${index} is stored` })
    }
    const again = toWriteAgain(out, what)
    this.counts.writes++
    this.counts.splits += out.splits
    this.counts.stored += chunk.docs.length - again.indexes.length
    const given = refusedForGood(out)
    const gone = new Set(given.map((e) => e.index))
    chunk.kept = again.indexes.filter((i) => !gone.has(i)).sort((a, b) => a - b).map((i) => chunk.docs[i])
    chunk.done = true
    if (given.length === 0) return again.error
    this.giveUp(given.map((e) => chunk.docs[e.index]), given[0], what)
    return out.error || (given.length < out.refused.length ? again.error : null)
  }

  // Documents the server refused for a reason no state of it changes (a
  // validator, say): never written again, and their messages, counted
  // processed when taken, are counted failed instead.
  giveUp (docs, { code, errmsg }, what) {
    this.counts.refused += docs.length
    const messages = new Map() // batch → its messages with a document given up
    for (const doc of docs) {
      if (!messages.has(doc[SEQ])) messages.set(doc[SEQ], new Set())
      messages.get(doc[SEQ]).add(doc[MESSAGE])
    }
    if (!this.host) return
    for (const [seq, places] of messages) this.host.failMessages(seq, places)
    this.host.logAtMost(`refused:${this.spec.collection}`, 'error', { collection: this.spec.collection, code, errmsg, documents: docs.length },
      `${what}: the server refused ${docs.length} document${docs.length === 1 ? '' : 's'} for good (${code}: ${errmsg}); not written again, their messages counted failed`)
  }

  oldestPending () {
    let min = Infinity
    for (const chunk of this.writing) {
      const docs = chunk.done ? chunk.kept : chunk.docs
      if (docs.length > 0 && docs[0][SEQ] < min) min = docs[0][SEQ]
    }
    if (this.buffer.length > 0 && this.buffer[0][SEQ] < min) min = this.buffer[0][SEQ]
    return min
  }

  abandon () {
    const held = this.writing.reduce((n, chunk) => n + (chunk.done ? chunk.kept.length : chunk.docs.length), this.buffer.length)
    this.buffer = []
    return held
  }

  stats () {
    return { pending: this.buffer.length, stored: this.counts.stored, writes: this.counts.writes, splits: this.counts.splits, tooLarge: this.counts.tooLarge, unstorable: this.counts.unstorable, refused: this.counts.refused }
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

// The documents held, in chunks of at most maxBatch and, serialized, CHUNK_BYTES.
function chunksOf (held, maxBatch) {
  const chunks = []
  let docs = []
  let bytes = 0
  for (const doc of held) {
    const size = doc instanceof Serialized ? doc.bytes.length : 0
    if (docs.length > 0 && (docs.length >= maxBatch || bytes + size > CHUNK_BYTES)) {
      chunks.push({ docs, done: false, kept: [] })
      docs = []
      bytes = 0
    }
    docs.push(doc)
    bytes += size
  }
  if (docs.length > 0) chunks.push({ docs, done: false, kept: [] })
  return chunks
}

// last: { field: value } → latest: { field: { order, value } }
function lastValues (last, order) {
  const latest = {}
  for (const field in last) latest[field] = { order, value: last[field] }
  return latest
}

function listOf (value) {
  if (value === null || value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

// The index on the retention's date field alone is the StorageKeeper's
// (plain, or TTL where the server expires by it): created there, not here,
// lest a plain one be asked for over the TTL one (IndexOptionsConflict).
async function createIndexes (collection, indexes = [], expireBy = null) {
  const own = expireBy ? indexes.filter((index) => !isAgeIndex(index, expireBy)) : indexes
  if (own.length > 0) await collection.createIndexes(own)
}

function isAgeIndex (index, field) {
  return JSON.stringify(index.key) === JSON.stringify({ [field]: 1 })
}

function ageTarget (spec) {
  return { collection: spec.collection, field: spec.expireBy, ...(spec.expireSpan ? { span: spec.expireSpan } : {}), declared: (spec.indexes || []).some((index) => isAgeIndex(index, spec.expireBy)) }
}

function legacyFrom (field) {
  if (!field) return Object.freeze({ projection: { _id: 1 }, value: () => new Date() })
  return Object.freeze({ projection: { [field]: 1 }, value: (doc) => doc[field] instanceof Date ? doc[field] : null })
}

const ARRIVAL_FROM_ID = Object.freeze({
  projection: { _id: 1 },
  value: (doc) => {
    const id = doc._id && doc._id.m ? doc._id.m : doc._id
    return id instanceof ObjectId ? id.getTimestamp() : null
  }
})

module.exports = { createSink, UpdatesSink }
