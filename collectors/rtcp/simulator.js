'use strict'

const { encodeReport } = require('./encoder')

/**
 * Synthetic RTCP for N bidirectional streams (calls): each call has two
 * SSRCs that report on each other with receiver-report blocks whose
 * extended highest sequence number advances ~50 packets per second of
 * media (20 ms audio). `next()` returns the next datagram in round-robin
 * order over both sides of every call; `expected()` what a collector must
 * have stored for the datagrams produced so far.
 */
class RtcpSimulator {
  constructor ({ streams = 200, firstSsrc = 0x10000000, packetsPerReport = 50, cnamePrefix = 'sim' } = {}) {
    this.calls = []
    for (let i = 0; i < streams; i++) {
      const a = { ssrc: firstSsrc + i * 2, seq: 1000 + i, reports: 0 }
      const b = { ssrc: firstSsrc + i * 2 + 1, seq: 5000 + i, reports: 0 }
      this.calls.push([a, b])
    }
    this.packetsPerReport = packetsPerReport
    this.cnamePrefix = cnamePrefix
    this.cursor = 0
    this.sent = 0
  }

  /** The next compound packet: side `s` of call `c` reports on its peer. */
  next () {
    const c = this.cursor >> 1
    const [me, peer] = this.cursor & 1 ? this.calls[c].slice().reverse() : this.calls[c]
    this.cursor = (this.cursor + 1) % (this.calls.length * 2)
    peer.seq += this.packetsPerReport
    me.reports++
    this.sent++
    me.lastReported = peer.seq
    return encodeReport({
      ssrc: me.ssrc,
      reports: [{ ssrc: peer.ssrc, fractionLost: 0, cumulativeLost: 0, highestSeq: peer.seq, jitter: 20, lsr: 0, dlsr: 0 }],
      cname: `${this.cnamePrefix}-${me.ssrc}@demo`
    })
  }

  /** Per reporting side: reports sent and the last extended sequence number it reported. */
  expected () {
    const sides = []
    for (const [a, b] of this.calls) {
      for (const [me, peer] of [[a, b], [b, a]]) {
        if (me.reports > 0) sides.push({ fromID: String(me.ssrc), toID: String(peer.ssrc), reports: me.reports, highestPacketNum: me.lastReported })
      }
    }
    return sides
  }
}

module.exports = RtcpSimulator
