'use strict'

// Many messages travel to a worker in one IPC message. Layout of one entry:
//   u32 dataLength | u16 port | u8 addressLength | f64 receivedAt |
//   address (latin1) | data
// (big-endian). The remote address is kept so workers see UDP `rinfo` / TCP
// `remote`; receivedAt is when this message arrived (epoch ms, with the
// kernel's sub-ms fraction for the native UDP path), so that a message's
// arrival is its own, not its batch's. This module is the layout's one
// JavaScript owner: everything else reads entries through it.
// native/udp_receiver.c writes the same layout.
//
// A batch's kind says its messages' protocol and its entries' layout.
// KIND_UDP and KIND_TCP are the layout above, the only one written. Batches
// kept on disk (disk buffer, dead letters) by a version before arrival
// times were carried have kind 0 or 1 and entries without receivedAt; they
// are still read (BatchReader), their messages arriving at their batch's time.

// The layout's version, which the native receiver must write (native-udp-socket.js).
const ENTRY_LAYOUT = 2
const HEADER = 15
const UNTIMED_HEADER = 7
const TIME_AT = 7
const KIND_UDP_UNTIMED = 0
const KIND_TCP_UNTIMED = 1
const KIND_UDP = 2
const KIND_TCP = 3

/** Bytes one message occupies in a batch. */
function entrySize (data, address) {
  return HEADER + address.length + data.length
}

/**
 * Writes one message at `offset`, arrived at `receivedAt` (epoch ms; now
 * when not given); returns the next offset. This runs once per datagram in
 * the master, so it writes bytes directly: no call into C++ for a short
 * address.
 */
function writeEntry (buf, offset, data, address, port, receivedAt) {
  const length = data.length
  const addressLength = address.length
  buf[offset] = length >>> 24
  buf[offset + 1] = length >>> 16
  buf[offset + 2] = length >>> 8
  buf[offset + 3] = length
  buf[offset + 4] = port >>> 8
  buf[offset + 5] = port
  buf[offset + 6] = addressLength
  buf.writeDoubleBE(receivedAt === undefined ? Date.now() : receivedAt, offset + TIME_AT)
  offset += HEADER
  for (let i = 0; i < addressLength; i++) buf[offset + i] = address.charCodeAt(i)
  offset += addressLength
  buf.set(data, offset)
  return offset + length
}

/**
 * Reads a batch one message at a time, rebuilt per kind: `{ data, rinfo,
 * receivedAt }` (UDP) or `{ data, remote, receivedAt }` (TCP), receivedAt
 * in epoch ms. A batch of an untimed kind (written before arrival times
 * were carried) gives every message `batchReceivedAt`. A worker runs this
 * once per message, so consecutive messages from the same address share one
 * address string (and its family) instead of decoding it again.
 */
class BatchReader {
  constructor (bytes, kind, batchReceivedAt = 0) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
    this.tcp = kind === KIND_TCP || kind === KIND_TCP_UNTIMED
    this.timed = kind === KIND_UDP || kind === KIND_TCP
    this.header = this.timed ? HEADER : UNTIMED_HEADER
    this.batchReceivedAt = batchReceivedAt
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
    const receivedAt = this.timed ? buf.readDoubleBE(offset + TIME_AT) : this.batchReceivedAt
    offset += this.header
    const address = this.readAddress(offset, addressLength)
    offset += addressLength
    const data = buf.subarray(offset, offset + length)
    this.offset = offset + length
    if (this.tcp) return { data, remote: { address, port }, receivedAt }
    return { data, rinfo: { address, family: this.family, port, size: length }, receivedAt }
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

/** When the message of the entry at `offset` arrived (epoch ms). */
function entryReceivedAt (buf, offset) {
  return buf.readDoubleBE(offset + TIME_AT)
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

/** Calls `fn(message)` for every message in a batch (`batchReceivedAt`: see BatchReader). */
function forEachMessage (bytes, kind, fn, batchReceivedAt) {
  const reader = new BatchReader(bytes, kind, batchReceivedAt)
  for (let message = reader.next(); message !== null; message = reader.next()) fn(message)
}

/** The remote endpoint of a message of either kind. */
function remoteOf (message) {
  return message.rinfo || message.remote
}

module.exports = { ENTRY_LAYOUT, KIND_UDP, KIND_TCP, KIND_UDP_UNTIMED, KIND_TCP_UNTIMED, entrySize, writeEntry, entryEnd, entryDataStart, entryDataLength, entryAddressStart, entryAddressLength, entryReceivedAt, entryKeyHash, datagramAt, BatchReader, forEachMessage, remoteOf }
