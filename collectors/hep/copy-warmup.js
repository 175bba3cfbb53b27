'use strict'

// Runs in a HEP worker as it starts (the definition's `warm`): its memory
// of copies (call-memory.js StoredCopies) read back from the SIP messages stored
// in the last seconds, so that a copy arriving after the worker holding its
// original died (two agents copying one path, the second behind the first)
// is known as one here too, not stored again. What arrived is found by
// `_id`, whose leading seconds are the batch's arrival (batch-ids.js):
// the index every collection has. A message whose raw text was cut
// (`truncated`) is left out: its copies' hash is of the whole. RTCP keeps
// no document per report: a stream's side holds the copy keys of its
// reports of the last moment (`recentCaptures`, index.js rtcpItemsOf), read
// back from the streams written in those seconds (by
// `metadata.lastUpdated`, which every write moves).

const { storedCopyKey } = require('./hep-records')

// The most read back, the newest first: what a CopyWindow holds in one generation.
const MAX_WARMED = 100000

/**
 * Reads back into `state.stored` (call-memory.js StoredCopies) what arrived
 * within the copy memory's reach (two generations of its span, and the
 * second the oldest of them began in; from before the oldest message the
 * master holds when older, `heldSince()`), held as long again; gives how many.
 * A message of a packet that held several (a TCP segment, sip.js
 * sipMessagesOf) is stored as `{ m: <the packet's key>, r }`: read too, by
 * that key, which its packet delivered again has (not a copy of itself).
 */
async function warmCopies (state, db, settings, { heldSince } = {}) {
  const { copies, stored } = state
  if (copies.windowMs <= 0) return 0
  const { mongo: { ObjectId } } = require('mongoose') // in the worker only (the master loads no driver): the one mongoose uses
  const since = ObjectId.createFromTime(Math.floor(await readFrom(copies.span, heldSince) / 1000) - 1)
  const collection = db.collection(settings.sipMessagesCollection)
  const projection = { src: 1, dst: 1, raw: 1, truncated: 1, at: 1 }
  let warmed = 0
  // A range on _id takes one BSON type: the messages alone (an ObjectId), then those of several (a document).
  for (const range of [{ $gte: since }, { $gte: { m: since } }]) {
    const cursor = collection.find({ _id: range }, { projection, sort: { _id: -1 }, limit: MAX_WARMED - warmed })
    for await (const doc of cursor) {
      const key = storedCopyKey(doc)
      const id = doc._id instanceof ObjectId ? doc._id : doc._id && doc._id.m
      if (key === null || !(doc.at instanceof Date) || !(id instanceof ObjectId)) continue
      stored.add(key, doc.at.getTime(), id.toHexString())
      warmed++
    }
    if (warmed >= MAX_WARMED) break
  }
  if (warmed < MAX_WARMED) warmed += await warmReports(stored, db.collection(settings.streamsCollection), since.getTimestamp(), MAX_WARMED - warmed)
  stored.until = Date.now() + 2 * copies.span
  return warmed
}

// Where the read back starts: two spans before now, or before the oldest
// message the master still holds when it is older (the worker before this
// one left them unacknowledged: their copies' originals arrived just
// before them, however long this worker took to start).
async function readFrom (span, heldSince) {
  const from = Date.now() - 2 * span
  const held = typeof heldSince === 'function' ? await heldSince() : Infinity
  return held > 0 && Number.isFinite(held) ? Math.min(from, held - 2 * span) : from
}

// The recent reports of each side of the streams written since `since`, at
// most `limit`: into `stored` by their copy keys, with their messages' keys. The
// range is on the index { active, metadata.lastUpdated } (ended streams too:
// a BYE may have ended one since).
async function warmReports (stored, streams, since, limit) {
  const filter = { active: { $in: [true, false] }, 'metadata.lastUpdated': { $gte: since } }
  const cursor = streams.find(filter, { projection: { 'from.recentCaptures': 1, 'to.recentCaptures': 1, 'from.lastCapture': 1, 'to.lastCapture': 1 }, sort: { 'metadata.lastUpdated': -1 }, limit })
  let warmed = 0
  for await (const stream of cursor) {
    for (const side of [stream.from, stream.to]) {
      // lastCapture: the one report a side held before recentCaptures.
      const captures = side ? [].concat(Array.isArray(side.recentCaptures) ? side.recentCaptures : [], side.lastCapture || []) : []
      for (const capture of captures) {
        if (!capture || typeof capture.key !== 'string' || !(capture.at instanceof Date) || typeof capture.message !== 'string') continue
        stored.add(capture.key, capture.at.getTime(), capture.message)
        if (++warmed >= limit) return warmed
      }
    }
  }
  return warmed
}

module.exports = { warmCopies }
