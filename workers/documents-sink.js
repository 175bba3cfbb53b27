'use strict'

const { mongo: { ObjectId } } = require('mongoose') // the driver mongoose uses: one copy loaded
const { writeAccounted, toWriteAgain, refusedForGood } = require('./storage/write-accounting')
const { WriteLanes } = require('./storage/write-lanes')
const { Sink, HELD_ENTRY_BYTES } = require('./sink')
const { documentProblem, mistakeProblem, checkAll, Refusal } = require('./sink-output')
const { documentFate } = require('./storage/document-size')
const { SERIALIZED, Serialized, serialize, serializesAsHeld, serializedInserts } = require('./storage/serialized-inserts')
const { createIndexes, ageTarget } = require('./sink-collections')

const SEQ = Symbol('checkpoint') // a document's checkpoint (its batch); symbol keys are not serialized
const MESSAGE = Symbol('message') // its message's place in that batch
const INSERT_CHUNK = 1000
const CHUNK_BYTES = 16 * 1024 * 1024 // of serialized documents per insert, well under a server's 48 MB message
const REFUSALS = Object.freeze({
  tooLarge: new Refusal('documentTooLarge', 'a document over 16 MiB, MongoDB\'s bound on one document, can never be stored: its message is refused (dropped.documentTooLarge)'),
  unstorable: new Refusal('unstorable', 'a document BSON cannot hold (a key with a NUL byte, a value that refers to itself) can never be stored: its message is refused (dropped.unstorable)')
})

// A document per record, inserted by key (the message's, numbered within it).
class DocumentsSink extends Sink {
  constructor (spec, host = null) {
    super(spec, host)
    this.buffer = []
    this.bytesHeld = 0 // of the documents in buffer and writing (heldBytes)
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
    if (fate === 'mistake') checkAll([doc], mistakeProblem, this.spec) // throws: the definition's mistake fails the message
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
    this.bytesHeld += heldSize(held)
  }

  get size () { return this.buffer.length }
  get heldBytes () { return this.bytesHeld }
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
    this.bytesHeld = this.buffer.reduce((bytes, doc) => bytes + heldSize(doc), 0)
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
    this.bytesHeld = 0
    return held
  }

  stats () {
    return { pending: this.buffer.length, stored: this.counts.stored, writes: this.counts.writes, splits: this.counts.splits, tooLarge: this.counts.tooLarge, unstorable: this.counts.unstorable, refused: this.counts.refused }
  }
}

// A document held: its BSON's bytes; one held as it is (it could not be serialized), as much as an entry.
function heldSize (doc) {
  return doc instanceof Serialized ? doc.bytes.length : HELD_ENTRY_BYTES
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

const ARRIVAL_FROM_ID = Object.freeze({
  projection: { _id: 1 },
  value: (doc) => {
    const id = doc._id && doc._id.m ? doc._id.m : doc._id
    return id instanceof ObjectId ? id.getTimestamp() : null
  }
})

module.exports = { DocumentsSink }
