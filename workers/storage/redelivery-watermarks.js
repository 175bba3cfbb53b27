'use strict'

const { BoundedMap } = require('../../lib/shared/bounded-map')

// Watermarks read on the redelivery path, kept per origin and document (a
// stream side: the senders' choice); forgetting one only costs a read again.
const WATERMARK_CACHE_LIMIT = 100000
// How long a worker given a dead worker's batches waits, where first
// deliveries are not guarded, for what the dead one had on the wire; and
// the dead origins remembered as waited for.
const SETTLE_MS = 1000
const SETTLED_LIMIT = 1024

function watermarkKey (store, origin, key) {
  return `${store}\n${origin}\n${key}`
}

/**
 * What a worker knows of the batches a dead worker stored: per store,
 * origin and document, the origin's watermark there (null: none), read
 * from the database once (workers/mongo-worker.js redeliveredApplied).
 */
class RedeliveryWatermarks {
  constructor (limit = WATERMARK_CACHE_LIMIT, settleMs = SETTLE_MS) {
    this.known = new BoundedMap(limit)
    this.settled = new BoundedMap(SETTLED_LIMIT)
    this.settleMs = settleMs
  }

  /**
   * Before the first redelivered batch of `origin` (its worker died), where
   * a first delivery's upserts are not guarded (`guarded` false:
   * storage/write-guard.js, the embedded server): waits `settleMs` for the
   * server to apply what the dead worker had sent. Such a write landing
   * after this worker wrote the same batches counts them twice; the server
   * takes the sent commands of a closed connection still, and under its
   * lock it may take them after a command sent later on another.
   */
  async settle (origin, guarded) {
    if (guarded || this.settled.has(origin)) return
    this.settled.set(origin, true)
    await new Promise((resolve) => setTimeout(resolve, this.settleMs))
  }

  /**
   * Whether the effects of the redelivered batch `delivery` on one document
   * (`key`) are stored already: its origin's watermark there is at or past
   * the batch. `readWatermark()` reads it once per origin and document, the
   * dead worker's last word: a replacement gets an origin's batches in
   * order, and what it writes for them itself (held back until each batch
   * is through doWork, see MongoWorker#stage) only ever covers batches before the one
   * it asks about, so a value read earlier answers for every later batch.
   * Without that, every redelivered message cost a round trip, and a
   * replacement given 20,000 of them was killed again before it was done.
   */
  async applied (delivery, store, key, readWatermark) {
    let watermark = this.known.get(watermarkKey(store, delivery.origin, key))
    if (watermark === undefined) {
      watermark = await readWatermark(delivery.origin)
      this.remember(store, delivery.origin, key, watermark)
    }
    return watermark !== null && watermark >= delivery.batchId
  }

  /**
   * Reads ahead, for a redelivered batch (see prepareRedelivered), the
   * watermarks of `origin` that applied() will ask for: those of
   * `keys` (documents of one `store`) not known yet, in one read,
   * `readMany(keys, origin)` → Map key → watermark or null.
   */
  async prefetch (store, origin, keys, readMany) {
    const unknown = [...new Set(keys)].filter((key) => !this.known.has(watermarkKey(store, origin, key)))
    if (unknown.length === 0) return
    const read = await readMany(unknown, origin)
    for (const key of unknown) this.remember(store, origin, key, read.has(key) ? read.get(key) : null)
  }

  remember (store, origin, key, watermark) {
    this.known.set(watermarkKey(store, origin, key), watermark)
  }

  get size () { return this.known.size }
  get evicted () { return this.known.evicted }
}

module.exports = { RedeliveryWatermarks }
