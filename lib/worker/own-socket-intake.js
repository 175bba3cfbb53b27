'use strict'

const ipc = require('../shared/ipc')
const { KIND_UDP, entryEnd, entryDataLength, entryReceivedAt } = require('../shared/batch-codec')
const { BatchIds, originOf } = require('../shared/batch-ids')

/**
 * receive 'reuseport', in a worker: what the worker's own socket brings,
 * as batches of its own (its own run id and batch ids, the BATCH message
 * the master would send, marked local) and the counts its ACKs report to
 * the master (see ipc.ACK `received`). Nobody else holds those datagrams:
 * at maxInFlight they are refused at the door (dropped.queueFull).
 */
class OwnSocketIntake {
  constructor (maxInFlight) {
    this.ids = new BatchIds()
    this.origin = originOf(this.ids.runId, 'local')
    this.maxInFlight = maxInFlight
    this.listener = null
    this.inFlight = 0
    this.messages = 0
    this.bytes = 0
    this.dropped = null
    this.kernelDrops = 0
  }

  /**
   * Datagrams `buf[0, end)` in batch format (`buf` is reused by the caller:
   * copied here): the BATCH message to process them, or null when refused.
   */
  admit (buf, end, count) {
    if (this.inFlight >= this.maxInFlight) {
      this.dropped = this.dropped || {}
      this.dropped.queueFull = (this.dropped.queueFull || 0) + count
      return null
    }
    for (let offset = 0; offset < end; offset = entryEnd(buf, offset)) this.bytes += entryDataLength(buf, offset)
    this.messages += count
    this.inFlight += count
    const copy = Buffer.allocUnsafeSlow(end)
    buf.copy(copy, 0, 0, end)
    return [ipc.BATCH, KIND_UDP, copy, count, this.ids.next(), this.origin, false, entryReceivedAt(copy, 0), true]
  }

  /** What came and was dropped since the last report, with `done` of these messages finished (ipc.ACK `received`). */
  take (done) {
    if (this.listener) this.kernelDrops = this.listener.kernelDrops()
    this.inFlight -= done
    const report = { messages: this.messages, bytes: this.bytes, dropped: this.dropped, kernelDrops: this.kernelDrops, done }
    this.messages = 0
    this.bytes = 0
    this.dropped = null
    return report
  }
}

module.exports = { OwnSocketIntake }
