'use strict'

const crypto = require('node:crypto')

/**
 * Identity of the batches one master sends. A batch id is a Number:
 * `seconds × 65536 + n`, n counting batches within that second (a burst past
 * 65,536 a second borrows the next second), so ids only grow and never wrap.
 * With the master's random run id it names every message for good:
 * `messageKey` packs (batch id, run id, index in batch) into the 12 bytes of
 * a MongoDB ObjectId whose timestamp is the batch's second, so a message
 * redelivered after its worker died gets the same key, and `_id`s sort by
 * arrival.
 */
class BatchIds {
  constructor (runId = crypto.randomBytes(4).toString('hex')) {
    this.runId = runId
    this.seconds = 0
    this.n = 0
  }

  next () {
    const seconds = Math.floor(Date.now() / 1000)
    if (seconds > this.seconds) {
      this.seconds = seconds
      this.n = 0
    } else if (this.n === 0x10000) {
      this.seconds++
      this.n = 0
    }
    return this.seconds * 0x10000 + this.n++
  }
}

/**
 * The origin of the batches first sent to one worker: the master's run id
 * and the worker's id. Batches keep their origin when delivered again (to
 * another worker, or by a later run replaying the disk buffer), and a
 * message's key takes its run id from it.
 */
function originOf (runId, workerId) {
  return `${runId}_${workerId}`
}

/** The 4 run-id bytes of an origin (see originOf). */
function originRunIdBytes (origin) {
  return Buffer.from(origin.slice(0, origin.indexOf('_')), 'hex')
}

/** 12 bytes: batch second (4) | run id (4) | n within the second (2) | index in the batch (2). */
function messageKey (batchId, runIdBytes, index) {
  const key = Buffer.allocUnsafe(12)
  key.writeUInt32BE(Math.floor(batchId / 0x10000), 0)
  runIdBytes.copy(key, 4, 0, 4)
  key.writeUInt16BE(batchId % 0x10000, 8)
  key.writeUInt16BE(index, 10)
  return key
}

module.exports = { BatchIds, messageKey, originOf, originRunIdBytes }
