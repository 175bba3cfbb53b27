'use strict'

const DecodeError = require('../../exceptions/decode-error')
const {
  VERSION, HEADER_SIZE, REPORT_BLOCK_SIZE, SENDER_INFO_SIZE, PT,
  SDES_NAME, SDES_END, SDES_PRIV, XR_BT, DECODE_REASONS
} = require('./constants')

const MIN_COMPOUND = 8 // an RR with no report blocks

/**
 * Decode one RTCP compound datagram (RFC 3550 §6, XR from RFC 3611).
 * Validates it as RFC 3550 Appendix A.2 recommends: version 2 in every
 * header, SR or RR first, padding only on the last packet, and lengths
 * that add up to the datagram. Unknown packet types and unknown XR block
 * types are passed over by their length.
 *
 * @param {Buffer|Uint8Array} buf one UDP payload
 * @returns {{ packets: object[] }} SR, RR, SDES, BYE, APP and XR packets in order
 * @throws {DecodeError} with a `reason` from DECODE_REASONS
 */
function decodeRtcp (buf) {
  buf = asBuffer(buf)
  if (buf.length < MIN_COMPOUND) fail('too-short', `datagram of ${buf.length} bytes`)
  const packets = []
  let offset = 0
  while (offset < buf.length) {
    const header = readHeader(buf, offset)
    const packet = decodePacket(header)
    if (packet) packets.push(packet)
    offset = header.end
  }
  return { packets }
}

function asBuffer (buf) {
  if (Buffer.isBuffer(buf)) return buf
  if (buf instanceof Uint8Array) return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  fail('not-buffer', `expected a Buffer, got ${typeof buf}`)
}

function fail (reason, detail) {
  throw new DecodeError(reason, `invalid RTCP (${reason}): ${detail}`)
}

/** Parse and check one common header; returns the packet's body view. */
function readHeader (buf, offset) {
  if (buf.length - offset < HEADER_SIZE) fail('bad-length', `${buf.length - offset} trailing bytes at ${offset}`)
  const first = buf[offset]
  const version = first >> 6
  if (version !== VERSION) fail('bad-version', `version ${version} at ${offset}`)
  const pt = buf[offset + 1]
  if (offset === 0 && pt !== PT.SR && pt !== PT.RR) fail('first-not-sr-rr', `first packet type ${pt}`)
  const end = offset + (buf.readUInt16BE(offset + 2) + 1) * 4
  if (end > buf.length) fail('bad-length', `packet at ${offset} ends at ${end}, datagram has ${buf.length}`)
  const padding = (first & 0x20) ? paddingCount(buf, offset, end) : 0
  const body = buf.subarray(offset + HEADER_SIZE, end - padding)
  return { pt, count: first & 0x1f, body, end, offset }
}

function paddingCount (buf, offset, end) {
  if (end !== buf.length) fail('bad-padding', `padding bit on a packet at ${offset} that is not the last`)
  const count = buf[end - 1]
  if (count === 0 || count > end - offset - HEADER_SIZE) fail('bad-padding', `padding count ${count} at ${offset}`)
  return count
}

const PARSERS = {
  [PT.SR]: decodeSr,
  [PT.RR]: decodeRr,
  [PT.SDES]: decodeSdes,
  [PT.BYE]: decodeBye,
  [PT.APP]: decodeApp,
  [PT.XR]: decodeXr
}

function decodePacket (header) {
  const parse = PARSERS[header.pt]
  return parse ? parse(header) : null
}

function requireBody (header, size, what) {
  if (header.body.length < size) fail('bad-length', `${what} at ${header.offset} needs ${size} bytes, has ${header.body.length}`)
}

function requireCount (header, size, what) {
  if (header.body.length < size) fail('report-count', `${what} count ${header.count} at ${header.offset} does not fit in ${header.body.length} bytes`)
}

function decodeSr (header) {
  const { body, count } = header
  requireBody(header, 4 + SENDER_INFO_SIZE, 'SR')
  const start = 4 + SENDER_INFO_SIZE
  requireCount(header, start + count * REPORT_BLOCK_SIZE, 'SR report')
  return withExtension({
    type: 'SR',
    ssrc: body.readUInt32BE(0),
    ntpSec: body.readUInt32BE(4),
    ntpFrac: body.readUInt32BE(8),
    rtpTimestamp: body.readUInt32BE(12),
    packetCount: body.readUInt32BE(16),
    octetCount: body.readUInt32BE(20),
    reports: readBlocks(body, start, count)
  }, body, start + count * REPORT_BLOCK_SIZE)
}

function decodeRr (header) {
  const { body, count } = header
  requireBody(header, 4, 'RR')
  requireCount(header, 4 + count * REPORT_BLOCK_SIZE, 'RR report')
  const packet = { type: 'RR', ssrc: body.readUInt32BE(0), reports: readBlocks(body, 4, count) }
  return withExtension(packet, body, 4 + count * REPORT_BLOCK_SIZE)
}

/** Profile-specific extension after the report blocks (RFC 3550 §6.4.1). */
function withExtension (packet, body, used) {
  if (body.length > used) packet.extension = Buffer.from(body.subarray(used))
  return packet
}

function readBlocks (body, start, count) {
  const reports = []
  for (let i = 0; i < count; i++) reports.push(readBlock(body, start + i * REPORT_BLOCK_SIZE))
  return reports
}

function readBlock (body, at) {
  return {
    ssrc: body.readUInt32BE(at),
    fractionLost: body[at + 4],
    cumulativeLost: body.readIntBE(at + 5, 3),
    highestSeq: body.readUInt32BE(at + 8),
    jitter: body.readUInt32BE(at + 12),
    lsr: body.readUInt32BE(at + 16),
    dlsr: body.readUInt32BE(at + 20)
  }
}

function decodeSdes (header) {
  const chunks = []
  let pos = 0
  for (let i = 0; i < header.count; i++) {
    requireCount(header, pos + 4, 'SDES chunk')
    const chunk = { ssrc: header.body.readUInt32BE(pos), items: {} }
    pos = readItems(header, pos + 4, chunk.items)
    chunks.push(chunk)
  }
  return { type: 'SDES', chunks }
}

/** Read SDES items up to the END item; returns the next chunk's offset. */
function readItems (header, pos, items) {
  const { body } = header
  while (pos < body.length && body[pos] !== SDES_END) {
    if (pos + 2 > body.length || pos + 2 + body[pos + 1] > body.length) {
      fail('truncated-block', `SDES item at ${header.offset + HEADER_SIZE + pos} overruns its packet`)
    }
    addItem(items, body[pos], body.subarray(pos + 2, pos + 2 + body[pos + 1]))
    pos += 2 + body[pos + 1]
  }
  // The END item is followed by null octets up to the next 32-bit boundary.
  return (pos + 4) & ~3
}

function addItem (items, type, value) {
  if (type === SDES_PRIV) return addPriv(items, value)
  const name = SDES_NAME[type]
  if (name) items[name] = value.toString('utf8')
}

function addPriv (items, value) {
  const prefixLength = value.length > 0 ? Math.min(value[0], value.length - 1) : 0
  const entry = {
    prefix: value.toString('utf8', 1, 1 + prefixLength),
    value: value.toString('utf8', 1 + prefixLength)
  }
  items.priv = (items.priv || []).concat(entry)
}

function decodeBye (header) {
  const { body, count } = header
  requireCount(header, count * 4, 'BYE source')
  const sources = []
  for (let i = 0; i < count; i++) sources.push(body.readUInt32BE(i * 4))
  const packet = { type: 'BYE', sources }
  const reason = readReason(header, count * 4)
  if (reason) packet.reason = reason
  return packet
}

function readReason (header, at) {
  const { body } = header
  if (at >= body.length) return undefined
  const end = at + 1 + body[at]
  if (end > body.length) fail('truncated-block', `BYE reason at ${header.offset} overruns its packet`)
  return body.toString('utf8', at + 1, end)
}

function decodeApp (header) {
  const { body } = header
  requireBody(header, 8, 'APP')
  return {
    type: 'APP',
    subtype: header.count,
    ssrc: body.readUInt32BE(0),
    name: body.toString('latin1', 4, 8),
    data: Buffer.from(body.subarray(8))
  }
}

function decodeXr (header) {
  const { body } = header
  requireBody(header, 4, 'XR')
  const blocks = []
  let pos = 4
  while (pos < body.length) {
    const block = readXrBlock(header, pos)
    blocks.push(block)
    pos += 4 + block.data.length
  }
  return { type: 'XR', ssrc: body.readUInt32BE(0), blocks }
}

function readXrBlock (header, pos) {
  const { body } = header
  if (pos + 4 > body.length) truncatedXr(header, pos)
  const end = pos + 4 + body.readUInt16BE(pos + 2) * 4
  if (end > body.length) truncatedXr(header, pos)
  const block = { bt: body[pos], typeSpecific: body[pos + 1], data: Buffer.from(body.subarray(pos + 4, end)) }
  const understand = XR_PARSERS[block.bt]
  return understand ? understand(block) : block
}

function truncatedXr (header, pos) {
  fail('truncated-block', `XR block at ${header.offset + HEADER_SIZE + pos} overruns its packet`)
}

const XR_PARSERS = {
  [XR_BT.RRT]: decodeRrt,
  [XR_BT.DLRR]: decodeDlrr,
  [XR_BT.VOIP_METRICS]: decodeVoipMetrics
}

/** Receiver Reference Time (RFC 3611 §4.4); a wrong size stays raw. */
function decodeRrt (block) {
  if (block.data.length !== 8) return block
  return Object.assign(block, {
    kind: 'rrt',
    ntpSec: block.data.readUInt32BE(0),
    ntpFrac: block.data.readUInt32BE(4)
  })
}

/** DLRR (RFC 3611 §4.5): one { ssrc, lrr, dlrr } per 12-byte sub-block. */
function decodeDlrr (block) {
  const { data } = block
  if (data.length % 12 !== 0) return block
  const items = []
  for (let at = 0; at < data.length; at += 12) {
    items.push({ ssrc: data.readUInt32BE(at), lrr: data.readUInt32BE(at + 4), dlrr: data.readUInt32BE(at + 8) })
  }
  return Object.assign(block, { kind: 'dlrr', items })
}

/** VoIP Metrics (RFC 3611 §4.7); values raw, in the RFC's units. */
function decodeVoipMetrics (block) {
  const d = block.data
  if (d.length !== 32) return block
  return Object.assign(block, {
    kind: 'voip-metrics',
    ssrc: d.readUInt32BE(0),
    lossRate: d[4],
    discardRate: d[5],
    burstDensity: d[6],
    gapDensity: d[7],
    burstDuration: d.readUInt16BE(8),
    gapDuration: d.readUInt16BE(10),
    roundTripDelay: d.readUInt16BE(12),
    endSystemDelay: d.readUInt16BE(14),
    signalLevel: d.readInt8(16),
    noiseLevel: d.readInt8(17),
    rerl: d[18],
    gmin: d[19],
    rFactor: d[20],
    extRFactor: d[21],
    mosLq: d[22],
    mosCq: d[23],
    rxConfig: d[24],
    jbNominal: d.readUInt16BE(26),
    jbMaximum: d.readUInt16BE(28),
    jbAbsMax: d.readUInt16BE(30)
  })
}

module.exports = { decodeRtcp, DECODE_REASONS }
