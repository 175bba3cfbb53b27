'use strict'

// The UDP datagrams of a classic libpcap file (not pcapng), in the order
// captured: what `collector verify --sample file.pcap` sends. Link types:
// Ethernet (802.1Q/802.1ad tags skipped), raw IP (101, and 228/229),
// Linux cooked captures (113, 276) and BSD loopback (0, 108). IPv4 and
// IPv6; fragments are skipped (and counted), so is anything not UDP.

const CollectorError = require('../../exceptions/collector-error')

const MAGIC = Object.freeze({ micro: 0xa1b2c3d4, nano: 0xa1b23c4d })
const PCAPNG = 0x0a0d0d0a
const GLOBAL_HEADER = 24
const RECORD_HEADER = 16
const ETHERTYPE = Object.freeze({ ipv4: 0x0800, ipv6: 0x86dd })
const VLAN_TAGS = new Set([0x8100, 0x88a8, 0x9100])
const UDP = 17
// IPv6 extension headers read past: hop-by-hop, routing, destination options.
const IPV6_EXTENSIONS = new Set([0, 43, 60])
const IPV6_FRAGMENT = 44

/** Whether `buf` starts as a pcap (or pcapng) file does. */
function looksLikePcap (buf) {
  if (buf.length < 4) return false
  const le = buf.readUInt32LE(0)
  const be = buf.readUInt32BE(0)
  return [MAGIC.micro, MAGIC.nano, PCAPNG].includes(le) || [MAGIC.micro, MAGIC.nano].includes(be)
}

/**
 * @param {Buffer} buf the file's bytes
 * @param {string} [name] the file, for errors
 * @returns {{ datagrams: Array<{ data: Buffer, srcPort: number, dstPort: number, time: number }>, skipped: Record<string, number> }}
 */
function readPcap (buf, name = 'pcap') {
  const header = globalHeader(buf, name)
  const datagrams = []
  const skipped = {}
  const skip = (why) => { skipped[why] = (skipped[why] || 0) + 1 }
  let offset = GLOBAL_HEADER
  while (offset + RECORD_HEADER <= buf.length) {
    const seconds = header.read32(buf, offset)
    const fraction = header.read32(buf, offset + 4)
    const captured = header.read32(buf, offset + 8)
    const original = header.read32(buf, offset + 12)
    const start = offset + RECORD_HEADER
    offset = start + captured
    if (offset > buf.length) throw new CollectorError(`${name}: the last packet is cut short (the file ends inside it)`, 'ERR_USAGE')
    if (captured < original) { skip('truncated'); continue }
    const udp = udpOf(buf.subarray(start, offset), header.link, skip)
    if (udp) datagrams.push({ ...udp, time: seconds * 1000 + fraction / header.perMs })
  }
  return { datagrams, skipped }
}

function globalHeader (buf, name) {
  const usage = (what) => new CollectorError(`${name}: ${what}`, 'ERR_USAGE')
  if (buf.length >= 4 && buf.readUInt32LE(0) === PCAPNG) throw usage('a pcapng file: write it as classic pcap first (editcap -F pcap in.pcapng out.pcap)')
  if (buf.length < GLOBAL_HEADER) throw usage('too short for a pcap file')
  const le = buf.readUInt32LE(0)
  const littleEndian = le === MAGIC.micro || le === MAGIC.nano
  const magic = littleEndian ? le : buf.readUInt32BE(0)
  if (magic !== MAGIC.micro && magic !== MAGIC.nano) throw usage('not a pcap file (unknown magic number)')
  const read32 = littleEndian ? (b, at) => b.readUInt32LE(at) : (b, at) => b.readUInt32BE(at)
  return { read32, link: read32(buf, 20) & 0xffff, perMs: magic === MAGIC.nano ? 1e6 : 1e3 }
}

// The IP packet inside a link-layer frame, then its UDP datagram.
function udpOf (frame, link, skip) {
  const ip = ipOf(frame, link)
  if (ip === null) return skip(`linkType${link}`)
  if (ip.length < 1) return skip('notIp')
  const version = ip[0] >> 4
  if (version === 4) return udpOfIpv4(ip, skip)
  if (version === 6) return udpOfIpv6(ip, skip)
  return skip('notIp')
}

// The IP packet of a frame (its version nibble says which); null: a link type not read here.
function ipOf (frame, link) {
  switch (link) {
    case 1: return ethernetPayload(frame)
    case 101: case 228: case 229: case 12: case 14: return frame
    case 113: return frame.subarray(16) // Linux cooked v1: protocol at 14
    case 276: return frame.subarray(20) // Linux cooked v2
    case 0: case 108: return frame.subarray(4) // BSD loopback: a 4-byte family
    default: return null
  }
}

function ethernetPayload (frame) {
  let at = 12
  while (at + 2 <= frame.length && VLAN_TAGS.has(frame.readUInt16BE(at))) at += 4
  if (at + 2 > frame.length) return Buffer.alloc(0)
  const type = frame.readUInt16BE(at)
  return type === ETHERTYPE.ipv4 || type === ETHERTYPE.ipv6 ? frame.subarray(at + 2) : Buffer.alloc(0)
}

function udpOfIpv4 (ip, skip) {
  const headerLength = (ip[0] & 0x0f) * 4
  if (ip.length < 20 || ip.length < headerLength) return skip('truncated')
  if (ip[9] !== UDP) return skip('notUdp')
  const flagsAndOffset = ip.readUInt16BE(6)
  if ((flagsAndOffset & 0x2000) || (flagsAndOffset & 0x1fff)) return skip('fragment')
  const total = Math.min(ip.readUInt16BE(2) || ip.length, ip.length)
  return udpPayload(ip.subarray(headerLength, total), skip)
}

function udpOfIpv6 (ip, skip) {
  if (ip.length < 40) return skip('truncated')
  let next = ip[6]
  let at = 40
  while (IPV6_EXTENSIONS.has(next) && at + 8 <= ip.length) {
    next = ip[at]
    at += (ip[at + 1] + 1) * 8
  }
  if (next === IPV6_FRAGMENT) return skip('fragment')
  if (next !== UDP) return skip('notUdp')
  const end = Math.min(40 + ip.readUInt16BE(4), ip.length)
  return udpPayload(ip.subarray(at, end), skip)
}

function udpPayload (udp, skip) {
  if (udp.length < 8) return skip('truncated')
  const length = Math.min(udp.readUInt16BE(4) || udp.length, udp.length)
  if (length < 8) return skip('truncated')
  return { data: Buffer.from(udp.subarray(8, length)), srcPort: udp.readUInt16BE(0), dstPort: udp.readUInt16BE(2) }
}

module.exports = { readPcap, looksLikePcap }
