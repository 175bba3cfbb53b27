'use strict'

const { INVALID_ID_FIELD, packetOp, pairOp, sideOps, endOps } = require('./stream-ops')
const { pairKey, flowKey, directionKey } = require('./stream-key')
const { checkAccounted, writeAccounted } = require('./write-accounting')
const { BoundedMap } = require('../../lib/shared/bounded-map')
const { backfillPairKeys } = require('./stream-upgrade')
const { entryGuarded, isGuardedFilter } = require('./write-guard')

const DUPLICATE_KEY = 11000
// MongoDB refusing a document over 16 MiB: an update growing it past that
// (17419), or BSONObjectTooLarge (10334).
const TOO_LARGE = Object.freeze([17419, 10334])
const MAX_ROUNDS = 6
// How often, at most, a write first makes sure the unique indexes exist.
const INDEX_CHECK_MS = 1000
// Senders whose side is remembered (one per direction of a stream: the
// senders' choice). One forgotten costs an E11000 and a round, once.
const SIDE_CACHE_LIMIT = 200000
// How often at most a write that left entries unresolved backfills again
// (see backfillAgain).
const BACKFILL_RETRY_MS = 5000

/**
 * Writes coalesced entries with unordered bulkWrites. Remembers which side
 * of its stream each sender holds, so a steady stream costs one upsert per
 * flush. A wrong or stale belief costs an E11000 and one more round, never
 * a duplicate: the unique { pairKey, openKey } index arbitrates between
 * writers in any process on any host.
 *
 * Each batch once: a side records per origin the highest batch written to
 * it (`<side>.watermarks.<origin>`), and a guarded upsert applies only while
 * those are below the batches it carries (stream-ops.js guard). One that
 * misses because the side has stored some of them (another writer of the
 * same batches got there first: the workers of a SIGKILLed master and the
 * next run replaying its disk buffer, a worker and its replacement, or this
 * writer's own earlier write whose reply was lost) costs one read of the
 * watermarks, and the entry keeps only the segments above them
 * (`alreadyApplied` segments are dropped). A watermark inside a segment
 * (a run of first deliveries) means another writer replays that origin's
 * batches one by one from below it: the side's count for that origin is
 * left to it (`yielded`), since writing the later batches would raise the
 * watermark over those in between. `guardAll()` says whether every upsert
 * is guarded; if not, only those of entries holding a redelivered or a
 * retried segment are (see StreamWorker#guardsEveryWrite).
 *
 * `write(entries)` resolves with `{ failed, unresolved }`: entries the
 * server refused for a reason other than a duplicate key (`tooLarge`: for
 * the 16 MiB bound on one document), and entries still
 * bouncing after MAX_ROUNDS (retry them next flush). On a database error it
 * throws with `err.unwritten`: the entries not known to be written (the
 * failing chunk counts as unwritten: the coalescer's restore marks them
 * retried, so that written again they apply only if they were not).
 */
class StreamWriter {
  /**
   * @param {object} collection the native `streams` collection
   * @param {{ maxBatchOps?: number, ensureIndexes?: () => Promise<unknown>, maxSides?: number, guardAll?: () => boolean }} [options]
   *   ensureIndexes makes sure the unique indexes exist: checks with a read, creates them only if missing;
   *   maxSides: senders whose side is remembered (`sides.evicted` counts the forgotten);
   *   guardAll: whether every upsert of batches is guarded (asked once per write)
   */
  constructor (collection, { maxBatchOps = 1000, ensureIndexes = null, maxSides = SIDE_CACHE_LIMIT, guardAll = () => true } = {}) {
    this.collection = collection
    this.maxBatchOps = maxBatchOps
    this.ensureIndexes = ensureIndexes
    this.indexesCheckedAt = Date.now()
    this.backfilledAt = 0
    this.sides = new BoundedMap(maxSides) // an entry's key (sender → peer) → 'to'; absent: 'from'
    this.guardAll = guardAll
    // Sides and origins left to another writer (see keepUnapplied): a
    // direction key and origin → true. Only a worker whose batches are
    // replayed by another while it still writes (a SIGKILLed master's) has any.
    this.yielded = new Set()
    // sideUpdates: side entries written (an SR without report blocks, a
    // CNAME); sideMatches: open streams they updated. An SSRC in no open
    // stream updates nothing: so many updates and no matches is visible.
    // alreadyApplied: segments not written because their side had stored
    // their batches; yielded: sides whose count for an origin was left to
    // another writer of its batches.
    // tooLarge: of the rejected, those refused for the 16 MiB bound on a document.
    this.stats = { ops: 0, bulkWrites: 0, duplicateRetries: 0, rejected: 0, tooLarge: 0, sideUpdates: 0, sideMatches: 0, alreadyApplied: 0, yielded: 0, splits: 0 }
  }

  async write (entries, now = new Date()) {
    await this.checkIndexes()
    let pending = this.yielded.size > 0 ? entries.filter((entry) => this.dropYielded(entry)) : entries
    const failed = []
    const guardAll = this.guardAll()
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const next = []
      for (let i = 0; i < pending.length; i += this.maxBatchOps) {
        const chunk = pending.slice(i, i + this.maxBatchOps)
        try {
          await this.writeChunk(chunk, now, next, failed, guardAll)
        } catch (err) {
          err.unwritten = (err.chunkUnwritten || chunk).concat(pending.slice(i + this.maxBatchOps), next)
          delete err.chunkUnwritten
          throw err
        }
      }
      pending = next
    }
    if (pending.length > 0) await this.backfillAgain()
    return { failed, unresolved: pending }
  }

  // The packets' upserts (one stream each), then the endpoint-wide
  // updateManys: side fields, then BYEs (apart, so that the sides' matched
  // count is theirs; both are rare). Apart from the upserts, because the
  // driver retries a bulkWrite after a network error or a failover
  // (retryable writes) only if it holds no multi-document update: together,
  // the packets' $inc would lose that exactly-once retry whenever a side
  // update rode along. If a later one fails, only its entries are unwritten.
  async writeChunk (entries, now, retry, failed, guardAll) {
    const opsOf = () => ({ ops: [], owners: [] }) // owners[i]: the entries op i writes (one, or both directions)
    const streamOps = opsOf()
    const sideOpsOf = opsOf()
    const endOpsOf = opsOf()
    const add = (target, op, entryList) => {
      target.ops.push(op)
      target.owners.push(entryList)
    }
    const partners = this.partnersOf(entries)
    const guarded = (entry) => entryGuarded(entry, guardAll)
    for (const entry of entries) {
      const partner = partners.get(entry)
      if (partner === null) continue // written by its partner's op
      if (partner) add(streamOps, pairOp(entry, partner, now, guarded(entry) || guarded(partner)), [entry, partner])
      else if (entry.kind === 'packet') add(streamOps, packetOp(entry, this.sideOf(entry), now, guarded(entry)), [entry])
      else if (entry.kind === 'side') for (const op of sideOps(entry, now)) add(sideOpsOf, op, [entry])
      else for (const op of endOps(entry, now)) add(endOpsOf, op, [entry])
    }
    const missed = []
    const later = sideOpsOf.owners.concat(endOpsOf.owners)
    const upserts = await this.bulkWrite(streamOps.ops, { upserts: true })
    this.settle(streamOps.owners, upserts.errors, retry, failed, streamOps.ops, missed)
    await this.resolveMissed(missed, retry, later)
    if (upserts.error) {
      upserts.error.chunkUnwritten = [...new Set(upserts.unwritten.map((i) => streamOps.owners[i]).concat(later).flat())]
      throw upserts.error
    }
    const sides = await this.endpointWrite(sideOpsOf, retry, failed, endOpsOf.owners)
    this.stats.sideUpdates += sideOpsOf.ops.length / 2
    this.stats.sideMatches += sides.matched
    await this.endpointWrite(endOpsOf, retry, failed)
  }

  // `later`: owners of the writes after this one, unwritten too if it fails.
  async resolveMissed (missed, retry, later) {
    if (missed.length === 0) return
    try {
      await this.keepUnapplied(missed, retry)
    } catch (err) {
      err.chunkUnwritten = [...new Set(missed.concat(later.flat()))]
      throw err
    }
  }

  // `later`: owners of the writes after this one, unwritten too if it fails.
  async endpointWrite ({ ops, owners }, retry, failed, later = []) {
    let outcome
    try {
      outcome = await this.bulkWrite(ops)
    } catch (err) {
      err.chunkUnwritten = [...new Set(owners.concat(later).flat())]
      throw err
    }
    this.settle(owners, outcome.errors, retry, failed)
    return outcome
  }

  // Per-op write errors: a packet on the wrong side is retried, the rest
  // fail. A guarded upsert's miss may also mean that its side stored some of
  // its batches: its entries go to `missed`, for keepUnapplied to tell.
  settle (owners, writeErrors, retry, failed, ops = null, missed = null) {
    for (const error of writeErrors) {
      const wasGuarded = ops !== null && isGuardedFilter(ops[error.index].updateOne.filter)
      for (const entry of owners[error.index]) {
        if ((error.code === DUPLICATE_KEY || error.code === INVALID_ID_FIELD) && entry.kind === 'packet') {
          this.stats.duplicateRetries++
          if (wasGuarded) {
            missed.push(entry)
            continue
          }
          this.flip(entry)
          retry.push(entry)
        } else {
          const tooLarge = TOO_LARGE.includes(error.code)
          this.stats.rejected++
          if (tooLarge) this.stats.tooLarge++
          failed.push({ entry, error: error.errmsg || String(error.code), tooLarge })
        }
      }
    }
  }

  /**
   * Pairs the two directions of a stream when this writer believes one
   * sender is `from` and the other `to`: the 'from' entry maps to its
   * partner, the partner to null. Directions with any other belief (both
   * unknown yet, say) are written apart, as before.
   */
  partnersOf (entries) {
    const partners = new Map()
    const byDirection = new Map()
    for (const entry of entries) if (entry.kind === 'packet') byDirection.set(entry.key, entry)
    for (const entry of entries) {
      if (entry.kind !== 'packet' || partners.has(entry) || this.sideOf(entry) !== 'from') continue
      const peer = byDirection.get(directionKey(entry.toID, entry.fromID))
      if (!peer || peer === entry || this.sideOf(peer) !== 'to') continue
      partners.set(entry, peer)
      partners.set(peer, null)
    }
    return partners
  }

  /**
   * The highest batch of `origin` stored on the side of `item`'s sender, or
   * null: each side carries, per origin, the highest batch written there
   * (`<side>.watermarks.<origin>`), and an origin's batches are processed
   * in order. One read (either direction of the open stream): for
   * redelivered batches only.
   */
  async watermark (item, origin) {
    return (await this.watermarks([item], origin)).get(directionKey(item.fromID, item.toID))
  }

  /**
   * The same for many packets in one read: a Map from each sender's
   * `directionKey(fromID, toID)` to its watermark or null.
   */
  async watermarks (items, origin) {
    const sides = await this.openSides(items)
    const result = new Map()
    for (const item of items) {
      const key = directionKey(item.fromID, item.toID)
      const watermark = sides.has(key) ? sides.get(key).watermarks[origin] : null
      result.set(key, typeof watermark === 'number' ? watermark : null)
    }
    return result
  }

  /**
   * The open streams of `items`' senders, in one read: a Map from each side's
   * `directionKey(its ID, its peer's)` to `{ side, watermarks }` ('from' or
   * 'to', and its watermarks by origin). The filter names the pairs too, so
   * that on a sharded cluster the read goes only to the shards holding them.
   * (mongo-java-server answers `$in` on a compound index with a collection
   * scan; one per redelivered batch, or per write that missed a guard.)
   */
  async openSides (items) {
    const pairs = new Set()
    const keys = new Set()
    for (const item of items) {
      const fromID = String(item.fromID)
      const toID = String(item.toID)
      pairs.add(pairKey(fromID, toID))
      keys.add(flowKey(fromID, toID)).add(flowKey(toID, fromID))
    }
    const projection = { 'from.ID': 1, 'to.ID': 1, 'from.watermarks': 1, 'to.watermarks': 1 }
    const docs = await this.collection.find({ pairKey: { $in: [...pairs] }, flowKey: { $in: [...keys] } }, { projection }).toArray()
    const sides = new Map()
    for (const doc of docs) {
      for (const [side, mine, peer] of [['from', doc.from, doc.to], ['to', doc.to, doc.from]]) {
        if (mine && peer) sides.set(directionKey(mine.ID, peer.ID), { side, watermarks: mine.watermarks || {} })
      }
    }
    return sides
  }

  /**
   * Entries whose guarded upsert missed, after one read of their open
   * streams: the sender's side as the document has it (the belief is
   * corrected), and of its segments those whose batches the side stored
   * (watermark at or past the segment's last batch) are dropped, the rest
   * written again (`retry`). A watermark inside a segment: that origin's
   * segments go (see yielded). An entry with nothing left is done: its side
   * fields and maxima were written with the batches that were.
   */
  async keepUnapplied (entries, retry) {
    const sides = await this.openSides(entries)
    for (const entry of entries) {
      const open = sides.get(entry.key)
      if (open && open.side === 'to') this.sides.set(entry.key, 'to')
      else this.sides.delete(entry.key) // no open stream: this sender starts one
      if (open) entry.segments = entry.segments.filter((segment) => this.notApplied(entry, segment, open.watermarks))
      if (this.yielded.size > 0) this.dropYielded(entry)
      entry.count = entry.segments.reduce((sum, segment) => sum + segment.count, 0)
      if (entry.segments.length > 0) retry.push(entry)
    }
  }

  // Whether `segment`'s batches are not stored on the side whose watermarks
  // these are; notes a segment applied, or a side and origin to leave.
  notApplied (entry, segment, watermarks) {
    const watermark = segment.origin === null ? undefined : watermarks[segment.origin]
    if (typeof watermark !== 'number' || watermark < segment.first) return true
    if (watermark < segment.last) {
      this.yielded.add(`${entry.key}\n${segment.origin}`)
      this.stats.yielded++
    } else {
      this.stats.alreadyApplied++
    }
    return false
  }

  // Drops the segments of origins this writer left to another on the
  // entry's side; false when none is left.
  dropYielded (entry) {
    if (entry.kind !== 'packet') return true
    entry.segments = entry.segments.filter((segment) => !this.yielded.has(`${entry.key}\n${segment.origin}`))
    entry.count = entry.segments.reduce((sum, segment) => sum + segment.count, 0)
    return entry.segments.length > 0
  }

  sideOf (entry) {
    return this.sides.get(entry.key) || 'from'
  }

  // E11000 (as 'from') or InvalidIdField (as 'to', see stream-ops) means the
  // sender is not on the side we tried: as 'from' another writer created the
  // stream the other way round; as 'to' the stream is gone (a new one must
  // start, with this sender as 'from').
  flip (entry) {
    const side = this.sideOf(entry) === 'from' ? 'to' : 'from'
    if (side === 'from') this.sides.delete(entry.key)
    else this.sides.set(entry.key, side)
  }

  /**
   * A collection dropped or recreated under running collectors (a restarted
   * in-memory server, an operator's drop) comes back without its unique
   * indexes, and then both ends of a new call make two documents. Before
   * writing, at most once a second, the indexes are looked at (a read) and
   * created again if missing: a write more than a second after the
   * recreation cannot duplicate.
   */
  async checkIndexes () {
    if (!this.ensureIndexes || Date.now() - this.indexesCheckedAt < INDEX_CHECK_MS) return
    this.indexesCheckedAt = Date.now()
    await this.ensureIndexes()
  }

  /**
   * Runs one unordered bulkWrite; returns `{ errors, matched }`: its per-op
   * write errors and the documents it matched; throws on anything else.
   * `upserts`: every op is an updateOne upsert, so the reply must account
   * for each (write-accounting.js); updateMany ops touch any number of
   * documents and cannot be.
   */
  async bulkWrite (ops, { upserts = false } = {}) {
    if (ops.length === 0) return { errors: [], matched: 0 }
    this.stats.bulkWrites++
    this.stats.ops += ops.length
    if (upserts && ops.every((op) => isGuardedFilter(op.updateOne.filter))) return this.guardedWrite(ops)
    let result
    try {
      result = await this.collection.bulkWrite(ops, { ordered: false })
    } catch (err) {
      if (!Array.isArray(err.writeErrors) || err.writeErrors.length === 0) throw err
      if (upserts) checkAccounted(err.result, ops.length, err.writeErrors.length, 'stream upserts')
      return { errors: err.writeErrors, matched: (err.result && err.result.matchedCount) || 0 }
    }
    if (upserts) checkAccounted(result, ops.length, 0, 'stream upserts')
    return { errors: [], matched: result.matchedCount || 0 }
  }

  /**
   * Guarded upserts, each applied at most once however often it is sent:
   * a reply that does not account for them is written again in halves down
   * to one op (writeAccounted), so one op a server misreports holds back
   * only its own entries. Returns bulkWrite's `{ errors, matched }` and the
   * ops not proven stored (`unwritten`, with the `error` that says why);
   * throws when nothing could be written (the server unreachable).
   */
  async guardedWrite (ops) {
    const out = await writeAccounted(this.collection, ops, 'stream upserts')
    this.stats.splits += out.splits
    if (out.error && out.unwritten.length === ops.length && out.splits === 0) throw out.error
    const errors = out.collided.map((index) => ({ index, code: DUPLICATE_KEY })).concat(out.refused)
    return { errors, matched: out.matched, unwritten: out.unwritten, error: out.unwritten.length > 0 ? out.error : null }
  }

  /**
   * Entries still bouncing after MAX_ROUNDS may be those of a stream that a
   * collector of an earlier version created after this worker's prepare
   * (a rolling upgrade): without `pairKey` the upserts miss it, and its old
   * single-field unique indexes refuse a second one. Backfilling again (at
   * most every BACKFILL_RETRY_MS) lets the next flush find it. A failure
   * here is left to the next time: it changed nothing this write did.
   */
  async backfillAgain () {
    if (Date.now() - this.backfilledAt < BACKFILL_RETRY_MS) return
    this.backfilledAt = Date.now()
    await backfillPairKeys(this.collection).catch(() => {})
  }
}

module.exports = StreamWriter
