'use strict'

const { writeAccounted, toWriteAgain, refusedForGood } = require('./write-accounting')

/**
 * Documents updated in place, one per key (`_id`), exactly once for every
 * message under redelivery, worker kills and a master SIGKILL with the disk
 * buffer: the store behind the counters, extremes and last-value sinks.
 * Changes are coalesced in memory per document and written by `flush()` in
 * one unordered bulk of upserts:
 *
 * - `inc`: `$inc`, the one change applying twice would count twice. Each
 *   names its batch (`mark`: `{ origin, batchId, seq, redelivered }`, the
 *   worker's `delivery()`), and each upsert records per origin the highest
 *   batch it covers (`watermarks.<origin>`, `$max`) and applies only while
 *   the document's watermark for that origin is below the first batch it
 *   carries. An origin's batches are processed in order, so a batch at or
 *   below it is counted there already. `guardAll()` says whether every
 *   such upsert carries that condition; if not (the embedded server, which
 *   scans the collection for it: storage/write-guard.js), only those of
 *   entries holding a redelivered batch or written again after a write
 *   not proven stored do, and the rest only raise the watermark.
 * - `min`, `max`: `$min`, `$max`, the same however often applied.
 * - `latest`: the value of the newest message, `{ path: { order, value } }`
 *   with `order` the message's `[batchId, index]` (arrival at the master):
 *   stored as `{ batch, index, value }` by `$max`, which compares documents
 *   field by field, so a message redelivered after newer ones (its worker
 *   died; the master replays its disk buffer) never overwrites them.
 * - `setOnInsert`: fields of a new document.
 * A field whose value is undefined is left out of each: not changed (the
 * driver would write null: a $min of null would replace every minimum).
 *
 * Two writers of one origin's batches (the SIGKILLed master's workers still
 * flushing, the next run replaying the same batches) may both try: only one
 * applies each batch. The other's upsert misses its filter and collides on
 * `_id` (E11000); the store reads the watermark and keeps only what lies
 * above it. Pending changes of one document and origin are kept in
 * segments, each a run of batches (one batch each when redelivered), so
 * that what lies above it is known. A watermark inside a segment means
 * another writer is replaying this origin's batches one by one, from below
 * that segment on: the store then leaves that document's changes of that
 * origin to it (`yielded`), since a write of its later batches would raise
 * the watermark over the ones in between.
 *
 * A subclass lays out its documents (CounterStore: per metric and day) and
 * may add ops per flushed document (`extraOps(entry)`).
 */
class UpdateStore {
  /**
   * @param {object} collection the native collection (may be set later)
   * @param {{ what?: string, key?: string, guardAll?: () => boolean }} [options] what the upserts are,
   *   for messages; the field a document's id is matched on (unique), `_id` by default;
   *   whether every counting upsert is guarded (asked once per flush)
   */
  constructor (collection, { what = 'upserts', key = '_id', guardAll = () => true, onGivenUp = () => {} } = {}) {
    this.collection = collection
    this.what = what
    this.key = key
    this.guardAll = guardAll
    this.pending = new Map() // _id, or _id and origin → entry
    this.writing = null // the entries of the write in progress
    // alreadyCounted: segments not written because their document had applied their batches
    // yielded: documents whose changes of an origin were left to another writer of its batches
    // splits: bulks written again in halves because the server's reply did not account for them
    this.stats = { ops: 0, alreadyCounted: 0, yielded: 0, splits: 0, refused: 0 }
    this.onGivenUp = onGivenUp // (entries, { code, errmsg }): upserts refused for good, not written again
    this.yieldedKeys = new Set()
  }

  /**
   * Folds changes into document `id`. `changes`: `{ inc?, min?, max?,
   * latest?, set? }`, each `{ path: value }` (latest: `{ path: { order, value } }`;
   * set: values every copy of the message carries, so that order does not matter);
   * `setOnInsert`: fields a new document gets (or a function returning
   * them, called only for a document not held yet); `mark` names the batch.
   */
  update (id, changes, mark = null, setOnInsert = null) {
    const segment = this.segmentOf(id, mark, setOnInsert)
    if (segment === null) return
    if (changes.inc) {
      for (const path in changes.inc) {
        add(segment.inc, path, changes.inc[path])
        segment.counts = true
      }
    }
    if (changes.min) for (const path in changes.min) keep(segment.min, path, changes.min[path], (a, b) => a < b)
    if (changes.max) for (const path in changes.max) keep(segment.max, path, changes.max[path], (a, b) => a > b)
    if (changes.latest) for (const path in changes.latest) keep(segment.latest, path, changes.latest[path], newer)
    if (changes.set) for (const path in changes.set) if (changes.set[path] !== undefined) segment.set[path] = changes.set[path]
  }

  /** Adds `n` to each of `paths` of document `id` (update's `inc`, without an object per call: the counters' hot path). */
  incrementPaths (id, paths, n, mark = null, setOnInsert = null, key = null) {
    const segment = this.segmentOf(id, mark, setOnInsert, key)
    if (segment === null) return
    for (let i = 0; i < paths.length; i++) add(segment.inc, paths[i], n)
    segment.counts = true
  }

  // The changes to fold into: those of the open segment of the entry for
  // the document and the batch's origin; null when left to another writer.
  // An entry without a mark (code that writes outside a worker) is written
  // unconditionally.
  // `key`: keyOf(id, the mark's origin), when the caller keeps it.
  segmentOf (id, mark, setOnInsert, key = null) {
    const origin = mark ? mark.origin : null
    if (key === null) key = this.keyOf(id, origin)
    if (this.yieldedKeys.has(key)) return null
    let entry = this.pending.get(key)
    if (!entry) {
      entry = { id, origin, setOnInsert: definedOnly(typeof setOnInsert === 'function' ? setOnInsert() : setOnInsert), segments: [], minSeq: Infinity }
      this.pending.set(key, entry)
    }
    if (!mark) return openSegment(entry, 0, false)
    if (mark.seq < entry.minSeq) entry.minSeq = mark.seq
    const segment = openSegment(entry, mark.batchId, Boolean(mark.redelivered))
    if (mark.batchId > segment.last) segment.last = mark.batchId
    return segment
  }

  /** The key of the changes of document `id` from `origin` (a batch's) among those pending. */
  keyOf (id, origin) {
    return origin === null ? id : `${id}\u0000${origin}`
  }

  get size () {
    return this.pending.size
  }

  /** Entries held: pending, and of the write in progress. */
  get held () {
    return this.pending.size + (this.writing === null ? 0 : this.writing.size)
  }

  /** The smallest checkpoint (`mark.seq`) of the changes held, pending or being written; Infinity if none. */
  oldestPending () {
    let min = Infinity
    for (const docs of [this.pending, this.writing]) {
      if (docs) for (const entry of docs.values()) if (entry.minSeq < min) min = entry.minSeq
    }
    return min
  }

  /** For a worker's stats(): segments skipped as applied already, documents left to another writer. */
  repeats () {
    return { alreadyCounted: this.stats.alreadyCounted, yielded: this.stats.yielded }
  }

  /** The highest batch of `origin` stored in document `id`, or null (a read: redelivery only). */
  async watermark (id, origin) {
    return (await this.watermarks([id], origin)).get(id)
  }

  /** The same for many documents in one read: a Map from each id to its watermark or null. */
  async watermarks (ids, origin) {
    const key = this.key
    const docs = await this.collection.find({ [key]: { $in: ids } }, { projection: { [key]: 1, [`watermarks.${origin}`]: 1 } }).toArray()
    const found = new Map(docs.map((doc) => [doc[key], doc.watermarks && doc.watermarks[origin]]))
    return new Map(ids.map((id) => [id, typeof found.get(id) === 'number' ? found.get(id) : null]))
  }

  /** Ops to write beside entry's upsert (none here). */
  extraOps (entry) {
    return []
  }

  /** The pending changes, taken for a write (`flush(taken)`): held as being written until then. */
  take () {
    const entries = this.pending
    this.pending = new Map()
    this.writing = entries
    return entries
  }

  /** Changes taken and not written after all: pending again, their next write guarded. */
  putBack (entries) {
    this.writing = null
    this.restore([...entries.values()])
  }

  /**
   * Writes the pending changes, or those taken (writeAccounted). What was not proven
   * stored stays pending, kept apart from newer changes as closed segments;
   * a write that missed its filter because the document had applied some
   * of its batches keeps only the segments above the document's watermark.
   * Throws the write's error once the rest is settled.
   */
  async flush (entries = this.take()) {
    if (entries.size === 0) {
      this.writing = null
      return
    }
    const ops = []
    const opEntries = [] // ops[i]'s entry; null for an extra op
    const guardAll = this.guardAll()
    for (const entry of entries.values()) {
      entry.guarded = guarded(entry, guardAll)
      const op = upsertOp(entry, this.key) // null: its fields were all undefined, nothing to write
      if (op !== null) { ops.push(op); opEntries.push(entry) }
      for (const op of this.extraOps(entry)) {
        ops.push(op)
        opEntries.push(null)
      }
    }
    try {
      const error = ops.length === 0 ? null : await this.writeOps(ops, opEntries)
      if (error) throw error
    } finally {
      this.writing = null
    }
  }

  async writeOps (ops, opEntries) {
    let out
    // A bulk written again in parts may have applied some: its entries' upserts go guarded.
    const guardAgain = (i) => {
      const entry = opEntries[i]
      if (entry && !entry.guarded && counts(entry)) {
        entry.guarded = true
        ops[i] = upsertOp(entry, this.key)
      }
      return ops[i]
    }
    try {
      out = await writeAccounted(this.collection, ops, this.what, guardAgain)
    } catch (err) {
      this.restore(opEntries.filter(Boolean))
      throw err
    }
    const again = toWriteAgain(out, this.what)
    this.stats.ops += ops.length - again.indexes.length
    this.stats.splits += out.splits
    // An upsert the server refused for good (a $inc on a field holding text) is not written again.
    const given = refusedForGood(out)
    const gone = new Set(given.map((e) => opEntries[e.index]).filter(Boolean))
    this.restore(again.indexes.map((i) => opEntries[i]).filter((entry) => entry && !gone.has(entry)))
    if (gone.size > 0) {
      this.stats.refused += gone.size
      this.onGivenUp([...gone], given[0])
    }
    // An extra op that collides found its document there: nothing to do.
    // An unguarded upsert only collides with another creating its document
    // at once, and was not applied: written again (guarded), it matches.
    const collided = out.collided.map((i) => opEntries[i]).filter(Boolean)
    this.restore(collided.filter((entry) => !entry.guarded))
    const counted = collided.filter((entry) => entry.guarded)
    if (counted.length > 0) {
      try {
        await this.keepUnapplied(counted)
      } catch (err) {
        this.restore(counted)
        throw err
      }
    }
    return gone.size > 0 && given.length === out.refused.length && !out.error ? null : again.error
  }

  // Entries whose write missed its filter: the document had applied some of
  // their batches (another writer of the same batches got there first), or
  // it did not exist yet and another upsert created it meanwhile. The
  // watermark tells which: what lies above it goes back to pending.
  async keepUnapplied (entries) {
    const byOrigin = new Map()
    for (const entry of entries) {
      if (!byOrigin.has(entry.origin)) byOrigin.set(entry.origin, [])
      byOrigin.get(entry.origin).push(entry)
    }
    const kept = []
    for (const [origin, group] of byOrigin) {
      const watermarks = await this.watermarks(group.map((entry) => entry.id), origin)
      for (const entry of group) {
        const watermark = watermarks.get(entry.id)
        if (watermark !== null && entry.segments.some((segment) => segment.first <= watermark && segment.last > watermark)) {
          this.yieldedKeys.add(this.keyOf(entry.id, origin))
          this.stats.yielded++
          continue
        }
        const above = watermark === null ? entry.segments : entry.segments.filter((segment) => segment.first > watermark)
        this.stats.alreadyCounted += entry.segments.length - above.length
        if (above.length > 0) kept.push({ ...entry, segments: above })
      }
    }
    this.restore(kept)
  }

  // Entries of a write not proven stored, back to pending: their segments
  // are closed and, written again, guarded (the first write may have landed).
  restore (entries) {
    for (const entry of entries) {
      for (const segment of entry.segments) {
        segment.open = false
        segment.retried = true
      }
      const key = entry.origin === null ? entry.id : `${entry.id}\u0000${entry.origin}`
      const current = this.pending.get(key)
      if (!current) {
        this.pending.set(key, entry)
        continue
      }
      current.segments.unshift(...entry.segments)
      if (entry.minSeq < current.minSeq) current.minSeq = entry.minSeq
    }
  }

  /** Drops everything held (the worker gives up at shutdown). */
  clear () {
    this.pending = new Map()
  }
}

// The segment new changes of batch `batchId` go to: the last one while it
// is open and, for a redelivered batch, holds that batch only. A batch not
// delivered before never joins a redelivered one's segment: after a worker
// died, its heir takes the batches the dead one may have applied
// (redelivered) and then, of the same origin, those it never saw (formed
// while the slot had no worker); one segment over both would carry a batch
// the document has applied and one it has not, and could be neither
// written nor split.
function openSegment (entry, batchId, redelivered) {
  const last = entry.segments[entry.segments.length - 1]
  if (last && last.open && last.redelivered === redelivered && (!redelivered || (last.first === batchId && last.last === batchId))) return last
  const segment = { first: batchId, last: batchId, inc: {}, min: {}, max: {}, latest: {}, set: {}, open: true, redelivered, retried: false, counts: false }
  entry.segments.push(segment)
  return segment
}

// One entry's upsert: every segment's changes. One that counts (`$inc`)
// raises the document's watermark for the origin and, guarded, applies only
// while it is below the first batch; the rest is order-free and needs no
// condition.
function upsertOp (entry, key) {
  const inc = {}
  const min = {}
  const max = {}
  const latest = {}
  const set = {}
  for (const segment of entry.segments) {
    for (const path in segment.inc) add(inc, path, segment.inc[path])
    for (const path in segment.min) keep(min, path, segment.min[path], (a, b) => a < b)
    for (const path in segment.max) keep(max, path, segment.max[path], (a, b) => a > b)
    for (const path in segment.latest) keep(latest, path, segment.latest[path], newer)
    Object.assign(set, segment.set)
  }
  const update = {}
  if (hasAny(inc)) update.$inc = inc
  if (hasAny(min)) update.$min = min
  if (hasAny(set)) update.$set = set
  for (const path in latest) {
    const { order, value } = latest[path]
    max[path] = { batch: order[0], index: order[1], value }
  }
  if (entry.setOnInsert) update.$setOnInsert = entry.setOnInsert
  const field = `watermarks.${entry.origin}`
  if (counts(entry)) max[field] = entry.segments[entry.segments.length - 1].last
  if (hasAny(max)) update.$max = max
  if (!hasAny(update)) return null
  if (!entry.guarded) return { updateOne: { filter: { [key]: entry.id }, update, upsert: true } }
  return { updateOne: { filter: { [key]: entry.id, [field]: { $not: { $gte: entry.segments[0].first } } }, update, upsert: true } }
}

// Whether an entry's upsert counts batches it names (`$inc` of an origin).
function counts (entry) {
  if (entry.origin === null) return false
  for (const segment of entry.segments) if (segment.counts) return true
  return false
}

// Whether an entry's upsert is conditional on its batches: it counts them,
// and every such write is guarded or this one may meet a second writer.
function guarded (entry, guardAll) {
  return counts(entry) && (guardAll || entry.segments.some((segment) => segment.redelivered || segment.retried))
}

function newer (a, b) {
  return a.order[0] > b.order[0] || (a.order[0] === b.order[0] && a.order[1] > b.order[1])
}

function keep (into, path, value, better) {
  if (value !== undefined && (!(path in into) || better(value, into[path]))) into[path] = value
}

// `fields` without those whose value is undefined (itself when none is; null when none is left).
function definedOnly (fields) {
  if (fields === null || fields === undefined || Object.values(fields).every((value) => value !== undefined)) return fields || null
  const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
  return hasAny(defined) ? defined : null
}

function add (into, path, n) {
  into[path] = (into[path] || 0) + n
}

function hasAny (object) {
  for (const key in object) return true // eslint-disable-line no-unreachable-loop
  return false
}

module.exports = { UpdateStore }
