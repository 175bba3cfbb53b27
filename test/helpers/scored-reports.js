'use strict'

// Report blocks fed to CallQuality (collectors/rtcp/call-quality.js) by the
// unit tests, and a report scored with a measured round trip.

/** A report block about SSRC 2, `fields` over the defaults. */
const block = (fields) => ({ ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: 1000, jitter: 80, lsr: 0, dlsr: 0, ...fields })

// A report whose LSR echoes a clock reference of the reported source seen
// 50 ms before it, held 30 ms: 20 ms one way; the reporter's own reference
// then makes the other way 20 ms too: a measured RTT of 40 ms, so that it
// is scored with it (even a report without an interval books a window with its delay).
let ntpSec = 100
function scoredReport (q, reporter, fields, at) {
  const b = block(fields)
  ntpSec++
  q.clocks.reference(b.ssrc, ntpSec, 0, undefined, at - 50)
  q.clocks.reference(reporter, ntpSec, 0, undefined, at - 50)
  q.delayReport(b.ssrc, reporter, (ntpSec & 0xffff) << 16, 0.03 * 65536, at)
  return q.report(reporter, { ...b, lsr: (ntpSec & 0xffff) << 16, dlsr: 0.03 * 65536 }, at)
}

module.exports = { block, scoredReport }
