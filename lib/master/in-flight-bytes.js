'use strict'

const { WAITS_AT } = require('../shared/ipc')

/**
 * What a worker's share of memoryBudget counts (WorkerHandle): the bytes of
 * the batches it was sent and has not taken yet (on their way, or queued in
 * it), plus the bytes it says it holds of those it took and has not stored
 * (ipc FINISHED and ACK; Worker#heldBytes). A message's bytes on the wire are
 * not what a worker holds once it has decoded it: a HEP report of RTCP is
 * ~550 bytes and adds little to a stream update already held, a syslog line
 * of ~270 is held as a document of ~530 until stored. A worker that says
 * nothing of what it holds (a Worker of the user's own without heldBytes)
 * counts as holding every batch it was sent and has not acknowledged.
 */
class InFlightBytes {
  /** @param {number} share the worker's share of memoryBudget (Infinity: none) */
  constructor (share) {
    this.share = share
    this.shareSent = Number.isFinite(share) ? share : 0 // as ipc BATCH `byteShare` says it
    this.reset()
  }

  // The worker is gone (or not heard from yet).
  reset () {
    this.sent = 0 // bytes of the batches sent and not acknowledged
    this.taken = 0 // of those, the bytes of the batches it has taken
    this.takenThrough = 0 // batches it has taken since it started (WorkerHandle#acked counts the same way)
    this.held = null // the bytes it last said it holds; null: it does not say
  }

  get value () {
    return this.held === null ? this.sent : this.sent - this.taken + this.held
  }

  get full () {
    return this.value >= this.share
  }

  // Near the share: a batch sent now tells the worker the master waits (ipc WAITS_BYTES).
  get near () {
    return this.value >= WAITS_AT * this.share
  }

  fits (batch) {
    return this.value + batch.size <= this.share
  }

  sentBatch (batch) {
    this.sent += batch.size
  }

  // `batches` acknowledged now, oldest first, `ackedBefore` batches after the worker started; then what the ACK
  // said it has taken and holds (`unacked`: what is left unacknowledged).
  acknowledged (batches, ackedBefore, through, held, unacked) {
    for (let i = 0; i < batches.length; i++) {
      this.sent -= batches[i].size
      if (ackedBefore + i < this.takenThrough) this.taken -= batches[i].size
    }
    this.takenThrough = Math.max(this.takenThrough, ackedBefore + batches.length)
    this.reported(through, held, unacked, ackedBefore + batches.length)
  }

  // The worker has taken `through` batches since it started and holds `held` bytes (null: it does not say);
  // `unacked`: the batches sent and not acknowledged, oldest first, of which `acked` came before the first.
  reported (through, held, unacked, acked) {
    if (held === null || held === undefined) return
    const last = Math.min(through, acked + unacked.length)
    for (let n = Math.max(this.takenThrough, acked); n < last; n++) this.taken += unacked[n - acked].size
    this.takenThrough = Math.max(this.takenThrough, last)
    this.held = held
  }
}

module.exports = { InFlightBytes }
