'use strict'

const { isUtf8 } = require('node:buffer')
const DecodeError = require('../../exceptions/decode-error')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const {
  VERSION, HEADER_SIZE, REPORT_BLOCK_SIZE, SENDER_INFO_SIZE, PT,
  SDES_NAME, SDES_END, SDES_PRIV, DECODE_REASONS, TOLERABLE_REASONS, MAX_COMPOUND_SOURCES, MAX_COMPOUND_ITEMS
} = require('./constants')
const { decodeXrBlock } = require('./xr-blocks')
const { looksLikeSrtcp } = require('./srtcp')

const MIN_COMPOUND = 8 // an RR with no report blocks
const SR_HEAD = 4 + SENDER_INFO_SIZE
// SDES item names by type code, as an array: the lookup is on the hot path.
const ITEM_NAMES = Array.from({ length: 256 }, (_, type) => SDES_NAME[type] || null)

// Tolerance bits, one per TOLERABLE_REASONS entry, and the reduced-size option's.
const TOLERATE_UNTERMINATED = 1
const TOLERATE_NONZERO_PAD = 2
const REDUCED_SIZE = 1 << 8
// RTCP packet types (RFC 5761 §4): what a reduced-size datagram may start with.
const RTCP_PT_FIRST = 192
const RTCP_PT_LAST = 223
// What a reduced-size datagram's first packet is, by type (RFC 3550, 4585, 3611).
const FIRST_TYPE_NAMES = Object.freeze({ 202: 'SDES', 203: 'BYE', 204: 'APP', 205: 'RTPFB', 206: 'PSFB', 207: 'XR' })

// The parsers below report a refusal by returning null after setting these
// (no exception, no allocation until the caller builds its result).
let failReason = ''
let failAt = 0
// Set by decodeText: whether the last text was not valid UTF-8.
let textInvalid = false
// Per call: the tolerated deviations met so far (null while none).
let deviations = null
// Per call: SDES items and XR blocks the compound may still carry.
let itemsLeft = 0
// Per call: whether a packet after the first was of type 0 with no count,
// which no RTCP is and an SRTCP index word read as a header is (srtcp.js).
let indexWordSeen = false

function fail (reason, at) {
  failReason = reason
  failAt = at
  return null
}

function failIndex (reason, at) {
  fail(reason, at)
  return -1
}

/**
 * Decode one RTCP compound datagram (RFC 3550 §6, XR from RFC 3611).
 * Validates it as RFC 3550 Appendix A.2 recommends (version 2 in every
 * header, SR or RR first, padding only on the last packet, lengths that add
 * up to the datagram) and reads every packet by the RFC's grammar: report
 * and source counts must match the content, SDES chunks end with a null
 * octet, fill octets are null, the padding count is a multiple of four.
 * Unknown packet types and unknown XR block types are passed over by length.
 * Nothing is altered: every SDES item is kept in order (`chunk.list`), and
 * text that is not valid UTF-8 keeps its bytes (`raw`, `invalidUtf8`).
 *
 * With `reducedSize` (RFC 5506, negotiated as `a=rtcp-rsize`: WebRTC
 * endpoints send a lone NACK, PLI, SDES or BYE between their compounds) the
 * first packet may be any RTCP type (192–223, RFC 5761 §4), and when it is
 * not an SR or RR the result's `reducedSize` names it (`RTPFB`, `PSFB`,
 * `SDES`, `BYE`, `APP`, `XR`, else `pt<type>`).
 *
 * @param {Buffer|Uint8Array} buf one UDP payload
 * @param {{ tolerate?: string[], reducedSize?: boolean }} [options] reasons from
 *   TOLERABLE_REASONS to accept, each one met listed in the result's `deviations`
 * @returns {{ packets: object[], deviations?: string[], reducedSize?: string }}
 * @throws {DecodeError} with a `reason` from DECODE_REASONS
 */
function decodeRtcp (buf, options) {
  const result = tryDecodeRtcp(buf, options)
  if (result.reason !== undefined) {
    throw new DecodeError(result.reason, `invalid RTCP (${result.reason}) at byte ${result.offset} of ${result.length}`)
  }
  return result
}

/**
 * decodeRtcp without exceptions, for hot paths: `{ packets, deviations? }`
 * or, for a datagram it refuses, `{ packets: null, reason, offset, length }`.
 *
 * @param {Buffer|Uint8Array} buf
 * @param {{ tolerate?: string[] }} [options]
 */
function tryDecodeRtcp (buf, options) {
  if (!Buffer.isBuffer(buf)) {
    if (!(buf instanceof Uint8Array)) return { packets: null, reason: 'not-buffer', offset: 0, length: 0 }
    buf = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  }
  deviations = null
  itemsLeft = MAX_COMPOUND_ITEMS
  indexWordSeen = false
  const packets = decodePackets(buf, options === undefined ? 0 : toleranceBits(options))
  // Encrypted RTCP: refused by its name, not by the noise its ciphertext reads as, nor taken as figures.
  if ((packets === null || indexWordSeen) && looksLikeSrtcp(buf)) return { packets: null, reason: 'srtcp', offset: 8, length: buf.length }
  if (packets === null) return { packets: null, reason: failReason, offset: failAt, length: buf.length }
  const result = { packets }
  if (deviations !== null) result.deviations = deviations
  if (buf[1] !== PT.SR && buf[1] !== PT.RR) result.reducedSize = FIRST_TYPE_NAMES[buf[1]] || `pt${buf[1]}`
  return result
}

function toleranceBits ({ tolerate = [], reducedSize = false }) {
  if (!Array.isArray(tolerate)) throw new InvalidOptionError('tolerate', tolerate, 'must be an array')
  let bits = reducedSize ? REDUCED_SIZE : 0
  for (const reason of tolerate) {
    const at = TOLERABLE_REASONS.indexOf(reason)
    if (at < 0) throw new InvalidOptionError('tolerate', reason, `must be one of ${TOLERABLE_REASONS.join(', ')}`)
    bits |= 1 << at
  }
  return bits
}

function deviate (reason) {
  if (deviations === null) deviations = [reason]
  else if (!deviations.includes(reason)) deviations.push(reason)
}

/** Walk the common headers (A.2) and hand each packet's body to its parser. */
function decodePackets (buf, tolerate) {
  const length = buf.length
  if (length < MIN_COMPOUND) return fail('too-short', 0)
  const packets = []
  let offset = 0
  // What the compound describes, per role (MAX_COMPOUND_SOURCES).
  let reports = 0
  let chunks = 0
  let byes = 0
  let xrEntries = 0
  while (offset < length) {
    if (length - offset < HEADER_SIZE) return fail('bad-length', offset)
    const first = buf[offset]
    if (first >> 6 !== VERSION) return fail('bad-version', offset)
    const pt = buf[offset + 1]
    if (offset === 0 && pt !== PT.SR && pt !== PT.RR && !((tolerate & REDUCED_SIZE) && pt >= RTCP_PT_FIRST && pt <= RTCP_PT_LAST)) return fail('first-not-sr-rr', 0)
    const end = offset + (((buf[offset + 2] << 8) | buf[offset + 3]) + 1) * 4
    if (end > length) return fail('bad-length', offset)
    let bodyEnd = end
    if (first & 0x20) {
      // §6.4.1: only the last packet is padded; the count includes itself
      // and keeps the content 32-bit aligned, so it is a multiple of four.
      const padding = buf[end - 1]
      if (end !== length || padding === 0 || (padding & 3) !== 0 || padding > end - offset - HEADER_SIZE) return fail('bad-padding', offset)
      bodyEnd = end - padding
    }
    if (first === 0x80 && pt === 0 && offset > 0) indexWordSeen = true
    const packet = decodePacket(buf, pt, first & 0x1f, offset + HEADER_SIZE, bodyEnd, tolerate)
    if (packet === null) return null
    if (packet !== undefined) {
      if (packet.reports) reports += packet.reports.length
      else if (packet.type === 'SDES') chunks += packet.chunks.length
      else if (packet.type === 'BYE') byes += packet.sources.length
      else if (packet.type === 'XR') xrEntries += xrEntryCount(packet)
      if (reports > MAX_COMPOUND_SOURCES || chunks > MAX_COMPOUND_SOURCES || byes > MAX_COMPOUND_SOURCES || xrEntries > MAX_COMPOUND_SOURCES) {
        return fail('too-many-sources', offset)
      }
      packets.push(packet)
    }
    offset = end
  }
  return packets
}

function decodePacket (buf, pt, count, start, end, tolerate) {
  switch (pt) {
    case PT.SR: return decodeSr(buf, count, start, end)
    case PT.RR: return decodeRr(buf, count, start, end)
    case PT.SDES: return decodeSdes(buf, count, start, end, tolerate)
    case PT.BYE: return decodeBye(buf, count, start, end, tolerate)
    case PT.APP: return decodeApp(buf, count, start, end)
    case PT.XR: return decodeXr(buf, start, end)
    default: return undefined
  }
}

function u32 (buf, at) {
  return buf[at] * 0x1000000 + ((buf[at + 1] << 16) | (buf[at + 2] << 8) | buf[at + 3])
}

function decodeSr (buf, count, start, end) {
  if (end - start < SR_HEAD) return fail('bad-length', start)
  const used = start + SR_HEAD + count * REPORT_BLOCK_SIZE
  if (used > end) return fail('report-count', start)
  const packet = {
    type: 'SR',
    ssrc: u32(buf, start),
    ntpSec: u32(buf, start + 4),
    ntpFrac: u32(buf, start + 8),
    rtpTimestamp: u32(buf, start + 12),
    packetCount: u32(buf, start + 16),
    octetCount: u32(buf, start + 20),
    reports: readBlocks(buf, start + SR_HEAD, count)
  }
  // A profile-specific extension follows the report blocks (§6.4.1).
  if (used < end) packet.extension = Buffer.from(buf.subarray(used, end))
  return packet
}

function decodeRr (buf, count, start, end) {
  if (end - start < 4) return fail('bad-length', start)
  const used = start + 4 + count * REPORT_BLOCK_SIZE
  if (used > end) return fail('report-count', start)
  const packet = { type: 'RR', ssrc: u32(buf, start), reports: readBlocks(buf, start + 4, count) }
  if (used < end) packet.extension = Buffer.from(buf.subarray(used, end))
  return packet
}

function readBlocks (buf, at, count) {
  const reports = new Array(count)
  for (let i = 0; i < count; i++, at += REPORT_BLOCK_SIZE) {
    reports[i] = {
      ssrc: u32(buf, at),
      fractionLost: buf[at + 4],
      cumulativeLost: ((buf[at + 5] << 24) | (buf[at + 6] << 16) | (buf[at + 7] << 8)) >> 8,
      highestSeq: u32(buf, at + 8),
      jitter: u32(buf, at + 12),
      lsr: u32(buf, at + 16),
      dlsr: u32(buf, at + 20)
    }
  }
  return reports
}

/**
 * SDES (§6.5): `count` chunks, each an SSRC, items, a null octet and null
 * octets to the next 32-bit boundary; nothing may follow the last chunk.
 * `chunk.list` holds every item in order; `chunk.items` is the convenience
 * view by name (the first of each type, PRIV entries in order).
 */
function decodeSdes (buf, count, start, end, tolerate) {
  const chunks = new Array(count)
  let pos = start
  for (let i = 0; i < count; i++) {
    if (end - pos < 4) return fail('report-count', pos)
    const chunk = { ssrc: u32(buf, pos), items: {}, list: [] }
    pos = readItems(buf, pos + 4, end, chunk, tolerate)
    if (pos < 0) return null
    chunks[i] = chunk
  }
  if (pos !== end) return fail('source-count-mismatch', pos)
  return { type: 'SDES', chunks }
}

/** Read one chunk's items and its terminator; returns the next chunk's offset, or -1. */
function readItems (buf, pos, end, chunk, tolerate) {
  while (pos < end) {
    const type = buf[pos]
    // Packets start on 32-bit boundaries in the datagram, so offsets do too.
    if (type === SDES_END) return skipNulls(buf, pos + 1, (pos + 4) & ~3, tolerate)
    const textEnd = pos + 2 + buf[pos + 1]
    if (pos + 2 > end || textEnd > end) return failIndex('truncated-block', pos)
    if (--itemsLeft < 0) return failIndex('too-many-items', pos)
    const item = type === SDES_PRIV ? readPriv(buf, pos + 2, textEnd) : readItem(buf, type, pos + 2, textEnd)
    if (item === null) return -1
    chunk.list.push(item)
    addConvenience(chunk.items, item)
    pos = textEnd
  }
  // §6.5: "MUST be terminated by one or more null octets".
  if (!(tolerate & TOLERATE_UNTERMINATED)) return failIndex('sdes-unterminated', pos)
  deviate('sdes-unterminated')
  return pos
}

/** The fill after an END item or a BYE reason must be null octets (§6.5, §6.6). */
function skipNulls (buf, pos, to, tolerate) {
  for (let at = pos; at < to; at++) {
    if (buf[at] !== 0) {
      if (!(tolerate & TOLERATE_NONZERO_PAD)) return failIndex('nonzero-padding', at)
      deviate('nonzero-padding')
      break
    }
  }
  return to
}

function readItem (buf, type, from, to) {
  const text = decodeText(buf, from, to)
  const item = { type, name: ITEM_NAMES[type], text }
  if (textInvalid) {
    item.raw = Buffer.from(buf.subarray(from, to))
    item.invalidUtf8 = true
  }
  return item
}

/** PRIV (§6.5.8): a prefix length octet, the prefix, then the value. */
function readPriv (buf, from, to) {
  if (from === to || buf[from] > to - from - 1) return fail('sdes-bad-priv', from - 2)
  const valueFrom = from + 1 + buf[from]
  const prefix = decodeText(buf, from + 1, valueFrom)
  let invalid = textInvalid
  const item = { type: SDES_PRIV, name: 'priv', prefix, text: decodeText(buf, valueFrom, to) }
  invalid = invalid || textInvalid
  if (invalid) {
    item.raw = Buffer.from(buf.subarray(from, to))
    item.invalidUtf8 = true
  }
  return item
}

function addConvenience (items, item) {
  if (item.type === SDES_PRIV) {
    const entry = { prefix: item.prefix, value: item.text }
    if (items.priv === undefined) items.priv = [entry]
    else items.priv.push(entry)
  } else if (item.name !== null && items[item.name] === undefined) {
    items[item.name] = item.text
  }
}

/** Text as a string: latin1 when ASCII (the common case), else UTF-8; sets textInvalid. */
function decodeText (buf, from, to) {
  let high = 0
  for (let at = from; at < to; at++) high |= buf[at]
  if (high < 0x80) {
    textInvalid = false
    return buf.latin1Slice(from, to)
  }
  textInvalid = !isUtf8(buf.subarray(from, to))
  return buf.utf8Slice(from, to)
}

/** BYE (§6.6): `count` SSRCs, then an optional reason null-filled to 32 bits. */
function decodeBye (buf, count, start, end, tolerate) {
  let pos = start + count * 4
  if (pos > end) return fail('report-count', start)
  const sources = new Array(count)
  for (let i = 0; i < count; i++) sources[i] = u32(buf, start + i * 4)
  const packet = { type: 'BYE', sources }
  if (pos === end) return packet
  const reasonEnd = pos + 1 + buf[pos]
  if (reasonEnd > end) return fail('truncated-block', pos)
  packet.reason = decodeText(buf, pos + 1, reasonEnd)
  if (textInvalid) {
    packet.reasonRaw = Buffer.from(buf.subarray(pos + 1, reasonEnd))
    packet.reasonInvalidUtf8 = true
  }
  // Anything past the reason's 32-bit fill is an SSRC the count left out.
  pos = (reasonEnd + 3) & ~3
  if (pos !== end) return fail('source-count-mismatch', reasonEnd)
  if (skipNulls(buf, reasonEnd, pos, tolerate) < 0) return null
  return packet
}

function decodeApp (buf, subtype, start, end) {
  if (end - start < 8) return fail('bad-length', start)
  return {
    type: 'APP',
    subtype,
    ssrc: u32(buf, start),
    name: buf.latin1Slice(start + 4, start + 8),
    data: Buffer.from(buf.subarray(start + 8, end))
  }
}

function decodeXr (buf, start, end) {
  if (end - start < 4) return fail('bad-length', start)
  const blocks = []
  let pos = start + 4
  while (pos < end) {
    const blockEnd = pos + 4 + ((buf[pos + 2] << 8) | buf[pos + 3]) * 4
    if (end - pos < 4 || blockEnd > end) return fail('truncated-block', pos)
    if (--itemsLeft < 0) return fail('too-many-items', pos)
    blocks.push(decodeXrBlock(buf[pos], buf[pos + 1], Buffer.from(buf.subarray(pos + 4, blockEnd))))
    pos = blockEnd
  }
  return { type: 'XR', ssrc: u32(buf, start), blocks }
}

// An XR packet's blocks, a DLRR block counting as its items (an empty one as one).
function xrEntryCount (packet) {
  let n = 0
  for (const block of packet.blocks) n += block.kind === 'dlrr' ? Math.max(1, block.items.length) : 1
  return n
}

module.exports = { decodeRtcp, tryDecodeRtcp, DECODE_REASONS, TOLERABLE_REASONS }
