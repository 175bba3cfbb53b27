'use strict'
// What tshark's RTCP dissector shows for an SR or RR we decoded, field by
// field in its order: the expectation both tshark tests (real peers' traffic
// and the oracle corpus) compare against.

/**
 * @param {(field: string, value: number) => void} push
 * @param {object} p an SR or RR from decodeRtcp
 */
function pushReport (push, p) {
  push('rtcp.senderssrc', p.ssrc)
  if (p.type === 'SR') {
    push('rtcp.timestamp.ntp.msw', p.ntpSec)
    push('rtcp.timestamp.ntp.lsw', p.ntpFrac)
    push('rtcp.timestamp.rtp', p.rtpTimestamp)
    push('rtcp.sender.packetcount', p.packetCount)
    push('rtcp.sender.octetcount', p.octetCount)
  }
  for (const b of p.reports) {
    push('rtcp.ssrc.identifier', b.ssrc)
    push('rtcp.ssrc.fraction', b.fractionLost)
    push('rtcp.ssrc.cum_nr', b.cumulativeLost)
    push('rtcp.ssrc.ext_high', b.highestSeq)
    push('rtcp.ssrc.jitter', b.jitter)
    push('rtcp.ssrc.lsr', b.lsr)
    push('rtcp.ssrc.dlsr', b.dlsr)
  }
}

module.exports = { pushReport }
