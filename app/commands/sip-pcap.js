'use strict'

// A call's stored SIP messages as a pcap file (runs in the CLI: the calls
// view's export), so that Wireshark, tshark and sngrep open the call: one
// Ethernet frame per message, IPv4 or IPv6 and UDP, the capture time kept
// (microseconds). Every message is written as UDP, whatever its transport:
// a TCP stream would need the segments the agent did not send; the stored
// `transport` says which it was. A message whose text was cut at the
// store's cap is written as stored, and said to be cut as a capture's
// snapshot length says it: its record's original length, and its IP and
// UDP lengths, are those of the whole message (`bytes`), so that
// Wireshark marks it "packet size limited during capture".

const LINKTYPE_ETHERNET = 1
const SNAPLEN = 262144

/**
 * @param {Array<{ at: Date, atMicros?: number, src: string, dst: string, raw: Buffer|string, bytes?: number }>} messages as sip_messages holds them (the bytes as sent, and how many the message had)
 * @returns {Buffer}
 */
function sipPcap (messages) {
  const header = Buffer.alloc(24)
  header.writeUInt32LE(0xa1b2c3d4, 0)
  header.writeUInt16LE(2, 4)
  header.writeUInt16LE(4, 6)
  header.writeUInt32LE(SNAPLEN, 16)
  header.writeUInt32LE(LINKTYPE_ETHERNET, 20)
  return Buffer.concat([header, ...messages.map(frameOf).filter(Boolean)])
}

function frameOf ({ at, atMicros, src, dst, raw, bytes }) {
  const from = addressOf(src)
  const to = addressOf(dst)
  if (!from || !to || from.v6 !== to.v6) return null
  const payload = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8')
  const whole = Math.max(payload.length, Number.isInteger(bytes) ? bytes : 0) // the message's size, cut or not
  const udp = Buffer.alloc(8)
  udp.writeUInt16BE(from.port, 0)
  udp.writeUInt16BE(to.port, 2)
  udp.writeUInt16BE(Math.min(0xffff, 8 + whole), 4)
  // Over IPv6 a UDP checksum is required (RFC 8200 §8.1: 0 is illegal
  // there); over IPv4 it is written too. Of the bytes stored: a message
  // stored cut has none a reader could check it against.
  if (whole === payload.length) udp.writeUInt16BE(udpChecksum(from, to, udp, payload), 6)
  const ip = from.v6 ? ipv6Header(from, to, 8 + whole) : ipv4Header(from, to, 8 + whole)
  const ethernet = Buffer.alloc(14)
  ethernet.writeUInt16BE(from.v6 ? 0x86dd : 0x0800, 12)
  const frame = Buffer.concat([ethernet, ip, udp, payload])
  const record = Buffer.alloc(16)
  const ms = new Date(at).getTime()
  record.writeUInt32LE(Math.floor(ms / 1000), 0)
  record.writeUInt32LE((ms % 1000) * 1000 + (Number.isInteger(atMicros) ? atMicros : 0), 4)
  record.writeUInt32LE(frame.length, 8)
  record.writeUInt32LE(frame.length + whole - payload.length, 12)
  return Buffer.concat([record, frame])
}

// The one's-complement sum of the pseudo-header (RFC 768 for IPv4, RFC 8200
// §8.1 for IPv6: the addresses, the protocol and the UDP length), the UDP
// header (its checksum field 0) and the payload; 0 is sent as 0xffff.
function udpChecksum (from, to, udp, payload) {
  const length = udp.length + payload.length
  let sum = 17 + (length >>> 16) + (length & 0xffff)
  for (const part of [from.bytes, to.bytes, udp, payload]) {
    for (let i = 0; i + 1 < part.length; i += 2) sum += part.readUInt16BE(i)
    if (part.length % 2 === 1) sum += part[part.length - 1] << 8
    sum = (sum & 0xffff) + (sum >>> 16)
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  const checksum = ~sum & 0xffff
  return checksum === 0 ? 0xffff : checksum
}

function ipv4Header (from, to, length) {
  const h = Buffer.alloc(20)
  h[0] = 0x45
  h.writeUInt16BE(Math.min(0xffff, 20 + length), 2)
  h[8] = 64
  h[9] = 17
  from.bytes.copy(h, 12)
  to.bytes.copy(h, 16)
  let sum = 0
  for (let i = 0; i < 20; i += 2) sum += h.readUInt16BE(i)
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  h.writeUInt16BE(~sum & 0xffff, 10)
  return h
}

function ipv6Header (from, to, length) {
  const h = Buffer.alloc(40)
  h[0] = 0x60
  h.writeUInt16BE(Math.min(0xffff, length), 4)
  h[6] = 17
  h[7] = 64
  from.bytes.copy(h, 8)
  to.bytes.copy(h, 24)
  return h
}

// `1.2.3.4:5060` or `[2001:db8::1]:5060` as bytes and port; null when it is neither.
function addressOf (text) {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(text || '')
  if (!m) return null
  const port = Number(m[3])
  if (m[2]) {
    const parts = m[2].split('.').map(Number)
    return parts.every((n) => n <= 255) && port <= 65535 ? { v6: false, bytes: Buffer.from(parts), port } : null
  }
  const bytes = ipv6Bytes(m[1])
  return bytes && port <= 65535 ? { v6: true, bytes, port } : null
}

function ipv6Bytes (text) {
  const [head, tail, extra] = text.split('::')
  if (extra !== undefined) return null
  const groups = (part) => part ? part.split(':') : []
  const left = groups(head)
  const right = tail === undefined ? [] : groups(tail)
  const missing = 8 - left.length - right.length
  if (missing < 0 || (tail === undefined && missing !== 0)) return null
  const all = [...left, ...Array(missing).fill('0'), ...right]
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null
  const bytes = Buffer.alloc(16)
  all.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), 2 * i))
  return bytes
}

module.exports = { sipPcap }
