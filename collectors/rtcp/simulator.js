'use strict'

const { encodeReport } = require('./encoder')

// Per call, how many of each report's packets were lost: most calls clean,
// some lossy, a few bad (a fixed cycle, so a run is reproducible and
// `expected()` knows each side's loss exactly).
const LOST_PER_REPORT_CYCLE = [0, 0, 0, 1, 0, 0, 2, 0, 5, 0]
const JITTER_CYCLE = [24, 40, 80, 160, 400] // raw, at 8,000 Hz: 3 to 50 ms

const NTP_UNIX_OFFSET = 2208988800 // seconds from 1900 to 1970

/**
 * Synthetic RTCP for N bidirectional streams (calls): each call has two
 * SSRCs that report on each other with SRs whose report block's extended
 * highest sequence number advances `packetsPerReport` packets per report
 * (20 ms audio) and whose cumulative lost grows by the call's loss. Each
 * block echoes the peer's last SR that a path of `delayMs` each way would
 * have delivered (LSR, and DLSR from the wall clock), so that a collector
 * receiving the datagrams as they are made measures a round trip of about
 * 2 × `delayMs`; the SRs' RTP timestamps run at 8,000 Hz.
 * `next()` returns the next datagram in round-robin order over both sides
 * of every call; `expected()` what a collector must have stored for the
 * datagrams produced so far.
 */
class RtcpSimulator {
  constructor ({ streams = 200, firstSsrc = 0x10000000, packetsPerReport = 50, cnamePrefix = 'sim', delayMs = 20, now = Date.now } = {}) {
    this.calls = []
    for (let i = 0; i < streams; i++) {
      const lost = LOST_PER_REPORT_CYCLE[i % LOST_PER_REPORT_CYCLE.length]
      const jitter = JITTER_CYCLE[i % JITTER_CYCLE.length]
      const a = { ssrc: firstSsrc + i * 2, seq: 1000 + i, cumulativeLost: 0, lostPerReport: lost, jitter, reports: 0 }
      const b = { ssrc: firstSsrc + i * 2 + 1, seq: 5000 + i, cumulativeLost: 0, lostPerReport: lost, jitter, reports: 0 }
      this.calls.push([a, b])
    }
    this.packetsPerReport = packetsPerReport
    this.cnamePrefix = cnamePrefix
    this.delayMs = delayMs
    this.now = now
    this.t0 = now()
    this.cursor = 0
    this.sent = 0
  }

  /** The next compound packet: side `s` of call `c` reports on its peer. */
  next () {
    const c = this.cursor >> 1
    const [me, peer] = this.cursor & 1 ? this.calls[c].slice().reverse() : this.calls[c]
    this.cursor = (this.cursor + 1) % (this.calls.length * 2)
    peer.seq += this.packetsPerReport
    me.cumulativeLost += me.reports > 0 ? me.lostPerReport : 0
    me.reports++
    this.sent++
    me.lastReported = peer.seq
    const fractionLost = me.reports > 1 ? Math.floor(me.lostPerReport / this.packetsPerReport * 256) : 0
    const at = this.now()
    const echo = (peer.srs || []).filter((sr) => at - sr.at >= this.delayMs).pop()
    const sender = this.senderInfo(me, at)
    return encodeReport({
      ssrc: me.ssrc,
      sender,
      reports: [{ ssrc: peer.ssrc, fractionLost, cumulativeLost: me.cumulativeLost, highestSeq: peer.seq, jitter: me.jitter, lsr: echo ? echo.mid : 0, dlsr: echo ? Math.round((at - echo.at - this.delayMs) / 1000 * 65536) : 0 }],
      cname: `${this.cnamePrefix}-${me.ssrc}@demo`
    })
  }

  // The SR's sender info at `at` (ms), remembered (the last two) for the peer to echo.
  senderInfo (me, at) {
    const seconds = at / 1000 + NTP_UNIX_OFFSET
    const ntpSec = Math.floor(seconds) >>> 0
    const ntpFrac = Math.floor((seconds - Math.floor(seconds)) * 0x100000000) >>> 0
    me.srs = [...(me.srs || []).slice(-1), { mid: (((ntpSec & 0xffff) << 16) | (ntpFrac >>> 16)) >>> 0, at }]
    const packets = me.reports * this.packetsPerReport
    return { ntpSec, ntpFrac, rtpTimestamp: Math.floor((at - this.t0) * 8) >>> 0, packetCount: packets, octetCount: packets * 160 }
  }

  /**
   * Per reporting side: reports sent, the last extended sequence number it
   * reported, and the loss over its reports (RFC 3550: Δcumulative lost /
   * Δhighest sequence between its first and last report; null with one).
   */
  expected () {
    const sides = []
    for (const [a, b] of this.calls) {
      for (const [me, peer] of [[a, b], [b, a]]) {
        if (me.reports === 0) continue
        const lossRate = me.reports > 1 ? me.lostPerReport / this.packetsPerReport : null
        sides.push({ fromID: String(me.ssrc), toID: String(peer.ssrc), reports: me.reports, highestPacketNum: me.lastReported, lossRate, jitter: me.jitter })
      }
    }
    return sides
  }
}

module.exports = RtcpSimulator
