'use strict'

// Tags of the arrays exchanged between the master and its workers over the
// cluster IPC channel (advanced serialization, so Buffers travel as bytes).
module.exports = Object.freeze({
  // master → worker: [BATCH, kind, buffer, count, batchId, origin, redelivered, receivedAt]
  // batchId: unique in this master run (see batch-ids.js); origin: the key of
  // the worker it was first sent to; redelivered: a worker holding it died;
  // receivedAt: when the master received its first message (epoch ms).
  BATCH: 1,
  // worker → master: [ACK, batches, processed, failed, dropped | null]
  // acknowledges the oldest `batches` unacknowledged batches, in order;
  // dropped: { reason: n } for messages the worker refused by name.
  ACK: 2,
  READY: 3, // worker → master: [READY]
  INIT_FAILED: 4, // worker → master: [INIT_FAILED, message]
  SHUTDOWN: 5, // master → worker: [SHUTDOWN]
  CLOSED: 6, // worker → master: [CLOSED]
  STATS_REQ: 7, // master → worker: [STATS_REQ, requestId]
  STATS_RES: 8, // worker → master: [STATS_RES, requestId, stats]
  LOG: 9, // worker → master: [LOG, level, fields, message]
  ROLE: 10 // master → worker: [ROLE, { leader }]
})
