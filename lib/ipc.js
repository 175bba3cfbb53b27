'use strict'

// Tags of the arrays exchanged between the master and its workers over the
// cluster IPC channel (advanced serialization, so Buffers travel as bytes).
module.exports = Object.freeze({
  BATCH: 1, // master → worker: [BATCH, kind, buffer, count]
  ACK: 2, // worker → master: [ACK, processed, failed]
  READY: 3, // worker → master: [READY]
  INIT_FAILED: 4, // worker → master: [INIT_FAILED, message]
  SHUTDOWN: 5, // master → worker: [SHUTDOWN]
  CLOSED: 6, // worker → master: [CLOSED]
  STATS_REQ: 7, // master → worker: [STATS_REQ, requestId]
  STATS_RES: 8, // worker → master: [STATS_RES, requestId, stats]
  LOG: 9, // worker → master: [LOG, level, fields, message]
  ROLE: 10 // master → worker: [ROLE, { leader }]
})
