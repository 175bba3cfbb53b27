'use strict'

// Runs in an RTCP worker: how many new quality windows a stream side may
// open, bounded by the collector's clock. Windows are keyed by sequence
// number (packet-time.js windowsOf), and sequence numbers are the sender's
// to choose: one moving its extended highest sequence 127 windows' worth at
// each report (with a lost count that fits, so not a restart) opened 128
// window keys, about 8 KB, on its stream document every report, and some
// 2,000 such reports reached MongoDB's 16 MiB bound on one document within
// a segment. Real media opens one window per WINDOW_MS; a side may open
// twice that (a packet interval known at half its real length still fits),
// with a burst of MAX_WINDOWS_SPANNED, so that a side whose reports were
// missed for a while, or first seen here (a worker restarted), books its
// interval as before. A report beyond the allowance is booked whole to one
// window the side already has: nothing of its loss or delay is lost, only
// placed more coarsely (docs/call-quality.md, worst window).

const { WINDOW_MS, MAX_WINDOWS_SPANNED } = require('./packet-time')

const WINDOWS_PER_MS = 2 / WINDOW_MS
const BURST = MAX_WINDOWS_SPANNED

/**
 * The windows to book a report arriving at `at` (ms) to, from the
 * `[index, packets]` windows of `span` packets its interval covers:
 * `{ span, windows, coarse }`. Keeps on `side` its allowance
 * (`windowTokens` at `windowAt`) and the window it last booked to
 * (`window`: `{ span, index }`). Every window but that one counts as new,
 * so a restart (the numbering started over, booked to the window it ends
 * in) pays as any other. A report over the allowance is booked whole to
 * `side.window`, of whatever span it is (a span that changed opens new
 * windows too), its packets summed: `coarse`.
 */
function allowedWindows (side, span, windows, at) {
  if (side.windowAt === undefined) {
    side.windowTokens = BURST
    side.windowAt = at
  } else if (at > side.windowAt) {
    // Only forward: times that step back (a clock set back, HEP capture
    // times out of order) accrue nothing until they pass the latest seen.
    side.windowTokens = Math.min(BURST, side.windowTokens + (at - side.windowAt) * WINDOWS_PER_MS)
    side.windowAt = at
  }
  const held = side.window
  let opened = windows.length
  if (held !== undefined && held.span === span) for (const [index] of windows) if (index === held.index) opened--
  if (opened <= side.windowTokens) {
    side.windowTokens -= opened
    side.window = { span, index: windows[windows.length - 1][0] }
    return { span, windows, coarse: false }
  }
  // A side's first booking has the whole burst, more windows than windowsOf gives: one is held here.
  const into = held || (side.window = { span, index: windows[windows.length - 1][0] })
  let packets = 0
  for (const [, n] of windows) packets += n
  return { span: into.span, windows: [[into.index, packets]], coarse: true }
}

module.exports = { allowedWindows, WINDOWS_PER_MS, BURST }
