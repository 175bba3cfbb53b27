'use strict'

// The fields of the RTCP XR report blocks the collector reads (RFC 3611):
// the decoder (decoder.js) hands each block's bytes here.
const { XR_BT } = require('./constants')

const u32 = (buf, at) => buf.readUInt32BE(at)

/** Known blocks (RFC 3611 §4.4, §4.5, §4.7) gain their fields; a wrong size stays raw. */
function decodeXrBlock (bt, typeSpecific, data) {
  const size = data.length
  if (bt === XR_BT.RRT && size === 8) {
    return { bt, typeSpecific, data, kind: 'rrt', ntpSec: u32(data, 0), ntpFrac: u32(data, 4) }
  }
  if (bt === XR_BT.DLRR && size % 12 === 0) {
    const items = []
    for (let at = 0; at < size; at += 12) items.push({ ssrc: u32(data, at), lrr: u32(data, at + 4), dlrr: u32(data, at + 8) })
    return { bt, typeSpecific, data, kind: 'dlrr', items }
  }
  if (bt === XR_BT.VOIP_METRICS && size === 32) return decodeVoipMetrics(bt, typeSpecific, data)
  return { bt, typeSpecific, data }
}

/** VoIP Metrics (RFC 3611 §4.7); values raw, in the RFC's units. */
function decodeVoipMetrics (bt, typeSpecific, d) {
  return {
    bt,
    typeSpecific,
    data: d,
    kind: 'voip-metrics',
    ssrc: u32(d, 0),
    lossRate: d[4],
    discardRate: d[5],
    burstDensity: d[6],
    gapDensity: d[7],
    burstDuration: (d[8] << 8) | d[9],
    gapDuration: (d[10] << 8) | d[11],
    roundTripDelay: (d[12] << 8) | d[13],
    endSystemDelay: (d[14] << 8) | d[15],
    signalLevel: (d[16] << 24) >> 24,
    noiseLevel: (d[17] << 24) >> 24,
    rerl: d[18],
    gmin: d[19],
    rFactor: d[20],
    extRFactor: d[21],
    mosLq: d[22],
    mosCq: d[23],
    rxConfig: d[24],
    jbNominal: (d[26] << 8) | d[27],
    jbMaximum: (d[28] << 8) | d[29],
    jbAbsMax: (d[30] << 8) | d[31]
  }
}

module.exports = { decodeXrBlock }
