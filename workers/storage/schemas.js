'use strict'

const mongoose = require('mongoose')

const { Schema } = mongoose

const side = {
  ID: String,
  IP_ADDRESS: String,
  highestPacketNum: Number,
  firstPacketNum: Number,
  packets: Number
}

/**
 * The shard key of each collection, declared once: the indexes below are
 * built to fit them (test/integration/shard-keys.test.js checks it), and
 * they are what an operator passes to sh.shardCollection.
 * MongoDB enforces a unique index on a sharded collection only when the
 * shard key prefixes it, and routes an upsert only when its filter holds the
 * whole shard key.
 * - streams: `pairKey` (ranged), the endpoint pair, which every write by
 *   pair (upserts, the sweeper's close) carries: a stream's writes go to
 *   one shard, and both directions of a stream to the same one.
 * - counters and syslog: `_id` hashed. Both are written by `_id` alone
 *   (`YYYYMMDD/metric` upserts; ObjectId inserts), which hashing spreads
 *   over the shards (ranged, a day's counters or the ObjectIds' rising time
 *   would all land on the last chunk).
 */
const SHARD_KEYS = Object.freeze({
  streams: Object.freeze({ pairKey: 1 }),
  counters: Object.freeze({ _id: 'hashed' }),
  syslog: Object.freeze({ _id: 'hashed' })
})

/**
 * A stream: the bilateral flow between two endpoints. Mongoose declares the
 * shape and the indexes; the hot path writes through the native collection.
 * `strict: false` keeps protocol-specific side fields (jitter, loss, …).
 * `pairKey` (stream-key.js) names the endpoint pair, the same in both
 * directions, and never changes: the shard key. Documents written before
 * it existed get it from stream-upgrade.js backfillPairKeys.
 */
const streamSchema = new Schema({
  pairKey: { type: String, required: true },
  openKey: { type: String, required: true },
  flowKey: { type: String, required: true },
  active: Boolean,
  from: side,
  to: side,
  startTime: Date,
  endTime: Date,
  endedAt: Date,
  endReason: String,
  stream_ended: { from: Boolean, to: Boolean },
  metadata: { lastUpdated: Date, packets: Number },
  analytics: Schema.Types.Mixed
}, { collection: 'streams', strict: false, versionKey: false, autoIndex: false })

// The unique indexes start with the shard key, pairKey, or a sharded
// cluster would not enforce them. openKey and flowKey each determine the
// pair, so they are exactly as unique as openKey and flowKey alone were.
// One open stream per endpoint pair: the guarantee against duplicates.
streamSchema.index({ pairKey: 1, openKey: 1 }, { unique: true })
// The packet upserts' filter, these two keys and no other (see stream-key.js).
streamSchema.index({ pairKey: 1, flowKey: 1 }, { unique: true })
// The sweeper's scan, and side updates / BYE by endpoint.
streamSchema.index({ active: 1, 'metadata.lastUpdated': 1 })
streamSchema.index({ 'from.ID': 1, active: 1 })
streamSchema.index({ 'to.ID': 1, active: 1 })
// The calls of a window, most recent first, a page at a time (`collector
// calls --serve`, app/commands/calls-read.js): read at most a page's worth.
streamSchema.index({ endTime: 1 })

/** Per-day counter documents (see counter-store.js); written by `_id` only, the shard key. */
const counterSchema = new Schema({
  _id: String,
  metric: String,
  day: String,
  dayStart: Date, // the day's start: its age for retention (counter-store.js counterTarget)
  daily: Number,
  hourly: Schema.Types.Mixed,
  minute: Schema.Types.Mixed
}, { collection: 'counters', strict: false, versionKey: false, autoIndex: false })

counterSchema.index({ metric: 1, day: 1 })

/**
 * The indexes of `model`'s schema that its collection lacks, compared by
 * key (names aside): all of them when the collection is gone. A read
 * (listIndexes), where createIndexes is a schema command: on a sharded
 * cluster one for every shard, on FerretDB one that took locks.
 */
async function missingIndexes (model) {
  let present
  try {
    present = await model.collection.listIndexes().toArray()
  } catch (err) {
    if (err.code !== NAMESPACE_NOT_FOUND) throw err
    present = []
  }
  const keys = new Set(present.map((index) => JSON.stringify(index.key)))
  return model.schema.indexes().filter(([fields]) => !keys.has(JSON.stringify(fields)))
}

const NAMESPACE_NOT_FOUND = 26

/**
 * Binds a schema to a connection under a collection name and creates its
 * indexes. connection.model() starts mongoose's own set-up in the
 * background (create the collection, then each index); that finishes
 * first, so that createIndexes() never races it. Raced, mongo-java-server
 * was once seen to list the unique index and not enforce it (two stream
 * documents for one pair in a fresh database), while mongoose's own build
 * failed with IndexNotFound.
 */
async function defineModel (connection, name, schema, collection) {
  const model = connection.model(name, schema, collection)
  await model.init()
  await model.createIndexes()
  return model
}

/** The stream worker's models, indexes created. */
async function defineModels (connection, { streams = 'streams', counters = 'counters' } = {}) {
  return {
    Stream: await defineModel(connection, 'Stream', streamSchema, streams),
    Counter: await defineModel(connection, 'Counter', counterSchema, counters)
  }
}

module.exports = { SHARD_KEYS, streamSchema, counterSchema, defineModel, defineModels, missingIndexes }
