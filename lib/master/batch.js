'use strict'

/**
 * A batch as the master keeps it until its worker acknowledges it: `bytes`
 * in the batch format (lib/shared/batch-codec.js), or null while they lie
 * only in the disk buffer (`at`: where, see journal.js); `id` and `origin`
 * name it for good (a message's key is made from them, see
 * lib/shared/batch-ids.js), so a batch delivered again, to another worker or
 * by another run, is recognised.
 */
function createBatch (kind, bytes, count, id, origin, receivedAt) {
  return { id, kind, bytes, count, origin, redelivered: false, receivedAt, sentAt: 0, deliveries: 0, at: null }
}

module.exports = { createBatch }
