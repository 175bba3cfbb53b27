'use strict'

const ipc = require('../shared/ipc')
const { ProgressWriter } = require('../shared/progress-file')

/**
 * What a worker tells its master of how far it got with the master's
 * batches (WorkerRuntime): how many it has been through (in its progress
 * file, else ipc.FINISHED: the evidence for poison, lib/master/batch-fate.js)
 * and, when it says so (Worker#heldBytes), the bytes it holds of what it
 * took and has not stored, which the master counts against its share of
 * memoryBudget (lib/master/in-flight-bytes.js) instead of those batches'
 * own.
 */
class ProgressToMaster {
  /**
   * @param {object} worker the user's Worker
   * @param {(message: any[]) => void} send over IPC to the master
   * @param {{ file: string } | null} progressFile
   */
  constructor (worker, send, progressFile) {
    this.worker = worker
    this.send = send
    this.file = new ProgressWriter(progressFile)
    this.finished = 0 // of the master's batches, those through doWork (see ipc.FINISHED)
    this.acked = 0 // of the master's batches, those acknowledged
  }

  // What the worker holds of what it took and has not stored, in bytes; null: it does not say.
  held () {
    return typeof this.worker.heldBytes === 'function' ? this.worker.heldBytes() : null
  }

  // A batch of the master's is through doWork, and was not acknowledged with it: said at once (the next batch may end the process).
  batchFinished () {
    this.finished++
    if (this.acked < this.finished && !this.file.write(this.finished)) this.send([ipc.FINISHED, this.finished])
  }

  // The master waits (ipc BATCH `waits`): a worker that says what it holds tells it, and writes what it holds
  // (onMasterWaiting) unless only the bytes bound is near and it holds under WAITS_AT of its share of them.
  answerWaits (waits, byteShare) {
    const held = this.held()
    if (held !== null) this.send([ipc.FINISHED, this.finished, held])
    if (held === null || (waits & ipc.WAITS_COUNT) !== 0 || held >= ipc.WAITS_AT * byteShare) this.write()
  }

  // The master waits for a write (ipc BATCH `waits`, or ipc.WRITE: it cannot send the next batch until then).
  write () {
    if (typeof this.worker.onMasterWaiting === 'function') this.worker.onMasterWaiting()
  }
}

module.exports = { ProgressToMaster }
