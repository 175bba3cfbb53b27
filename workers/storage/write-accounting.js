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
    out.splits++
    if (guardAgain) for (let i = start; i < end; i++) ops[i] = guardAgain(i)
    const middle = start + Math.ceil(sent / 2)
    await writeRange(collection, ops, start, middle, what, out, guardAgain)
    return writeRange(collection, ops, middle, end, what, out, guardAgain)
  }
  out.matched += (reply.result && reply.result.matchedCount) || 0
  for (const e of reply.errors) {
    if (e.code === DUPLICATE_KEY) {
      out.collided.push(start + e.index)
      const index = /\bindex: (\S+) dup key/.exec(e.errmsg || '')
      if (index) out.duplicateOn.set(start + e.index, index[1])
    } else out.refused.push({ index: start + e.index, code: e.code, errmsg: e.errmsg || e.message })
  }
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

// Write errors a server gives for a state that passes (a failover, a
// shutdown, a write conflict, a time limit): written again, however often.
// Any other refusal is of the operation itself (a type mismatch, a
// validator, a field name the server will not take) and is given up once
// it has been refused GIVE_UP_AFTER times (refusedForGood).
const PASSING = new Set([6, 7, 50, 64, 89, 91, 112, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436])
const GIVE_UP_AFTER = 3

/**
 * Counts one more refusal on each op of `out.refused` whose error is not
 * one that passes (`attempts(index)` gives the op's holder's count so far
 * and keeps the new one); returns those refused GIVE_UP_AFTER times, `{
 * index, code, errmsg }`: never to be stored, so never to be written again.
 */
function refusedForGood (out, attempts) {
  const given = []
  for (const e of out.refused) {
    if (!Number.isInteger(e.code) || e.code <= 0 || PASSING.has(e.code)) continue
    if (attempts(e.index) >= GIVE_UP_AFTER) given.push(e)
  }
  return given
}

function leaveUnwritten (out, start, end) {
  for (let i = start; i < end; i++) out.unwritten.push(i)
}

module.exports.writeAccounted = writeAccounted
module.exports.toWriteAgain = toWriteAgain
module.exports.DUPLICATE_KEY = DUPLICATE_KEY
module.exports.refusedForGood = refusedForGood
module.exports.GIVE_UP_AFTER = GIVE_UP_AFTER
