'use strict'

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
 * @param {{ packets: object[] }} decoded what decodeRtcp returned
 * @param {{ address: string }} rinfo the datagram's sender
 * @param {number|Date} [now] the time to stamp on every item
 * @returns {object[]}
 */
function toStreamUpdates (decoded, rinfo, now = Date.now()) {
  const ctx = { IP: rinfo.address, time: +now, items: [], sides: new Map() }
  for (const packet of decoded.packets) {
    const map = MAPPERS[packet.type]
    if (map) map(ctx, packet)
  }
  return foldSidesIntoPackets(ctx.items)
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
    for (const packet of packets) packet.fields = { ...item.fields, ...packet.fields }
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
    ctx.items.push({
      fromID: String(packet.ssrc),
      toID: String(block.ssrc),
      IP: ctx.IP,
      highestPacketNum: block.highestSeq,
      timestamp: new Date(ctx.time),
      fields: { ...blockFields(block), ...counters }
    })
  }
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
  for (const ssrc of packet.sources) ctx.items.push({ endID: String(ssrc), timestamp: new Date(ctx.time) })
}

module.exports = { toStreamUpdates }
