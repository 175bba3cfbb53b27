'use strict'

const { INVALID_ID_FIELD, packetOp, pairOp, sideOps, endOps } = require('./stream-ops')
const { pairKey, flowKey, directionKey } = require('./stream-key')
const { checkAccounted } = require('./write-accounting')
const { BoundedMap } = require('../../lib/shared/bounded-map')

const DUPLICATE_KEY = 11000
const LEGACY_SENTINEL_ID = '__collector_cluster_never_insert__'
const MAX_ROUNDS = 6
// How often, at most, a write first makes sure the unique indexes exist.
const INDEX_CHECK_MS = 1000
// Senders whose side is remembered (one per direction of a stream: the
// senders' choice). One forgotten costs an E11000 and a round, once.
const SIDE_CACHE_LIMIT = 200000
// Documents given their pairKey per bulkWrite, and how often at most a
// write that left entries unresolved backfills again (see backfillAgain).
const BACKFILL_BATCH = 1000
const BACKFILL_RETRY_MS = 5000

/**
 * Writes coalesced entries with unordered bulkWrites. Remembers which side
 * of its stream each sender holds, so a steady stream costs one upsert per
 * flush. A wrong or stale belief costs an E11000 and one more round, never
 * a duplicate: the unique { pairKey, openKey } index arbitrates between
 * writers in any process on any host.
 *
 * `write(entries)` resolves with `{ failed, unresolved }`: entries the
 * server refused for a reason other than a duplicate key, and entries still
 * bouncing after MAX_ROUNDS (retry them next flush). On a database error it
 * throws with `err.unwritten`: the entries not known to be written (the
 * failing chunk counts as unwritten; see docs/storage.md on at-least-once `$inc`).
 */
class StreamWriter {
  /**
   * @param {object} collection the native `streams` collection
   * @param {{ maxBatchOps?: number, ensureIndexes?: () => Promise<unknown>, maxSides?: number }} [options]
   *   ensureIndexes makes sure the unique indexes exist: checks with a read, creates them only if missing;
   *   maxSides: senders whose side is remembered (`sides.evicted` counts the forgotten)
   */
  constructor (collection, { maxBatchOps = 1000, ensureIndexes = null, maxSides = SIDE_CACHE_LIMIT } = {}) {
    this.collection = collection
    this.maxBatchOps = maxBatchOps
    this.ensureIndexes = ensureIndexes
    this.indexesCheckedAt = Date.now()
    this.backfilledAt = 0
    this.sides = new BoundedMap(maxSides) // an entry's key (sender → peer) → 'to'; absent: 'from'
    // sideUpdates: side entries written (an SR without report blocks, a
    // CNAME); sideMatches: open streams they updated. An SSRC in no open
    // stream updates nothing: so many updates and no matches is visible.
    this.stats = { ops: 0, bulkWrites: 0, duplicateRetries: 0, rejected: 0, sideUpdates: 0, sideMatches: 0 }
  }

  async write (entries, now = new Date()) {
    await this.checkIndexes()
    let pending = entries
    const failed = []
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const next = []
      for (let i = 0; i < pending.length; i += this.maxBatchOps) {
        const chunk = pending.slice(i, i + this.maxBatchOps)
        try {
          await this.writeChunk(chunk, now, next, failed)
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
  async writeChunk (entries, now, retry, failed) {
    const opsOf = () => ({ ops: [], owners: [] }) // owners[i]: the entries op i writes (one, or both directions)
    const streamOps = opsOf()
    const sideOpsOf = opsOf()
    const endOpsOf = opsOf()
    const add = (target, op, entryList) => {
      target.ops.push(op)
      target.owners.push(entryList)
    }
    const partners = this.partnersOf(entries)
    for (const entry of entries) {
      const partner = partners.get(entry)
      if (partner === null) continue // written by its partner's op
      if (partner) add(streamOps, pairOp(entry, partner, now), [entry, partner])
      else if (entry.kind === 'packet') add(streamOps, packetOp(entry, this.sideOf(entry), now), [entry])
      else if (entry.kind === 'side') for (const op of sideOps(entry, now)) add(sideOpsOf, op, [entry])
      else for (const op of endOps(entry)) add(endOpsOf, op, [entry])
    }
    this.settle(streamOps.owners, (await this.bulkWrite(streamOps.ops, { upserts: true })).errors, retry, failed)
    const sides = await this.endpointWrite(sideOpsOf, retry, failed, endOpsOf.owners)
    this.stats.sideUpdates += sideOpsOf.ops.length / 2
    this.stats.sideMatches += sides.matched
    await this.endpointWrite(endOpsOf, retry, failed)
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

  // Per-op write errors: a packet on the wrong side is retried, the rest fail.
  settle (owners, writeErrors, retry, failed) {
    for (const error of writeErrors) {
      for (const entry of owners[error.index]) {
        if ((error.code === DUPLICATE_KEY || error.code === INVALID_ID_FIELD) && entry.kind === 'packet') {
          this.flip(entry)
          this.stats.duplicateRetries++
          retry.push(entry)
        } else {
          this.stats.rejected++
          failed.push({ entry, error: error.errmsg || String(error.code) })
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
   * `directionKey(fromID, toID)` to its watermark or null. The filter names the
   * pairs too, so that on a sharded cluster the read goes only to the
   * shards holding them. (mongo-java-server answers `$in` on a compound
   * index with a collection scan; one per redelivered batch.)
   */
  async watermarks (items, origin) {
    const pairs = new Set()
    const keys = new Set()
    for (const item of items) {
      const fromID = String(item.fromID)
      const toID = String(item.toID)
      pairs.add(pairKey(fromID, toID))
      keys.add(flowKey(fromID, toID)).add(flowKey(toID, fromID))
    }
    const projection = { flowKey: 1, 'from.ID': 1, 'to.ID': 1, [`from.watermarks.${origin}`]: 1, [`to.watermarks.${origin}`]: 1 }
    const docs = await this.collection.find({ pairKey: { $in: [...pairs] }, flowKey: { $in: [...keys] } }, { projection }).toArray()
    const bySide = new Map()
    for (const doc of docs) {
      for (const [side, peer] of [[doc.from, doc.to], [doc.to, doc.from]]) {
        if (!side || !peer) continue
        const watermark = side.watermarks && side.watermarks[origin]
        bySide.set(directionKey(side.ID, peer.ID), typeof watermark === 'number' ? watermark : null)
      }
    }
    const result = new Map()
    for (const item of items) {
      const key = directionKey(item.fromID, item.toID)
      result.set(key, bySide.has(key) ? bySide.get(key) : null)
    }
    return result
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
    await StreamWriter.backfillPairKeys(this.collection).catch(() => {})
  }

  /**
   * Once per worker start, before it writes. Earlier versions kept a
   * sentinel document in `streams` for never-insert upserts to collide
   * with; it goes, so that every document there is a stream.
   */
  static async prepare (collection) {
    await collection.deleteOne({ _id: LEGACY_SENTINEL_ID })
  }

  /**
   * Sets `pairKey` (the shard key, see schemas.js) on the stream documents
   * written before it existed: one pass over those missing it when the call
   * starts, BACKFILL_BATCH per unordered bulkWrite, each by `_id`. Safe to
   * run from many workers at once and again: every one sets the value the
   * document's own endpoints give, and those never change. A document
   * without two endpoint IDs (not a stream) is left as it is.
   *
   * Until it has run the upserts do not see such a stream (their filter
   * names `pairKey`), but cannot duplicate it either while the indexes of
   * earlier versions, unique on `openKey` and on `flowKey` alone, are still
   * there: they are dropped by hand once every collector is upgraded (see
   * docs/scaling.md). Resolves with `{ updated, skipped }`.
   */
  static async backfillPairKeys (collection, { batchSize = BACKFILL_BATCH } = {}) {
    const counts = { updated: 0, skipped: 0 }
    const cursor = collection.find({ pairKey: { $exists: false } }, { projection: { 'from.ID': 1, 'to.ID': 1 }, batchSize })
    let ops = []
    const write = async () => {
      if (ops.length > 0) counts.updated += (await collection.bulkWrite(ops, { ordered: false })).modifiedCount
      ops = []
    }
    try {
      for await (const doc of cursor) {
        const fromID = doc.from && doc.from.ID
        const toID = doc.to && doc.to.ID
        if (typeof fromID !== 'string' || typeof toID !== 'string') {
          counts.skipped++
          continue
        }
        ops.push({ updateOne: { filter: { _id: doc._id }, update: { $set: { pairKey: pairKey(fromID, toID) } } } })
        if (ops.length >= batchSize) await write()
      }
      await write()
    } finally {
      await cursor.close()
    }
    return counts
  }
}

module.exports = StreamWriter
