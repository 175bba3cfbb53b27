'use strict'
// Synthetic two-way calls whose truth the test sets: both ends send an SR
// each round with a report block about the other, sent in real time so that
// the collector's arrival times carry the one-way delays the LSR/DLSR say.
// Per direction: packets per round, packets lost per round, the raw
// interarrival jitter, the sender's RTP clock rate, and the delay.
const dgram = require('node:dgram')
const { encodeRtcp } = require('../../collectors/rtcp/encoder')

const NTP_UNIX_OFFSET = 2208988800
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function ntpOf (seconds) {
  const sec = Math.floor(seconds)
  return { ntpSec: (sec + NTP_UNIX_OFFSET) >>> 0, ntpFrac: Math.floor((seconds - sec) * 0x100000000) >>> 0 }
}

const mid = ({ ntpSec, ntpFrac }) => (((ntpSec & 0xffff) << 16) | (ntpFrac >>> 16)) >>> 0

/**
 * @param {object} call
 * @param {number} call.a SSRC of the first end
 * @param {number} call.b SSRC of the second end
 * @param {{ lostPerRound: number|number[], rate?: number, jitter?: number, delayMs?: number, xr?: object }} call.ab media a → b
 *   (lost and jitter as b reports them, a's clock rate; lost per round, or by round; `xr`: { loss, discard,
 *   burstMs, gapMs } b sends an XR VoIP Metrics block with, loss and discard as fractions)
 * @param {{ lostPerRound: number, rate?: number, jitter?: number, delayMs?: number }} call.ba media b → a
 */
function endsOf ({ a, b, ab, ba }, packetsPerRound, firstSeq) {
  const end = (ssrc, peer, out, into) => ({ ssrc, peer, out: { rate: 8000, jitter: 0, delayMs: 0, ...out }, into: { rate: 8000, jitter: 0, delayMs: 0, ...into }, seq: firstSeq, lost: 0, heard: null, rtp0: (ssrc * 7919) >>> 0, mediaT0: 1000 + (ssrc % 1000) })
  return [end(a, b, ab, ba), end(b, a, ba, ab)]
}

/**
 * Sends `rounds` rounds: each end's SR (with its block about the other),
 * `gapMs` apart, then both BYE. The LSR of a block names the other end's
 * last SR that would have arrived by then (sent + its delay), and DLSR is
 * the time since that arrival, measured on the real send times.
 * `beforeRound(round)` and `beforeBye()`, when given, are awaited before
 * each round and before the BYEs (a test stops or kills a worker there).
 *
 * @returns {Promise<{ sent: number, reports: object[] }>} every report block sent, with its time
 */
async function sendCalls (port, calls, { rounds = 12, packetsPerRound = 250, packetMs = 20, gapMs = 120, firstSeq = 1000, host = '127.0.0.1', beforeRound, beforeBye } = {}) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.connect(port, host, resolve))
  const ends = calls.map((call) => endsOf(call, packetsPerRound, firstSeq))
  const reports = []
  let sent = 0
  const send = (buf) => { socket.send(buf); sent++ }
  for (let round = 0; round < rounds; round++) {
    if (beforeRound) await beforeRound(round)
    for (const side of [0, 1]) {
      for (const pair of ends) {
        const me = pair[side]
        const peer = pair[1 - side]
        const now = Date.now()
        // The media this end received from its peer this round.
        const lostNow = Array.isArray(peer.out.lostPerRound) ? (peer.out.lostPerRound[round] || 0) : peer.out.lostPerRound
        me.seq += packetsPerRound
        me.lost += lostNow
        const mediaSeconds = me.mediaT0 + round * packetsPerRound * packetMs / 1000
        const ntp = ntpOf(mediaSeconds)
        const block = { ssrc: peer.ssrc, fractionLost: Math.floor(lostNow / packetsPerRound * 256), cumulativeLost: me.lost, highestSeq: me.seq, jitter: peer.out.jitter, lsr: 0, dlsr: 0 }
        if (peer.lastSr && peer.lastSr.at + peer.out.delayMs <= now) {
          block.lsr = mid(peer.lastSr.ntp)
          block.dlsr = Math.round((now - peer.lastSr.at - peer.out.delayMs) / 1000 * 65536)
        }
        const sender = { ...ntp, rtpTimestamp: (me.rtp0 + Math.round((mediaSeconds - me.mediaT0) * me.out.rate)) >>> 0, packetCount: round * packetsPerRound, octetCount: round * packetsPerRound * 160 }
        const xr = peer.out.xr ? [{ type: 'XR', ssrc: me.ssrc, blocks: [{ bt: 7, data: voipMetrics(peer.ssrc, peer.out.xr) }] }] : []
        send(encodeRtcp([{ type: 'SR', ssrc: me.ssrc, ...sender, reports: [block] }, { type: 'SDES', chunks: [{ ssrc: me.ssrc, items: { cname: `end-${me.ssrc}@test` } }] }, ...xr]))
        me.lastSr = { ntp, at: now }
        reports.push({ reporter: me.ssrc, at: now, round, ...block })
      }
      await sleep(gapMs / 2)
    }
  }
  if (beforeBye) await beforeBye()
  for (const pair of ends) for (const me of pair) send(encodeRtcp([{ type: 'RR', ssrc: me.ssrc, reports: [] }, { type: 'BYE', sources: [me.ssrc] }]))
  await new Promise((resolve) => socket.close(resolve))
  return { sent, reports }
}

// An XR VoIP Metrics block's data (RFC 3611 §4.7) about `ssrc`: loss and discard rates (fractions, in
// 1/256), mean burst and gap durations (ms); every other metric 0 or unavailable (127).
function voipMetrics (ssrc, { loss, discard, burstMs, gapMs }) {
  const data = Buffer.alloc(32)
  data.writeUInt32BE(ssrc, 0)
  data[4] = Math.round(loss * 256)
  data[5] = Math.round(discard * 256)
  data.writeUInt16BE(burstMs, 8)
  data.writeUInt16BE(gapMs, 10)
  data[20] = data[21] = data[22] = data[23] = 127
  return data
}

module.exports = { sendCalls }
