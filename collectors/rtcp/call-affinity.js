'use strict'

// Runs in the master, once per datagram: which call an RTCP datagram
// belongs to, as a number for `hash` distribution, read from its bytes.
//
// Both ends of a call report on each other (A's block names B, B's names A),
// so the key is the unordered pair of the reporter's SSRC and the first
// reported SSRC: both ends' reports meet in one worker, which is what lets
// it pair an LSR with the SR it names, infer the sender's clock rate from
// its SRs and combine both directions into a round-trip time
// (call-quality.js). A sender that receives nothing (one-way media) sends
// SRs without blocks; they follow the pair its receiver last reported it
// in. Anything too short to read falls back to the source address.
//
// The SSRCs are the senders' choice: at most `maxSenders` are remembered,
// the oldest forgotten first. Forgetting one costs little: its SRs follow
// its own SSRC until its receiver's next report names it again.

const { BoundedMap } = require('../../lib/shared/bounded-map')
const { MAX_SOURCES } = require('./constants')

const SR = 200
const RR = 201
const SR_FIRST_BLOCK = 28 // header 4, SSRC 4, sender info 20
const RR_FIRST_BLOCK = 8
const RTCP_FIRST = 192 // RTCP packet types (RFC 5761 §4)
const RTCP_LAST = 223

class CallAffinity {
  /**
   * @param {{ maxSenders?: number, onEvict?: () => void }} [options] how many
   *   reported SSRCs to remember; onEvict hears of each one forgotten
   */
  constructor ({ maxSenders = MAX_SOURCES, onEvict } = {}) {
    this.pairOfSender = new BoundedMap(maxSenders, onEvict) // reported SSRC → the pair key it was last reported in
  }

  /**
   * The call key of the RTCP datagram in `buf[start, end)`, or -1 when the
   * bytes do not start with an RTCP header and SSRC.
   */
  keyOf (buf, start, end) {
    if (end - start < 8 || buf[start] >> 6 !== 2) return -1
    const pt = buf[start + 1]
    // Reduced-size (RFC 5506): its first packet's SSRC (sender, chunk or
    // BYE source) follows the pair it was last reported in, as a lone SR does.
    if (pt !== SR && pt !== RR) return pt >= RTCP_FIRST && pt <= RTCP_LAST ? this.pairOf(u32(buf, start + 4)) : -1
    const reporter = u32(buf, start + 4)
    const block = start + (pt === SR ? SR_FIRST_BLOCK : RR_FIRST_BLOCK)
    if ((buf[start] & 0x1f) === 0 || block + 4 > end) return this.pairOf(reporter)
    const reported = u32(buf, block)
    const key = pairKey(reporter, reported)
    if (this.pairOfSender.get(reported) !== key) this.pairOfSender.set(reported, key)
    return key
  }

  // The pair an SSRC was last reported in, else its own key.
  pairOf (ssrc) {
    const pair = this.pairOfSender.get(ssrc)
    return pair === undefined ? mix(ssrc) : pair
  }

  /** keyOf() of a whole datagram, as a definition's affinity gives it: null (the sender's key) for what is not RTCP. */
  key (data, start = 0, end = data.length) {
    const key = this.keyOf(data, start, end)
    return key >= 0 ? key : null
  }
}

function u32 (buf, at) {
  return (buf[at] * 0x1000000) + ((buf[at + 1] << 16) | (buf[at + 2] << 8) | buf[at + 3])
}

/** A hash of the unordered SSRC pair (the same whichever end reports). */
function pairKey (a, b) {
  const low = a < b ? a : b
  const high = a < b ? b : a
  return mix((Math.imul(low, 0x9e3779b1) ^ high) >>> 0)
}

function mix (x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

module.exports = { CallAffinity }
