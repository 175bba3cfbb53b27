'use strict'

const { reportKey } = require('./call-quality')

/**
 * Map a decoded RTCP compound packet to the items the MongoDB stream worker
 * applies:
 * - per report block of an SR/RR, a packet
 *   `{ fromID, toID, IP, highestPacketNum, timestamp, fields }` from the
 *   reporter to the reported source; fields hold fractionLost as 0..1,
 *   cumulativeLost, jitter, lsr, dlsr, and for an SR also the sender's own
 *   packetCount and octetCount;
 * - per SR without report blocks and per SDES CNAME, one side update
 *   `{ sideID, IP, timestamp, fields }` per SSRC (both merged into one),
 *   unless that SSRC reported blocks in the same datagram: then its side
 *   fields ride on those packets' fields;
 * - per BYE source, `{ endID, timestamp }`.
 * Items keep the order of the packets they come from.
 *
 * With `quality` (a CallQuality, call-quality.js) each packet also carries
 * its call-quality figures: `fields` gain the last values, `stats` the
 * side's min / max / sums and per-minute buckets. The
 * datagram's clock references (SR sender info, XR RRTR) and XR DLRR round
 * trips are taken first, so that its own report blocks can use them; an XR
 * VoIP Metrics block (RFC 3611 §4.7) rides, as sent, on the report block
 * about the same source (`fields.xr`).
 *
 * @param {{ packets: object[] }} decoded what decodeRtcp returned
 * @param {{ address: string }} rinfo the datagram's sender
 * @param {number|Date} [now] the time to stamp on every item
 * @param {import('./call-quality').CallQuality} [quality]
 * @param {number|Date} [arrivedAt] when it reached the collector (`now`
 *   is the agent's capture time over HEP, a sender's choice): quality
 *   windows are allowed by this clock (window-allowance.js)
 * @returns {object[]}
 */
function toStreamUpdates (decoded, rinfo, now = Date.now(), quality = null, arrivedAt = now) {
  const ctx = { IP: rinfo.address, time: +now, arrivedAt: +arrivedAt, items: [], sides: new Map(), quality, xr: null }
  if (quality) takeReferences(ctx, decoded.packets)
  for (const packet of decoded.packets) {
    const map = MAPPERS[packet.type]
    if (map) map(ctx, packet)
  }
  return foldSidesIntoPackets(ctx.items)
}

// Clock references and XR measurements of the whole datagram, before its
// report blocks: an SR's sender info, XR RRTR timestamps and DLRR items
// (RFC 3611 §4.4, §4.5), and VoIP Metrics by the stream they describe.
function takeReferences (ctx, packets) {
  for (const packet of packets) {
    if (packet.type === 'SR') ctx.quality.clocks.reference(packet.ssrc, packet.ntpSec, packet.ntpFrac, packet.rtpTimestamp, ctx.time, packet.packetCount)
    if (packet.type !== 'XR') continue
    for (const block of packet.blocks) {
      if (block.kind === 'rrt') ctx.quality.clocks.reference(packet.ssrc, block.ntpSec, block.ntpFrac, undefined, ctx.time)
      else if (block.kind === 'dlrr') for (const item of block.items) ctx.quality.delayReport(packet.ssrc, item.ssrc, item.lrr, item.dlrr, ctx.time)
      else if (block.kind === 'voip-metrics') (ctx.xr || (ctx.xr = new Map())).set(reportKey(packet.ssrc, block.ssrc), voipMetrics(block, ctx.quality))
    }
  }
}

/**
 * An XR VoIP Metrics block in units a reader can use (RFC 3611 §4.7):
 * rates as fractions, durations and delays in ms, MOS as 1.0–5.0; 127
 * ("unavailable") for R or MOS becomes null. `burstR` is G.107's burst
 * ratio from the mean burst and gap lengths in the stream's packets (see
 * CallQuality#burstRatio).
 */
function voipMetrics (block, quality) {
  const unavailable = (value, scale) => value === 127 ? null : value / scale
  return {
    lossRate: block.lossRate / 256,
    discardRate: block.discardRate / 256,
    burstDensity: block.burstDensity / 256,
    gapDensity: block.gapDensity / 256,
    burstDurationMs: block.burstDuration,
    gapDurationMs: block.gapDuration,
    roundTripDelayMs: block.roundTripDelay,
    endSystemDelayMs: block.endSystemDelay,
    rFactor: unavailable(block.rFactor, 1),
    extRFactor: unavailable(block.extRFactor, 1),
    mosLq: unavailable(block.mosLq, 10),
    mosCq: unavailable(block.mosCq, 10),
    jbNominalMs: block.jbNominal,
    jbMaximumMs: block.jbMaximum,
    burstR: quality.burstRatio(block.burstDuration, block.gapDuration, quality.clocks.mediaOf(block.ssrc).packet.ms)
  }
}

// Side fields of an SSRC that also reported blocks in this datagram (the
// usual RR/SR + SDES CNAME) travel with its packets: one upsert instead of
// an extra pair of updateMany per report.
function foldSidesIntoPackets (items) {
  const reporters = new Map()
  for (const item of items) if (item.fromID !== undefined && !reporters.has(item.fromID)) reporters.set(item.fromID, [])
  if (reporters.size === 0) return items
  for (const item of items) if (item.fromID !== undefined) reporters.get(item.fromID).push(item)
  return items.filter((item) => {
    const packets = item.sideID !== undefined && reporters.get(item.sideID)
    if (!packets) return true
    // The packet's own fields win; each packet's are its own object.
    for (const packet of packets) {
      for (const key in item.fields) if (!(key in packet.fields)) packet.fields[key] = item.fields[key]
    }
    return false
  })
}

const MAPPERS = {
  SR: mapSr,
  RR: mapReports,
  SDES: mapSdes,
  BYE: mapBye
}

function mapSr (ctx, packet) {
  const counters = { packetCount: packet.packetCount, octetCount: packet.octetCount }
  if (packet.reports.length === 0) return sideUpdate(ctx, packet.ssrc, counters)
  mapReports(ctx, packet, counters)
}

function mapReports (ctx, packet, counters) {
  for (const block of packet.reports) {
    // Built field by field, not spread: the quality figures are added to
    // this object next, and a spread-made one takes them slowly.
    const fields = blockFields(block)
    if (counters) {
      fields.packetCount = counters.packetCount
      fields.octetCount = counters.octetCount
    }
    const item = {
      fromID: String(packet.ssrc),
      toID: String(block.ssrc),
      IP: ctx.IP,
      highestPacketNum: block.highestSeq,
      timestamp: new Date(ctx.time),
      fields
    }
    if (ctx.quality && !addQuality(ctx, item, packet.ssrc, block)) continue
    ctx.items.push(item)
  }
}

// false: the report is not stored (a duplicate, or late: CallQuality#skip).
function addQuality (ctx, item, reporter, block) {
  const xr = ctx.xr && ctx.xr.get(reportKey(reporter, block.ssrc))
  const { stats, skip } = ctx.quality.report(reporter, block, ctx.time, xr, item.fields, ctx.arrivedAt)
  if (skip) return false
  if (xr) item.fields.xr = xr
  item.stats = stats
  return true
}

function blockFields (block) {
  return {
    fractionLost: block.fractionLost / 256,
    cumulativeLost: block.cumulativeLost,
    jitter: block.jitter,
    lsr: block.lsr,
    dlsr: block.dlsr
  }
}

function mapSdes (ctx, packet) {
  for (const chunk of packet.chunks) {
    if (chunk.items.cname !== undefined) sideUpdate(ctx, chunk.ssrc, { cname: chunk.items.cname })
  }
}

/** One side update per SSRC and datagram; later fields merge into it. */
function sideUpdate (ctx, ssrc, fields) {
  const existing = ctx.sides.get(ssrc)
  if (existing) return Object.assign(existing.fields, fields)
  const item = { sideID: String(ssrc), IP: ctx.IP, timestamp: new Date(ctx.time), fields: { ...fields } }
  ctx.sides.set(ssrc, item)
  ctx.items.push(item)
}

function mapBye (ctx, packet) {
  for (const ssrc of packet.sources) ctx.items.push({ endID: String(ssrc), IP: ctx.IP, timestamp: new Date(ctx.time) })
}

/** Every SSRC a decoded datagram names (senders and reported sources), once: its new-key cardinality. */
function ssrcsNamed (decoded) {
  const ssrcs = new Set()
  for (const packet of decoded.packets) {
    if (packet.ssrc !== undefined) ssrcs.add(packet.ssrc)
    if (packet.reports) for (const block of packet.reports) ssrcs.add(block.ssrc)
  }
  return [...ssrcs]
}

module.exports = { toStreamUpdates, ssrcsNamed }
