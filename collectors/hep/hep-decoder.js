'use strict'

// The one owner of the HEP3 format (the Homer Encapsulation Protocol,
// version 3, as its specification rev. 37 lays it out): a packet is the
// magic "HEP3", a uint16 total length (header included), then chunks of
// uint16 vendor, uint16 type, uint16 length (the chunk's, header included)
// and the payload. Generic chunks are vendor 0; any other vendor's, and
// generic types we do not read, are passed over by their length.

const zlib = require('node:zlib')
const { isUtf8 } = require('node:buffer')
const DecodeError = require('../../exceptions/decode-error')
const { ipv6Text } = require('../../lib/shared/ipv6-text')

const MAGIC = 0x48455033 // "HEP3"
const HEADER_SIZE = 6
const CHUNK_HEADER_SIZE = 6
// A compressed payload may not inflate past what an uncompressed HEP packet
// could carry (its total length is 16 bits): compression saves agents
// bytes, it does not let a small packet cost the worker more than a large
// one. Inflating is the one costly step a sender chooses, so decodeHep
// never does it: payloadOf does, once the caller has authenticated the packet.
const MAX_INFLATED = 65535

/** Protocol types (chunk 0x0b) by number, as the specification names them. */
const PROTOCOL_TYPES = Object.freeze({
  0: 'ping',
  1: 'sip',
  4: 'rtp',
  5: 'rtcp',
  34: 'mos-full',
  35: 'mos-short',
  50: 'sip-json',
  58: 'rtcp-pion',
  100: 'log'
})

/** Why a packet is refused: the reasons counted (dropped.<reason>). */
const HEP_REASONS = Object.freeze([
  'hep-bad-magic', // not HEP3
  'hep-bad-length', // the total length disagrees with the bytes
  'hep-truncated-chunk', // a chunk header or body runs past the packet
  'hep-bad-chunk', // a generic chunk of the wrong size for its type
  'hep-bad-gzip', // a compressed payload that does not inflate (or inflates too far)
  'hep-missing-payload', // neither payload chunk, on a type that needs one
  'hep-missing-type' // a payload without the protocol type chunk (0x0b) that says what it is
])
const REFUSALS = Object.freeze(Object.fromEntries(HEP_REASONS.map((reason) => [reason, new DecodeError(reason, `invalid HEP3 packet (${reason})`)])))

// Generic chunk types and how each is read: [field, reader, size or 0 for any].
const GENERIC = new Map([
  [0x01, ['family', 'u8', 1]],
  [0x02, ['ipProtocol', 'u8', 1]],
  [0x03, ['srcIp', 'ipv4', 4]],
  [0x04, ['dstIp', 'ipv4', 4]],
  [0x05, ['srcIp', 'ipv6', 16]],
  [0x06, ['dstIp', 'ipv6', 16]],
  [0x07, ['srcPort', 'u16', 2]],
  [0x08, ['dstPort', 'u16', 2]],
  [0x09, ['timeSec', 'u32', 4]],
  [0x0a, ['timeUsec', 'u32', 4]],
  [0x0b, ['protocolType', 'u8', 1]],
  [0x0c, ['captureId', 'u32', 4]],
  [0x0d, ['keepAlive', 'u16', 2]],
  [0x0e, ['authKey', 'text', 0]],
  [0x0f, ['payload', 'bytes', 0]],
  [0x10, ['compressedPayload', 'bytes', 0]],
  [0x11, ['correlationId', 'text', 0]],
  [0x12, ['vlan', 'u16', 2]],
  [0x13, ['nodeName', 'text', 0]]
])

/**
 * Reads one HEP3 packet's chunks, in time linear in its bytes and without
 * inflating anything. Returns `{ protocolType, srcIp, dstIp, srcPort,
 * dstPort, timeSec, timeUsec, captureId, nodeName, authKey, correlationId,
 * payload, compressedPayload, family, ipProtocol, vlan, keepAlive,
 * skippedChunks, notUtf8 }` (notUtf8: the text fields whose bytes are not
 * UTF-8, when any) (fields absent from the packet are undefined; the two
 * payloads are views of `buf`: read them through payloadOf), or the
 * DecodeError of its reason (HEP_REASONS): returned, not thrown, as the
 * stream worker counts refusals.
 *
 * @param {Buffer} buf one datagram, or one frame of a TCP stream
 * @returns {object|DecodeError}
 */
function decodeHep (buf) {
  if (buf.length < HEADER_SIZE || buf.readUInt32BE(0) !== MAGIC) return REFUSALS['hep-bad-magic']
  const total = buf.readUInt16BE(4)
  if (total !== buf.length) return REFUSALS['hep-bad-length']
  const packet = { skippedChunks: 0 }
  let offset = HEADER_SIZE
  while (offset < total) {
    if (total - offset < CHUNK_HEADER_SIZE) return REFUSALS['hep-truncated-chunk']
    const vendor = buf.readUInt16BE(offset)
    const type = buf.readUInt16BE(offset + 2)
    const length = buf.readUInt16BE(offset + 4)
    if (length < CHUNK_HEADER_SIZE || offset + length > total) return REFUSALS['hep-truncated-chunk']
    const reading = vendor === 0 ? GENERIC.get(type) : undefined
    if (!reading) packet.skippedChunks++
    else if (!readChunk(packet, reading, buf, offset + CHUNK_HEADER_SIZE, length - CHUNK_HEADER_SIZE)) return REFUSALS['hep-bad-chunk']
    offset += length
  }
  return packet
}

/**
 * The payload of a decoded packet: chunk 0x0f as sent, else chunk 0x10
 * inflated (gzip or zlib, at most MAX_INFLATED bytes), else undefined; the
 * `hep-bad-gzip` refusal when it does not inflate within that. Call it only
 * once the packet is authenticated: its cost is the sender's choice.
 *
 * @param {object} packet what decodeHep returned
 * @returns {Buffer|undefined|DecodeError}
 */
function payloadOf (packet) {
  if (packet.payload !== undefined || packet.compressedPayload === undefined) return packet.payload
  return inflate(packet.compressedPayload) || REFUSALS['hep-bad-gzip']
}

// One generic chunk into its field; false when its size is wrong for its type.
function readChunk (packet, [field, reader, size], buf, start, length) {
  if (size > 0 && length !== size) return false
  switch (reader) {
    case 'u8': packet[field] = buf[start]; break
    case 'u16': packet[field] = buf.readUInt16BE(start); break
    case 'u32': packet[field] = buf.readUInt32BE(start); break
    case 'ipv4': packet[field] = `${buf[start]}.${buf[start + 1]}.${buf[start + 2]}.${buf[start + 3]}`; break
    case 'ipv6': packet[field] = ipv6Text(buf, start); break
    case 'text':
      packet[field] = buf.toString('utf8', start, start + length).replace(/\0+$/, '')
      // Bytes that are not UTF-8 read as U+FFFD: kept as text, two such would read as one.
      if (packet[field].includes('\uFFFD') && !isUtf8(buf.subarray(start, start + length))) (packet.notUtf8 ||= []).push(field)
      break
    default: packet[field] = buf.subarray(start, start + length)
  }
  return true
}

// Agents send gzip (captagent) or zlib streams under chunk 0x10.
function inflate (bytes) {
  const options = { maxOutputLength: MAX_INFLATED }
  try {
    return bytes[0] === 0x1f && bytes[1] === 0x8b ? zlib.gunzipSync(bytes, options) : zlib.inflateSync(bytes, options)
  } catch {
    return null
  }
}

/** The capture time of a packet in ms since the epoch, or undefined when it carries none. */
function captureTime (packet) {
  if (packet.timeSec === undefined) return undefined
  return packet.timeSec * 1000 + Math.floor((packet.timeUsec || 0) / 1000)
}

module.exports = { decodeHep, payloadOf, captureTime, HEP_REASONS, PROTOCOL_TYPES, MAGIC, MAX_INFLATED }
