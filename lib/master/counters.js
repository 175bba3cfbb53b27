'use strict'

/**
 * The master's own counters; per-worker ones live on the worker handles.
 * The summary adds `dropped.kernel`, the one loss the master never sees:
 * datagrams the kernel discarded before the master read them, read from the
 * socket when asked. It is not in `received`, so
 * `received + dropped.kernel = processed + failed + dropped.total`.
 */
function createCounters () {
  return {
    received: 0,
    bytes: 0,
    dispatched: 0,
    dropped: { queueFull: 0, oversize: 0, badFrame: 0, partial: 0, workerLost: 0, shutdown: 0, notAllowed: 0, bufferFull: 0, bufferUnreadable: 0 },
    // Messages a previous run left in the disk buffer, delivered by this one.
    replayed: 0,
    // The disk buffer: messages left in it for the next run at stop, and
    // damaged records skipped when it was opened.
    buffer: { kept: 0, damagedRecords: 0, damagedBytes: 0 },
    events: {},
    // Events that have a cause: per event, counts by reason (their sum is the event's count).
    eventReasons: {},
    restarts: { listener: 0 }
  }
}

/**
 * Counts one event (`connections`, `connectionsRejected`, …) and, when a
 * reason is given, that reason under it: `eventReasons.connectionsRejected.notAllowed`.
 */
function countEvent (counters, event, reason) {
  counters.events[event] = (counters.events[event] || 0) + 1
  if (reason === undefined) return
  const reasons = counters.eventReasons[event] || (counters.eventReasons[event] = {})
  reasons[reason] = (reasons[reason] || 0) + 1
}

function totalDropped (dropped) {
  let total = 0
  for (const value of Object.values(dropped)) total += value
  return total
}

/** Whether every message a summary counts has an outcome: stored/done, failed or dropped. */
function accountedFor (s) {
  return s.inFlight === 0 && s.received + (s.replayed || 0) + s.dropped.kernel === s.processed + s.failed + s.dropped.total + (s.buffered || 0)
}

module.exports = { createCounters, countEvent, totalDropped, accountedFor }
