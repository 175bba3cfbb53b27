'use strict'

const DatabaseError = require('../../exceptions/database-error')

/**
 * Whether a write's reply accounts for every operation sent (at least): each upsert
 * matched or inserted one document, each insert inserted one, or came back
 * as a write error. Only such a write is taken as stored. A
 * MongoDB-compatible server that says less has not proven the rest
 * (FerretDB 1.24 stops an unordered bulkWrite at its first failing
 * operation and reports only that one, and the rest never ran): the whole
 * write is then treated as failed — retried, nothing acknowledged — and
 * the error says why. The one place that judges a reply; the stream,
 * counter and syslog writers call it.
 *
 * @param {object|undefined} result the driver's BulkWriteResult or
 *   InsertManyResult (for a partly failed write, the error's `result`)
 * @param {number} sent operations sent, each an upsert or an insert
 * @param {number} refused write errors in the reply
 * @param {string} what what was sent, for the message ("stream upserts")
 * @throws {DatabaseError} `reason: 'unaccounted'`
 */
function checkAccounted (result, sent, refused, what) {
  const written = result ? (result.matchedCount || 0) + (result.upsertedCount || 0) + (result.insertedCount || 0) : 0
  // More than sent is let pass: mongo-java-server counts an unordered
  // insertMany's duplicates among its inserted as well as among its errors.
  if (written + refused >= sent) return
  throw new DatabaseError(`the server's reply to ${sent} ${what} accounts for ${written + refused} (${written} written, ${refused} refused): none of them is taken as stored, they are written again (does this server misreport unordered bulk writes?)`,
    { reason: 'unaccounted', sent, written, refused })
}

module.exports = { checkAccounted }

const DUPLICATE_KEY = 11000

/**
 * Writes `ops` as one unordered bulkWrite and says what became of each,
 * by index: `collided` (E11000: an insert whose `_id` is stored, or an
 * upsert whose filter missed a document that exists; `duplicateOn`, the
 * index the server named, by op), `refused` (other
 * write errors: `{ index, code, errmsg }`), `unwritten` (not proven
 * stored: write them again later), `error` (why, the last one) and
 * `matched` (documents the accounted replies matched).
 * A reply that does not account for every op (checkAccounted) is not taken
 * whole: the ops are written again in halves, down to one op at a time, so
 * that one op a server misreports cannot hold back the rest. That is safe
 * only for ops that applying twice leaves as once: inserts by key,
 * `$max`/`$min`/`$setOnInsert`, and `$inc` upserts conditional on their
 * batches' watermark. An op that is not (an `$inc` upsert sent unguarded,
 * storage/write-guard.js) is replaced before it is sent again by
 * `guardAgain(index)`, the same op made so (in `ops`, in place). A failure that is not a
 * write error (the server unreachable) leaves the rest unwritten at once.
 * The one place that writes a bulk of a sink's ops.
 *
 * @param {object} collection a driver Collection
 * @param {object[]} ops bulkWrite operations
 * @param {string} what what they are, for messages ("metric upserts")
 * @param {((index: number) => object) | null} [guardAgain] op `index` safe to send twice (by default, itself)
 * @returns {Promise<{ collided: number[], refused: Array<{ index: number, code: number, errmsg: string }>, unwritten: number[], error: Error|null, splits: number, matched: number }>}
 */
async function writeAccounted (collection, ops, what, guardAgain = null) {
  const out = { collided: [], duplicateOn: new Map(), refused: [], unwritten: [], error: null, splits: 0, stopped: false, matched: 0 }
  await writeRange(collection, ops, 0, ops.length, what, out, guardAgain)
  return out
}

async function writeRange (collection, ops, start, end, what, out, guardAgain) {
  if (out.stopped) return leaveUnwritten(out, start, end)
  const sent = end - start
  let reply
  try {
    reply = { result: await collection.bulkWrite(ops.slice(start, end), { ordered: false }), errors: [] }
  } catch (err) {
    // Our own serializer refused an operation (a key with a NUL byte), before
    // anything was sent: not the server away. Halved down to that op, refused for good.
    if (err && err.name === 'BSONError') {
      if (sent > 1) return halve(collection, ops, start, end, what, out, guardAgain)
      out.refused.push({ index: start, code: INVALID_BSON, errmsg: err.message })
      return
    }
    if (!Array.isArray(err.writeErrors) || err.writeErrors.length === 0) {
      out.error = err
      out.stopped = true
      return leaveUnwritten(out, start, end)
    }
    reply = { result: err.result, errors: err.writeErrors }
  }
  try {
    checkAccounted(reply.result, sent, reply.errors.length, what)
  } catch (err) {
    if (sent === 1) {
      out.error = err
      return leaveUnwritten(out, start, end)
    }
    if (guardAgain) for (let i = start; i < end; i++) ops[i] = guardAgain(i)
    return halve(collection, ops, start, end, what, out, guardAgain)
  }
  out.matched += (reply.result && reply.result.matchedCount) || 0
  for (const e of reply.errors) {
    if (e.code === DUPLICATE_KEY) {
      out.collided.push(start + e.index)
      const on = duplicateIndex(e)
      if (on !== null) out.duplicateOn.set(start + e.index, on)
    } else out.refused.push({ index: start + e.index, code: e.code, errmsg: e.errmsg || e.message })
  }
}

// The ops [start, end) written again as two halves.
async function halve (collection, ops, start, end, what, out, guardAgain) {
  out.splits++
  const middle = start + Math.ceil((end - start) / 2)
  await writeRange(collection, ops, start, middle, what, out, guardAgain)
  return writeRange(collection, ops, middle, end, what, out, guardAgain)
}

// Whether an E11000 is on `_id` ('_id') or another index (its key
// pattern's fields, or its name), from the server's keyPattern, else its
// message (`index: NAME [collation: {…}] dup key`); null when neither says.
function duplicateIndex (e) {
  const pattern = e.keyPattern || (e.err && e.err.keyPattern) || (e.errInfo && e.errInfo.keyPattern)
  if (pattern && typeof pattern === 'object') {
    const fields = Object.keys(pattern)
    return fields.length === 1 && fields[0] === '_id' ? '_id' : fields.join(', ')
  }
  const named = /\bindex: (.+?) (?:collation: \{.*\} )?dup key/.exec(e.errmsg || '')
  return named ? (named[1] === '_id_' ? '_id' : named[1]) : null
}

/**
 * The ops of `out` to write again: those not proven stored and those the
 * server refused (with the error that says why, when that is all there is).
 */
function toWriteAgain (out, what) {
  if (out.refused.length === 0) return { indexes: out.unwritten, error: out.error }
  const refused = out.refused[0]
  return {
    indexes: out.unwritten.concat(out.refused.map((e) => e.index)),
    error: out.error || Object.assign(new Error(`${what}: the server refused ${out.refused.length} (${refused.code}: ${refused.errmsg})`), { code: refused.code })
  }
}

// Write errors that refuse the operation itself, whatever the server's
// state: bad values and types (2, 9, 14: a $inc on a field holding text),
// BSON the server will not take (22, 10334, 17280, 17419), field names and
// paths (28, 40, 52 to 57, 66), a validator (121), a shard key (61), and a
// documents sink's duplicate on a unique index the definition declared
// (11000 there; write-accounting does not decide that). Such an operation
// is never stored: given up at once (refusedForGood). Any other refusal
// (a failover, throttling, a lock or cache timeout, a code not known here)
// is written again, however often.
const PERMANENT = new Set([2, 9, 14, 22, 28, 40, 52, 53, 54, 55, 56, 57, 61, 66, 121, 10334, 17280, 17419, DUPLICATE_KEY])
// The code a refusal of our own client's serializer is given (the driver's BSONError has none).
const INVALID_BSON = 22

/** The refusals of `out.refused` that no server state will change: `{ index, code, errmsg }`, never to be written again. */
function refusedForGood (out) {
  return out.refused.filter((e) => PERMANENT.has(e.code))
}

function leaveUnwritten (out, start, end) {
  for (let i = start; i < end; i++) out.unwritten.push(i)
}

module.exports.writeAccounted = writeAccounted
module.exports.toWriteAgain = toWriteAgain
module.exports.DUPLICATE_KEY = DUPLICATE_KEY
module.exports.refusedForGood = refusedForGood
