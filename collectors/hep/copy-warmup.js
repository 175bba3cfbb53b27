'use strict'

// Runs in a HEP worker as it starts (the definition's `warm`): its memory
// of copies (call-memory.js StoredCopies) read back from the SIP messages stored
// in the last seconds, so that a copy arriving after the worker holding its
// original died (two agents copying one path, the second behind the first)
// is known as one here too, not stored again. What arrived is found by
// `_id`, whose leading seconds are the batch's arrival (batch-ids.js):
// the index every collection has. A message whose raw text was cut
// (`truncated`) is left out: its copies' hash is of the whole.

const { storedCopyKey } = require('./hep-records')

// The most read back, the newest first: what a CopyWindow holds in one generation.
const MAX_WARMED = 100000

/**
 * Reads back into `state.stored` (call-memory.js StoredCopies) what arrived
 * within the copy memory's reach (two generations of its span, and the
 * second the oldest of them began in), held as long again; gives how many.
 */
async function warmCopies (state, db, settings) {
  const { copies, stored } = state
  if (copies.windowMs <= 0) return 0
  const { mongo: { ObjectId } } = require('mongoose') // in the worker only (the master loads no driver): the one mongoose uses
  const since = ObjectId.createFromTime(Math.floor((Date.now() - 2 * copies.span) / 1000) - 1)
  const cursor = db.collection(settings.sipMessagesCollection).find({ _id: { $gte: since } }, { projection: { src: 1, dst: 1, raw: 1, truncated: 1, at: 1 }, sort: { _id: -1 }, limit: MAX_WARMED })
  let warmed = 0
  for await (const doc of cursor) {
    const key = storedCopyKey(doc)
    if (key === null || !(doc.at instanceof Date) || !(doc._id instanceof ObjectId)) continue
    stored.add(key, doc.at.getTime(), doc._id.toHexString())
    warmed++
  }
  stored.until = Date.now() + 2 * copies.span
  return warmed
}

module.exports = { warmCopies }
