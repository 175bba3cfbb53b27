'use strict'

/** The master's own counters; per-worker ones live on the worker handles. */
function createCounters () {
  return {
    received: 0,
    bytes: 0,
    dispatched: 0,
    dropped: { queueFull: 0, oversize: 0, badFrame: 0, partial: 0, workerLost: 0, shutdown: 0 },
    events: {},
    restarts: { listener: 0 }
  }
}

function totalDropped (dropped) {
  let total = 0
  for (const value of Object.values(dropped)) total += value
  return total
}

module.exports = { createCounters, totalDropped }
