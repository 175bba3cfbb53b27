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
