'use strict'

/**
 * A rolling restart's new worker of a slot whose keys keep state (strict
 * affinity) is sent nothing until `previous`, the slot's worker before it,
 * has drained and gone: the batches formed for it meanwhile wait in its
 * `waiting` (counted in its inFlight; their bytes on disk with the buffer),
 * after what `previous` leaves it. Sent at once, a key's next messages met
 * state its previous ones had not yet written: a NetFlow exporter's flows
 * refused for templates the old worker had learned, sequence gaps counted
 * lost that were not (an operator's trial).
 * @param {import('./worker-handle').WorkerHandle} handle the new worker's
 * @param {import('./worker-handle').WorkerHandle} previous the slot's draining one
 */
function waitForPrevious (handle, previous) {
  handle.waitingFor = previous
  // After the pool's exit handling, which hands `handle` what `previous` left (WorkerPool#rehome).
  previous.once('gone', () => setImmediate(() => stopWaiting(handle)))
}

// The batches that waited join the backlog, behind what it holds, and go as room allows.
function stopWaiting (handle) {
  if (handle.waitingFor === null) return
  handle.waitingFor = null
  for (const batch of handle.waiting.splice(0)) {
    handle.inFlight -= batch.count
    handle.toBacklog(batch)
  }
  handle.pump()
}

module.exports = { waitForPrevious }
