'use strict'

// What a stream collection written by an earlier version needs before this
// one writes it (a rolling upgrade): StreamWriter runs both.
const { pairKey } = require('./stream-key')

const LEGACY_SENTINEL_ID = '__collector_cluster_never_insert__'
const BACKFILL_BATCH = 1000

/**
 * Once per worker start, before it writes. Earlier versions kept a
 * sentinel document in `streams` for never-insert upserts to collide
 * with; it goes, so that every document there is a stream.
 */
async function removeLegacySentinel (collection) {
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
async function backfillPairKeys (collection, { batchSize = BACKFILL_BATCH } = {}) {
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

module.exports = { removeLegacySentinel, backfillPairKeys }
