'use strict'

// What the syslog readers share: the byte values of the grammar, the named
// deviations from the RFCs with their bits, and how a reader takes one.
// Requires nothing, so every syslog module can require it.

/**
 * Deviations from the RFCs that a lenient reading accepts, flagged on the
 * record in `deviations`; refused (a raw record with that reason) when not
 * allowed.
 */
const DEVIATIONS = Object.freeze([
  'no-hostname', // 3164: TAG right after the timestamp (§4.1.2 wants HOSTNAME)
  'bsd-day-zero-padded', // 3164: 'Dec 04' (§4.1.2: space-padded 'Dec  4')
  'bsd-day-unpadded', // 3164: 'Dec 4'
  'bsd-month-case', // 3164: 'dec', 'DEC' (§4.1.2: 'Dec')
  'bsd-year', // 3164: 'Jun  1 2024 10:00:00' (network gear)
  'bsd-fraction', // 3164: '10:00:00.250'
  'iso-timestamp', // 3164: an RFC 3339 timestamp instead of 'Mmm dd hh:mm:ss'
  'cisco', // 3164: Cisco IOS/ASA: a message counter '52: ', '*' or '.' before the timestamp, a colon after it
  'duplicate-sd-id' // 5424: §6.3.2 "The same SD-ID MUST NOT exist more than once"
])

/** The bit of each deviation in a lenient mask and in `ctx.deviations`, by name. */
const BIT = Object.fromEntries(DEVIATIONS.map((name, i) => [name, 1 << i]))

const SP = 0x20
const QUOTE = 0x22
const DASH = 0x2d
const COLON = 0x3a
const LT = 0x3c
const EQ = 0x3d
const GT = 0x3e
const OPEN = 0x5b
const BACKSLASH = 0x5c
const CLOSE = 0x5d

function isDigit (c) {
  return c >= 0x30 && c <= 0x39
}

// A deviation: flagged when allowed, else the reason the message is refused.
function deviate (ctx, bit) {
  if ((ctx.allowed & bit) === 0) return false
  ctx.deviations |= bit
  return true
}

module.exports = { DEVIATIONS, BIT, SP, QUOTE, DASH, COLON, LT, EQ, GT, OPEN, BACKSLASH, CLOSE, isDigit, deviate }
