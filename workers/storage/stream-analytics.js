'use strict'

/**
 * Per-stream figures computed when a stream ends. For each side, the
 * expected packet count comes from its sequence range (highest − first + 1)
 * and loss is what was expected but not counted.
 */
function streamAnalytics (doc, endedAt) {
  const start = doc.startTime ? new Date(doc.startTime).getTime() : null
  const end = doc.endTime ? new Date(doc.endTime).getTime() : null
  return {
    durationMs: start !== null && end !== null ? end - start : 0,
    packets: (doc.metadata && doc.metadata.packets) || 0,
    from: sideAnalytics(doc.from),
    to: sideAnalytics(doc.to),
    endedAt
  }
}

function sideAnalytics (side) {
  if (!side || !Number.isFinite(side.highestPacketNum) || !Number.isFinite(side.firstPacketNum)) return null
  const expected = side.highestPacketNum - side.firstPacketNum + 1
  const received = side.packets || 0
  const lost = Math.max(0, expected - received)
  return { expected, received, lost, lossRate: expected > 0 ? lost / expected : 0 }
}

module.exports = { streamAnalytics }
