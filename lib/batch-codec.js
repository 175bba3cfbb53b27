'use strict'

// Many messages travel to a worker in one IPC message. Layout of one entry:
//   u32 dataLength | u16 port | u8 addressLength | address (latin1) | data
// The remote address is kept so workers see UDP `rinfo` / TCP `remote`.
const HEADER = 7
const KIND_UDP = 0
const KIND_TCP = 1

/** Bytes one message occupies in a batch. */
function entrySize (data, address) {
  return HEADER + address.length + data.length
}

/** Writes one message at `offset`; returns the next offset. */
function writeEntry (buf, offset, data, address, port) {
  buf.writeUInt32BE(data.length, offset)
  buf.writeUInt16BE(port, offset + 4)
  buf[offset + 6] = address.length
  offset += HEADER
  offset += buf.latin1Write(address, offset)
  return offset + data.copy(buf, offset)
}

/** Calls `fn(message)` for every message in a batch, rebuilt per kind. */
function forEachMessage (bytes, kind, fn) {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  let offset = 0
  while (offset < buf.length) {
    const length = buf.readUInt32BE(offset)
    const port = buf.readUInt16BE(offset + 4)
    const addressEnd = offset + HEADER + buf[offset + 6]
    const address = buf.latin1Slice(offset + HEADER, addressEnd)
    const data = buf.subarray(addressEnd, addressEnd + length)
    offset = addressEnd + length
    fn(kind === KIND_UDP ? udpMessage(data, address, port) : { data, remote: { address, port } })
  }
}

function udpMessage (data, address, port) {
  const family = address.includes(':') ? 'IPv6' : 'IPv4'
  return { data, rinfo: { address, family, port, size: data.length } }
}

/** The remote endpoint of a message of either kind. */
function remoteOf (message) {
  return message.rinfo || message.remote
}

module.exports = { KIND_UDP, KIND_TCP, entrySize, writeEntry, forEachMessage, remoteOf }
