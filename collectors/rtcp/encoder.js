'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')
const {
  VERSION, HEADER_SIZE, REPORT_BLOCK_SIZE, SENDER_INFO_SIZE, MAX_COUNT, PT,
  SDES_ITEM, SDES_PRIV
} = require('./constants')

const MAX_CUMULATIVE_LOST = 0x7fffff
const MIN_CUMULATIVE_LOST = -0x800000

/**
 * Encode RTCP packets, in the shapes decodeRtcp returns, into one compound
 * datagram. A packet may carry `padding` (1..255): that many padding bytes
 * are appended and its P bit set (RFC 3550 allows it on the last packet
 * only; the encoder does not stop you, so tests can build bad input).
 * Numbers out of their field's range throw a RangeError from Buffer.
 *
 * @param {object[]} packets SR, RR, SDES, BYE, APP or XR objects
 * @returns {Buffer}
 * @throws {InvalidOptionError} on an unknown type or a shape RTCP cannot carry
 */
function encodeRtcp (packets) {
  if (!Array.isArray(packets)) throw new InvalidOptionError('packets', packets, 'must be an array')
  return Buffer.concat(packets.map(encodePacket))
}

const ENCODERS = {
  SR: encodeSr,
  RR: encodeRr,
  SDES: encodeSdes,
  BYE: encodeBye,
  APP: encodeApp,
  XR: encodeXr
}

function encodePacket (packet) {
  const encode = packet && ENCODERS[packet.type]
  if (!encode) throw new InvalidOptionError('packet.type', packet && packet.type, `must be one of ${Object.keys(ENCODERS).join(', ')}`)
  const { count, pt, body } = encode(packet)
  return frame(count, pt, body, packet.padding || 0)
}

/** Prefix the common header, append padding, fill in the length. */
function frame (count, pt, body, padding) {
  checkCount('count', count)
  if (body.length % 4 !== 0) throw new InvalidOptionError('packet body length', body.length, 'must be a multiple of 4')
  if (padding < 0 || padding > 255) throw new InvalidOptionError('packet.padding', padding, 'must be 0..255')
  const out = Buffer.alloc(HEADER_SIZE + body.length + padding)
  out[0] = (VERSION << 6) | (padding ? 0x20 : 0) | count
  out[1] = pt
  out.writeUInt16BE(out.length / 4 - 1, 2)
  body.copy(out, HEADER_SIZE)
  if (padding) out[out.length - 1] = padding
  return out
}

function checkCount (what, count) {
  if (count > MAX_COUNT) throw new InvalidOptionError(what, count, `must be at most ${MAX_COUNT}`)
}

function encodeSr (packet) {
  const reports = packet.reports || []
  const info = Buffer.alloc(4 + SENDER_INFO_SIZE)
  info.writeUInt32BE(packet.ssrc, 0)
  info.writeUInt32BE(packet.ntpSec, 4)
  info.writeUInt32BE(packet.ntpFrac, 8)
  info.writeUInt32BE(packet.rtpTimestamp, 12)
  info.writeUInt32BE(packet.packetCount, 16)
  info.writeUInt32BE(packet.octetCount, 20)
  const body = Buffer.concat([info, ...reports.map(encodeBlock), packet.extension || Buffer.alloc(0)])
  return { count: reports.length, pt: PT.SR, body }
}

function encodeRr (packet) {
  const reports = packet.reports || []
  const body = Buffer.concat([u32(packet.ssrc), ...reports.map(encodeBlock), packet.extension || Buffer.alloc(0)])
  return { count: reports.length, pt: PT.RR, body }
}

function encodeBlock (block) {
  const out = Buffer.alloc(REPORT_BLOCK_SIZE)
  out.writeUInt32BE(block.ssrc, 0)
  out.writeUInt8(block.fractionLost || 0, 4)
  out.writeIntBE(clampLost(block.cumulativeLost || 0), 5, 3)
  out.writeUInt32BE(block.highestSeq || 0, 8)
  out.writeUInt32BE(block.jitter || 0, 12)
  out.writeUInt32BE(block.lsr || 0, 16)
  out.writeUInt32BE(block.dlsr || 0, 20)
  return out
}

/** RFC 3550 §6.4.1: cumulative loss saturates at the 24-bit signed limits. */
function clampLost (lost) {
  return Math.max(MIN_CUMULATIVE_LOST, Math.min(MAX_CUMULATIVE_LOST, lost))
}

function u32 (value) {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(value, 0)
  return out
}

function encodeSdes (packet) {
  const chunks = packet.chunks || []
  return { count: chunks.length, pt: PT.SDES, body: Buffer.concat(chunks.map(encodeChunk)) }
}

/** SSRC, items, then an END item and null octets to a 32-bit boundary. */
function encodeChunk (chunk) {
  const items = chunk.items || {}
  const parts = [u32(chunk.ssrc)]
  for (const name of Object.keys(SDES_ITEM)) {
    if (items[name] !== undefined) parts.push(encodeItem(SDES_ITEM[name], Buffer.from(String(items[name]), 'utf8')))
  }
  for (const priv of items.priv || []) parts.push(encodePriv(priv))
  return padTo4(Buffer.concat(parts), 1)
}

function encodeItem (type, value) {
  if (value.length > 255) throw new InvalidOptionError('SDES item', value.toString(), 'must be at most 255 bytes')
  return Buffer.concat([Buffer.from([type, value.length]), value])
}

function encodePriv ({ prefix, value }) {
  const prefixBytes = Buffer.from(prefix || '', 'utf8')
  if (prefixBytes.length > 255) throw new InvalidOptionError('SDES PRIV prefix', prefix, 'must be at most 255 bytes')
  const content = Buffer.concat([Buffer.from([prefixBytes.length]), prefixBytes, Buffer.from(value || '', 'utf8')])
  return encodeItem(SDES_PRIV, content)
}

/** Append at least `min` zero bytes, then more up to a multiple of 4. */
function padTo4 (buf, min) {
  const total = Math.ceil((buf.length + min) / 4) * 4
  return Buffer.concat([buf, Buffer.alloc(total - buf.length)])
}

function encodeBye (packet) {
  const sources = packet.sources || []
  const parts = sources.map(u32)
  if (packet.reason) parts.push(padTo4(encodeReason(packet.reason), 0))
  return { count: sources.length, pt: PT.BYE, body: Buffer.concat(parts) }
}

function encodeReason (reason) {
  const text = Buffer.from(String(reason), 'utf8')
  if (text.length > 255) throw new InvalidOptionError('BYE reason', reason, 'must be at most 255 bytes')
  return Buffer.concat([Buffer.from([text.length]), text])
}

function encodeApp (packet) {
  const name = Buffer.from(String(packet.name), 'latin1')
  if (name.length !== 4) throw new InvalidOptionError('APP name', packet.name, 'must be 4 ASCII characters')
  const data = packet.data || Buffer.alloc(0)
  if (data.length % 4 !== 0) throw new InvalidOptionError('APP data length', data.length, 'must be a multiple of 4')
  return { count: packet.subtype || 0, pt: PT.APP, body: Buffer.concat([u32(packet.ssrc), name, data]) }
}

function encodeXr (packet) {
  const blocks = (packet.blocks || []).map(encodeXrBlock)
  return { count: 0, pt: PT.XR, body: Buffer.concat([u32(packet.ssrc), ...blocks]) }
}

/** XR blocks are written raw: { bt, typeSpecific, data } (RFC 3611 §3). */
function encodeXrBlock (block) {
  const data = block.data || Buffer.alloc(0)
  if (data.length % 4 !== 0) throw new InvalidOptionError('XR block data length', data.length, 'must be a multiple of 4')
  const head = Buffer.alloc(4)
  head[0] = block.bt
  head[1] = block.typeSpecific || 0
  head.writeUInt16BE(data.length / 4, 2)
  return Buffer.concat([head, data])
}

/**
 * Build a valid compound report as an RTP endpoint would send it: an SR
 * (when `sender` is given) or an RR first, extra RRs when there are more
 * than 31 report blocks (RFC 3550 §6.4.2), an SDES with the CNAME, and a
 * BYE when `bye` is true or a reason string.
 *
 * @param {object} report
 * @param {number} report.ssrc the reporter's SSRC
 * @param {{ ntpSec: number, ntpFrac: number, rtpTimestamp: number, packetCount: number, octetCount: number }} [report.sender]
 * @param {object[]} [report.reports] report blocks
 * @param {string} report.cname
 * @param {boolean|string} [report.bye]
 * @returns {Buffer}
 */
function encodeReport ({ ssrc, sender, reports = [], cname, bye }) {
  const groups = splitReports(reports)
  const first = sender ? { type: 'SR', ssrc, ...sender, reports: groups[0] } : { type: 'RR', ssrc, reports: groups[0] }
  const packets = [first, ...groups.slice(1).map((group) => ({ type: 'RR', ssrc, reports: group }))]
  packets.push({ type: 'SDES', chunks: [{ ssrc, items: { cname } }] })
  if (bye) packets.push({ type: 'BYE', sources: [ssrc], reason: typeof bye === 'string' ? bye : undefined })
  return encodeRtcp(packets)
}

function splitReports (reports) {
  const groups = [reports.slice(0, MAX_COUNT)]
  for (let at = MAX_COUNT; at < reports.length; at += MAX_COUNT) groups.push(reports.slice(at, at + MAX_COUNT))
  return groups
}

module.exports = { encodeRtcp, encodeReport }
