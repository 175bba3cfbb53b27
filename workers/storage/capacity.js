'use strict'

const { mongo: { BSON } } = require('mongoose') // the driver mongoose uses: one copy loaded

// Documents read to estimate what the server does not report.
const SAMPLE = 100
// Bytes an index entry costs beyond its key: the record id and the entry's
// own overhead (an estimate; MongoDB's WiredTiger also prefix-compresses keys).
const INDEX_ENTRY_OVERHEAD = 16
// How far back growth is measured: the samples of the last hour, once they
// span 10 minutes (from seconds apart, a burst at start read as +1 GiB a day).
const GROWTH_WINDOW_MS = 3600000
const GROWTH_MIN_SPAN_MS = 600000
const DAY_MS = 86400000
const NAMESPACE_NOT_FOUND = 26

/**
 * What one collection holds: `{ documents, dataBytes, indexBytes,
 * freeBytes, usedBytes, estimated, oldest, newest }`. Sizes as the server
 * reports them (`$collStats` storageStats, summed over shards; the
 * `collStats` command where that stage is unknown): on MongoDB the bytes
 * on disk, compressed (`storageSize`, `totalIndexSize`, `freeStorageSize`
 * reusable). A server that reports no storage size (mongo-java-server: its
 * `size`, the documents' BSON, and no real index sizes) gets estimates
 * from a sample of the documents (the first in natural order): `documents × average size` when
 * it reports no size either, and the index keys those documents give,
 * `estimated: true`. `oldest`, `newest`: the extremes of the target's
 * date field (null when empty, or not read: `datesRead` false, extremes).
 */
async function measureCollection (db, target) {
  const collection = db.collection(target.collection)
  const stats = await storageStats(db, collection)
  const documents = stats.count || 0
  const out = { documents, dataBytes: 0, indexBytes: 0, freeBytes: 0, usedBytes: 0, estimated: false, oldest: null, newest: null, datesRead: true }
  const dates = documents > 0 ? await extremes(collection, target.field, !(stats.storageSize > 0), documents) : [null, null]
  if (dates === null) out.datesRead = false
  else [out.oldest, out.newest] = dates
  if (stats.storageSize > 0) {
    out.dataBytes = stats.storageSize
    out.indexBytes = stats.totalIndexSize || 0
    out.freeBytes = stats.freeStorageSize || 0
  } else if (documents > 0) {
    const sample = await collection.find({}).limit(SAMPLE).toArray()
    const indexes = await collection.listIndexes().toArray()
    out.dataBytes = stats.size > 0 ? stats.size : Math.round(documents * mean(sample, (doc) => BSON.calculateObjectSize(doc)))
    out.indexBytes = Math.round(documents * mean(sample, (doc) => indexBytesOf(doc, indexes)))
    out.estimated = true
  }
  out.usedBytes = Math.max(0, out.dataBytes + out.indexBytes - out.freeBytes)
  return out
}

// $collStats (one reply per shard) else collStats; a collection not there yet holds nothing.
async function storageStats (db, collection) {
  try {
    const replies = await collection.aggregate([{ $collStats: { storageStats: {} } }]).toArray()
    const sum = { count: 0, size: 0, storageSize: 0, totalIndexSize: 0, freeStorageSize: 0 }
    for (const { storageStats: s } of replies) for (const key of Object.keys(sum)) sum[key] += Number(s[key]) || 0
    return sum
  } catch (err) {
    if (err.code === NAMESPACE_NOT_FOUND) return { count: 0 }
  }
  try {
    return await db.command({ collStats: collection.collectionName })
  } catch (err) {
    if (err.code === NAMESPACE_NOT_FOUND || /not found|does not exist/i.test(err.message)) return { count: 0 }
    throw err
  }
}

// The oldest and newest dates in `field`, by its index. A server that
// keeps no index to sort by (mongo-java-server, which reports no storage
// size either) read and sorted the whole collection for each, under the
// collection's lock, every write waiting (12 s at 400,000 documents, two a
// minute per collector: a trial's three collectors on one collection
// stalled for minutes); its natural order is not arrival order (freed
// places are filled first; on disk it sorts for $natural: -1). There a
// collection of at most UNSORTED_READ_MAX documents is read once for both
// ($group, no sort: 280 ms at 200,000 documents in memory, 4.4 s on disk);
// a larger one's extremes are not measured (null, `datesRead` false).
const UNSORTED_READ_MAX = 20000

async function extremes (collection, field, unsorted, documents) {
  if (unsorted) {
    if (documents > UNSORTED_READ_MAX) return null
    const [found] = await collection.aggregate([{ $match: { [field]: { $type: 'date' } } }, { $group: { _id: null, oldest: { $min: `$${field}` }, newest: { $max: `$${field}` } } }]).toArray()
    return found ? [found.oldest, found.newest] : [null, null]
  }
  const first = (order) => collection.find({ [field]: { $type: 'date' } }, { projection: { [field]: 1 } }).sort({ [field]: order }).limit(1).toArray()
  const [[oldest], [newest]] = await Promise.all([first(1), first(-1)])
  const date = (doc) => doc && valueAt(doc, field) instanceof Date ? valueAt(doc, field) : null
  return [date(oldest), date(newest)]
}

/**
 * The oldest date in `field` of the documents matching `filter` (epoch
 * ms), or null: by the index, or without one (`unsorted`) by reading them
 * all once, unsorted (the storage budget's, when over it).
 */
async function oldestOf (collection, filter, field, unsorted) {
  let value
  if (unsorted) [{ value } = {}] = await collection.aggregate([{ $match: filter }, { $group: { _id: null, value: { $min: `$${field}` } } }]).toArray()
  else [value] = (await collection.find(filter, { projection: { [field]: 1 } }).sort({ [field]: 1 }).limit(1).toArray()).map((doc) => valueAt(doc, field))
  return value instanceof Date ? value.getTime() : null
}

function valueAt (doc, path) {
  let value = doc
  for (const part of path.split('.')) value = value == null ? undefined : value[part]
  return value === undefined ? null : value
}

// The bytes of every index's key for one document, entry overhead included.
function indexBytesOf (doc, indexes) {
  let bytes = 0
  for (const index of indexes) {
    const key = {}
    for (const field of Object.keys(index.key)) key[field] = valueAt(doc, field)
    bytes += BSON.calculateObjectSize(key) + INDEX_ENTRY_OVERHEAD
  }
  return bytes
}

function mean (items, of) {
  if (items.length === 0) return 0
  return items.reduce((sum, item) => sum + of(item), 0) / items.length
}

/**
 * Net growth per day of one collection from its measurements `[{ at,
 * documents, usedBytes }]`, oldest first, over the last hour, or its
 * retention (`retentionMs`) when shorter: a collection filling up to a
 * retention of minutes is steady once it is reached, and an hour of
 * measurements read that fill-up as growth (+1.3 GiB a day for one that held
 * still). `{ documents, bytes }` a day at that rate (retention deleting as
 * fast as data comes makes it 0), or null before measurements 10 minutes apart.
 */
function growthPerDay (samples, retentionMs = 0) {
  const last = samples[samples.length - 1]
  const window = retentionMs > 0 ? Math.max(GROWTH_MIN_SPAN_MS, Math.min(GROWTH_WINDOW_MS, retentionMs)) : GROWTH_WINDOW_MS
  const first = samples.find((s) => last.at - s.at <= window)
  if (!first || last.at - first.at < GROWTH_MIN_SPAN_MS) return null
  const days = (last.at - first.at) / DAY_MS
  return { documents: Math.round((last.documents - first.documents) / days), bytes: Math.round((last.usedBytes - first.usedBytes) / days) }
}

/** Samples kept for growthPerDay: those of the window. */
function trimSamples (samples) {
  const last = samples[samples.length - 1]
  return samples.slice(samples.findIndex((s) => last.at - s.at <= GROWTH_WINDOW_MS))
}

/** Whether a measure found a server with no index to sort by (estimated: it reports no storage size). */
const unsorted = (measured) => Boolean(measured && measured.estimated)

module.exports = { measureCollection, oldestOf, unsorted, growthPerDay, trimSamples }
