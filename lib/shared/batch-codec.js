'use strict'

// Many messages travel to a worker in one IPC message. Layout of one entry:
//   u32 dataLength | u16 port | u8 addressLength | address (latin1) | data
// The remote address is kept so workers see UDP `rinfo` / TCP `remote`.
// This module is the layout's one JavaScript owner: everything else reads
// entries through it. native/udp_receiver.c writes the same layout.
const HEADER = 7
const KIND_UDP = 0
const KIND_TCP = 1

/** Bytes one message occupies in a batch. */
function entrySize (data, address) {
  return HEADER + address.length + data.length
}

/**
 * Writes one message at `offset`; returns the next offset. This runs once
 * per datagram in the master, so it writes bytes directly: no bounds-checked
 * write helpers, no call into C++ for a short address.
 */
function writeEntry (buf, offset, data, address, port) {
  const length = data.length
  const addressLength = address.length
  buf[offset] = length >>> 24
  buf[offset + 1] = length >>> 16
  buf[offset + 2] = length >>> 8
  buf[offset + 3] = length
  buf[offset + 4] = port >>> 8
  buf[offset + 5] = port
  buf[offset + 6] = addressLength
  offset += HEADER
  for (let i = 0; i < addressLength; i++) buf[offset + i] = address.charCodeAt(i)
  offset += addressLength
  buf.set(data, offset)
  return offset + length
}

/**
 * Reads a batch one message at a time, rebuilt per kind. A worker runs this
 * once per message, so consecutive messages from the same address share one
 * address string (and its family) instead of decoding it again.
 */
class BatchReader {
  constructor (bytes, kind) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
    this.kind = kind
    this.offset = 0
    this.address = ''
    this.family = 'IPv4'
    this.addressStart = -1
    this.addressLength = -1
  }

  /** The next message, or null at the end of the batch. */
  next () {
    const buf = this.buf
    let offset = this.offset
    if (offset >= buf.length) return null
    const length = entryDataLength(buf, offset)
    const port = buf[offset + 4] << 8 | buf[offset + 5]
    const addressLength = buf[offset + 6]
    offset += HEADER
    const address = this.readAddress(offset, addressLength)
    offset += addressLength
    const data = buf.subarray(offset, offset + length)
    this.offset = offset + length
    if (this.kind === KIND_TCP) return { data, remote: { address, port } }
    return { data, rinfo: { address, family: this.family, port, size: length } }
  }

  readAddress (start, length) {
    const buf = this.buf
    if (length === this.addressLength) {
      const previous = this.addressStart
      let same = true
      for (let i = 0; i < length; i++) {
        if (buf[start + i] !== buf[previous + i]) { same = false; break }
      }
      if (same) {
        this.addressStart = start
        return this.address
      }
    }
    this.address = buf.latin1Slice(start, start + length)
    this.family = this.address.includes(':') ? 'IPv6' : 'IPv4'
    this.addressStart = start
    this.addressLength = length
    return this.address
  }
}

/** Bytes of message data in the entry at `offset`. */
function entryDataLength (buf, offset) {
  return (buf[offset] * 0x1000000) + (buf[offset + 1] << 16 | buf[offset + 2] << 8 | buf[offset + 3])
}

/**
 * `fnv1a(\`${address}:${port}\`)` (distribution.js) of the entry at
 * `offset`, read from its bytes: the default `key(message)` hashed without
 * building the message or its strings.
 */
function entryKeyHash (buf, offset) {
  const addressLength = buf[offset + 6]
  const port = buf[offset + 4] << 8 | buf[offset + 5]
  let h = 0x811c9dc5
  const start = offset + HEADER
  for (let i = start; i < start + addressLength; i++) {
    h ^= buf[i]
    h = Math.imul(h, 0x01000193)
  }
  h ^= 58 // ':'
  h = Math.imul(h, 0x01000193)
  const digits = port < 10 ? 1 : port < 100 ? 10 : port < 1000 ? 100 : port < 10000 ? 1000 : 10000
  for (let unit = digits; unit >= 1; unit = unit / 10 | 0) {
    h ^= 48 + ((port / unit | 0) % 10)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** Where the address text of the entry at `offset` starts (its length: entryAddressLength). */
function entryAddressStart (offset) {
  return offset + HEADER
}

/** Bytes of address text in the entry at `offset`. */
function entryAddressLength (buf, offset) {
  return buf[offset + 6]
}

/** Where the data of the entry at `offset` starts. */
function entryDataStart (buf, offset) {
  return offset + HEADER + buf[offset + 6]
}

/** Where the entry at `offset` ends (the next one starts). */
function entryEnd (buf, offset) {
  return offset + HEADER + buf[offset + 6] + entryDataLength(buf, offset)
}

/** The UDP message of the entry at `offset`, with its own copy of the bytes. */
function datagramAt (buf, offset) {
  const message = new BatchReader(buf.subarray(offset, entryEnd(buf, offset)), KIND_UDP).next()
  message.data = Buffer.from(message.data)
  return message
}

/** Calls `fn(message)` for every message in a batch. */
function forEachMessage (bytes, kind, fn) {
  const reader = new BatchReader(bytes, kind)
  for (let message = reader.next(); message !== null; message = reader.next()) fn(message)
}

/** The remote endpoint of a message of either kind. */
function remoteOf (message) {
  return message.rinfo || message.remote
}

module.exports = { KIND_UDP, KIND_TCP, entrySize, writeEntry, entryEnd, entryDataStart, entryDataLength, entryAddressStart, entryAddressLength, entryKeyHash, datagramAt, BatchReader, forEachMessage, remoteOf }
