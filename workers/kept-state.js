'use strict'

const { UpdatesSink } = require('./sink-stores')
const DecodeError = require('../exceptions/decode-error')

// Between a scope and a name in a kept document's _id (neither may hold it).
const SEP = '\u0000'
const PROJECTION = Object.freeze({ name: 1, value: 1 })
const KEPT_FULL = new DecodeError('keptFull', 'a scope of kept state holds keep.maxPerScope names already')
// A scope in use has its documents' `seenAt` moved forward at most this
// often by default (`keep.seenEvery`; one updateMany for all of a worker's
// scopes), and retention takes a scope only once it is older than the
// retention and twice that: one in use is never taken between two moves.
const SEEN_EVERY_MS = 5 * 60000

/**
 * What a definition keeps between messages (`keep`: NetFlow v9 and IPFIX
 * templates, sessions, dictionaries), kept where a worker's heir finds it.
 * A message reads and writes the entries of its scope (by default its
 * sender's address) through `arrival.kept`: `get(name)`, `set(name,
 * value)`, `delete(name)`, `keys(prefix)`, values plain JSON (no Buffers,
 * no classes). A scope holds at most `maxPerScope` names: a `set` of a new
 * one past that throws the DecodeError `keptFull`, which refuses the
 * message (one sender cannot fill the collection).
 *
 * Durable as the sinks are: each change is written, with the message's
 * checkpoint, to the collection `collection` (one document per scope and
 * name: `{ _id, scope, name, value: { batch, index, value } }`, by `$max`
 * on the message's arrival order, so a redelivered message never
 * overwrites a newer change) by the worker's flush, and the worker
 * acknowledges no message before what it changed is stored. So whatever
 * an acknowledged message taught the worker is in the database, and what
 * an unacknowledged one taught it is taught again when the message is
 * delivered again, in order, to the heir.
 *
 * A scope is read from the database the first time one of its messages
 * reaches this worker (doWork waits for it), again after the worker took a
 * redelivered batch (a dead worker may have stored more of it since), and
 * after its entries were forgotten to keep memory within `maxEntries`
 * (only scopes without changes waiting to be written are forgotten, and
 * forgetting loses nothing: it is read again).
 *
 * Each document says when its scope was last in use (`seenAt`: set by its
 * writes, and moved forward for every scope a message used (when it was
 * decoded, not when it arrived: a backlog delivered late is in use now), at most every
 * `keep.seenEvery`, see touchSeen), so that retention takes the state of a
 * sender gone quiet (an exporter long gone, a session's old port) and never
 * that of one still sending.
 */
class KeptState extends UpdatesSink {
  /**
   * @param {{ collection: string, scope: (message: object) => string, maxEntries: number }} options
   */
  constructor ({ collection, scope, maxEntries, maxPerScope, seenEvery = SEEN_EVERY_MS, scopeBefore = null, heldSince = null }) {
    // An updates sink of its own (its store, writes, acknowledgement), fed by change(), not by records.
    super(Object.freeze({ kind: 'kept', collection, indexes: [{ key: { scope: 1 } }], expireBy: 'seenAt', expireSpan: 2 * seenEvery }))
    this.seenEvery = seenEvery
    this.scopeOf = scope
    this.scopeBefore = scopeBefore // the scope an earlier version kept a scope's state under, read when it has none
    this.maxEntries = maxEntries
    this.maxPerScope = maxPerScope
    this.scopes = new Map() // scope → Map(name → value), least recently used first
    this.entries = 0
    this.heldSince = heldSince // () → Promise of when the master received the oldest message it holds (Worker#heldSince)
    this.purgedAt = Date.now() // when deleted names were last purged (purgeDeleted)
    this.purging = null // its promise while it runs
    this.counts = { reads: 0, set: 0, deleted: 0, forgotten: 0, purged: 0, purgeFailed: 0 }
    this.seen = new Map() // scope → when a message was last decoded in it (ms), since its seenAt last moved
    this.seenMoved = new Map() // scope → when its seenAt last moved (ms)
    // The message being decoded: its scope's values, and its own changes
    // (name → value, null deleted), kept only if the message is (settle).
    this.current = null // { scope, values, context, staged, size }
    this.view = Object.freeze({
      get: (name) => this.read(name),
      set: (name, value) => this.change(name, value),
      delete: (name) => this.change(name, null),
      keys: (prefix = '') => this.names().filter((name) => name.startsWith(prefix))
    })
  }

  /**
   * A definition's kept state: its collection (`keep.collection`, default
   * `<name>_kept`), scope (`keep.scope(message)`, default the sender's
   * address) and bounds (`keep.maxEntries`, default 100,000 entries and
   * scopes held in memory; `keep.maxPerScope`, default 4,096 names a scope; `keep.seenEvery`,
   * default 5 minutes; `keep.scopeBefore(scope)`, the scope an earlier
   * version kept it under, read when a scope has nothing of its own).
   */
  static of (definition, heldSince = null) {
    const keep = definition.keep
    return new KeptState({
      collection: keep.collection || `${definition.name}_kept`,
      scope: keep.scope || ((message) => { const remote = message.rinfo || message.remote; return remote ? remote.address : '' }),
      maxEntries: keep.maxEntries || 100000,
      maxPerScope: keep.maxPerScope || 4096,
      seenEvery: keep.seenEvery || SEEN_EVERY_MS,
      scopeBefore: keep.scopeBefore || null,
      heldSince
    })
  }

  async prepare (db) {
    await super.prepare(db)
    this.collection = this.store.collection
  }

  /** The scope of `message`, or null when its entries must be read first (then: `load(scope)`). */
  scopeReady (message) {
    const scope = String(this.scopeOf(message))
    const values = this.scopes.get(scope)
    if (values === undefined) return { scope, ready: false }
    this.scopes.delete(scope) // to the end: most recently used
    this.scopes.set(scope, values)
    return { scope, ready: true }
  }

  /** Reads a scope's entries from the database (a change of this worker not yet written wins). */
  async load (scope) {
    this.counts.reads++
    let docs = await this.collection.find({ scope }, { projection: PROJECTION }).toArray()
    const before = docs.length === 0 && this.scopeBefore !== null ? this.scopeBefore(scope) : null
    // Nothing yet under this scope: what an earlier version kept for it (NetFlow's per-address templates, for
    // the datagrams an upgrade replays from the disk buffer), used until the sender teaches this scope its own.
    if (before !== null && before !== scope) docs = await this.collection.find({ scope: before }, { projection: PROJECTION }).toArray()
    const values = new Map()
    for (const doc of docs) if (doc.value && doc.value.value !== null && doc.value.value !== undefined) values.set(doc.name, doc.value.value)
    const held = this.scopes.get(scope)
    if (held) {
      this.entries -= held.size
      for (const name of this.pendingNames(scope)) {
        if (held.has(name)) values.set(name, held.get(name))
        else values.delete(name)
      }
    }
    this.scopes.delete(scope)
    this.scopes.set(scope, values)
    this.entries += values.size
    this.forgetOldest(scope)
  }

  /** The view `arrival.kept` for a message of `scope`, decoded under `context` (its batch and place). */
  bind (scope, context) {
    const values = this.scopes.get(scope)
    // Now, not the message's arrival: a backlog delivered late still uses its scopes now.
    const at = Date.now()
    const moved = this.seenMoved.get(scope)
    if ((moved === undefined || at - moved >= this.seenEvery) && !(this.seen.get(scope) >= at)) this.seen.set(scope, at)
    this.current = { scope, values, context, staged: new Map(), size: values.size }
    return this.view
  }

  bound () {
    if (this.current === null) throw new TypeError('kept: read and changed only while its message is decoded (a view kept past decode or enrich)')
    return this.current
  }

  read (name) {
    const { values, staged } = this.bound()
    return staged.has(name) ? (staged.get(name) ?? undefined) : values.get(name)
  }

  names () {
    const { values, staged } = this.bound()
    const names = new Set(values.keys())
    for (const [name, value] of staged) value === null ? names.delete(name) : names.add(name)
    return [...names]
  }

  // Staged: a message refused part way (a datagram whose 4,095th template
  // passed maxPerScope) leaves its scope as it was, not with what it set first.
  change (name, value) {
    if (typeof name !== 'string' || name.includes(SEP)) throw new TypeError(`kept: a name is a string without NUL (got ${JSON.stringify(name)})`)
    const current = this.bound()
    const present = this.read(name) !== undefined
    if (value === null || value === undefined) {
      if (!present) return
      current.staged.set(name, null)
      current.size--
      return
    }
    if (!present && current.size >= this.maxPerScope) throw KEPT_FULL
    current.staged.set(name, value)
    if (!present) current.size++
  }

  /**
   * The end of the bound message: its changes kept (`keep`: it was
   * accepted, or had nothing to store) and written with its batch, or
   * dropped with it (refused, or failed).
   */
  settle (keep) {
    const { scope, values, context, staged } = this.current
    this.current = null
    if (!keep || staged.size === 0) return
    const order = [context.mark.batchId, context.index]
    const seenAt = Date.now()
    for (const [name, value] of staged) {
      const had = values.has(name)
      if (value === null) {
        if (!had) continue
        values.delete(name)
        this.entries--
        this.counts.deleted++
      } else {
        values.set(name, value)
        if (!had) this.entries++
        this.counts.set++
      }
      this.store.update(scope + SEP + name, { latest: { value: { order, value } }, max: { seenAt: new Date(seenAt) }, set: { scope, name } }, context.mark)
    }
  }

  // Whole scopes, least recently used first, past maxEntries; never one
  // whose changes wait to be written (its entries are this worker's only
  // copy), nor `reading`, the one just read for a message about to be decoded.
  // A scope counts as an entry of its own: empty ones (a sender with nothing
  // kept, each of the 65,535 source ports of a flood) were held for good.
  forgetOldest (reading) {
    if (this.held() <= this.maxEntries) return
    const pending = new Set()
    for (const entry of this.store.pending.values()) pending.add(entry.id.slice(0, entry.id.indexOf(SEP)))
    for (const [scope, values] of this.scopes) {
      if (this.held() <= this.maxEntries) break
      if (pending.has(scope) || scope === reading) continue
      this.scopes.delete(scope)
      this.entries -= values.size
      this.counts.forgotten++
    }
  }

  held () {
    return this.entries + this.scopes.size
  }

  pendingNames (scope) {
    const names = []
    const prefix = scope + SEP
    for (const entry of this.store.pending.values()) if (entry.id.startsWith(prefix)) names.push(entry.id.slice(prefix.length))
    return names
  }

  /** A redelivered batch: the scopes are read again before their next message (a dead worker may have stored more). */
  forgetStored () {
    for (const [scope, values] of this.scopes) {
      if (this.pendingNames(scope).length > 0) continue
      this.scopes.delete(scope)
      this.entries -= values.size
    }
  }

  /**
   * The scopes messages used since their `seenAt` last moved, moved forward
   * to when they were last used (one updateMany), once seenEvery has
   * passed for them; a failed write is tried again at the next call.
   */
  async touchSeen () {
    // Not waited for: the flush this follows acknowledges its messages now (a master that does not answer holds it 5 s).
    if (this.purging === null) this.purging = this.purgeDeleted().finally(() => { this.purging = null })
    if (this.seen.size === 0) return
    const scopes = [...this.seen.keys()]
    let at = 0 // not Math.max(...values): past ~120,000 scopes the spread throws RangeError, and seenAt stopped moving
    for (const used of this.seen.values()) if (used > at) at = used
    this.seen.clear()
    try {
      await this.collection.updateMany({ scope: { $in: scopes } }, { $max: { seenAt: new Date(at) } })
    } catch (err) {
      for (const scope of scopes) if (!this.seen.has(scope)) this.seen.set(scope, at)
      throw err
    }
    for (const scope of scopes) this.seenMoved.set(scope, at)
    if (this.seenMoved.size > 2 * this.maxEntries) this.seenMoved.clear() // scopes long gone; the next use moves theirs again
  }

  /**
   * A deleted name stays as a document of value null, so that a message
   * older than its deletion, delivered again, does not bring it back: a
   * collector that deletes as it goes (a message's chunks, once whole) left
   * one per deletion for good (85,102 documents for 7,741 names in a trial),
   * each read again with its scope. Every seenEvery, those of the scopes
   * this worker holds are deleted once no such message can come: the
   * deletion's batch formed a second before the master received the oldest
   * message it still holds. A failure is counted and tried again. A dead
   * letter replayed later (`collector replay`) may set a name deleted
   * since: its change is older than the deletion.
   */
  async purgeDeleted (now = Date.now()) {
    if (this.heldSince === null || now - this.purgedAt < this.seenEvery || this.scopes.size === 0) return
    this.purgedAt = now
    try {
      const held = await this.heldSince()
      if (!(held > 0)) return // it cannot say
      // By the deletion's own order (its batch id: the second the batch was formed × 65,536 + n), not seenAt,
      // which moves forward while the scope is in use: a batch formed a second before the oldest held arrival.
      const before = (Math.floor(Math.min(held, now) / 1000) - 1) * 0x10000
      // With scopeBefore, never a scope's last document: a scope found empty reads what an earlier version kept.
      const scopes = [...this.scopes].filter(([, values]) => this.scopeBefore === null || values.size > 0).map(([scope]) => scope)
      for (let i = 0; i < scopes.length; i += 1000) {
        const { deletedCount } = await this.collection.deleteMany({ scope: { $in: scopes.slice(i, i + 1000) }, 'value.value': null, 'value.batch': { $lt: before } })
        this.counts.purged += deletedCount || 0
      }
    } catch {
      this.counts.purgeFailed++
    }
  }

  accept () {} // records are not this store's: decode changes it through arrival.kept

  stats () {
    return { ...super.stats(), scopes: this.scopes.size, entries: this.entries, ...this.counts }
  }

  stateStats () {
    return { held: { kept: this.entries }, evicted: { kept: this.counts.forgotten } }
  }
}

module.exports = { KeptState }
