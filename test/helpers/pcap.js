'use strict'

// A minimal libpcap writer: each UDP payload is wrapped in synthetic
// Ethernet/IPv4/UDP headers so tools such as tshark can dissect it.

const fs = require('node:fs/promises')

const PCAP_MAGIC = 0xa1b2c3d4
const LINKTYPE_ETHERNET = 1
const SNAPLEN = 65535
const ETH_SIZE = 14
const IPV4_SIZE = 20
const UDP_SIZE = 8

/**
 * Build a pcap file in memory.
 * @param {Array<{ data: Buffer, srcPort: number, dstPort: number, srcIp?: string, dstIp?: string, time?: number }>} records
 *   UDP payloads; `time` in ms since the epoch (default: now)
 * @returns {Buffer}
 */
function buildPcap (records) {
  return Buffer.concat([globalHeader(), ...records.map(record)])
}

/**
 * Write a pcap file with buildPcap.
 * @param {string} path
 * @param {Parameters<typeof buildPcap>[0]} records
 * @returns {Promise<void>}
 */
function writePcap (path, records) {
  return fs.writeFile(path, buildPcap(records))
}

function globalHeader () {
  const out = Buffer.alloc(24)
  out.writeUInt32LE(PCAP_MAGIC, 0)
  out.writeUInt16LE(2, 4)
  out.writeUInt16LE(4, 6)
  out.writeUInt32LE(SNAPLEN, 16)
  out.writeUInt32LE(LINKTYPE_ETHERNET, 20)
  return out
}

function record (rec, index) {
  const frame = Buffer.concat([ethernet(), ipv4(rec, index), udp(rec)])
  const time = rec.time === undefined ? Date.now() : rec.time
  const head = Buffer.alloc(16)
  head.writeUInt32LE(Math.floor(time / 1000), 0)
  head.writeUInt32LE(Math.floor((time % 1000) * 1000), 4)
  head.writeUInt32LE(frame.length, 8)
  head.writeUInt32LE(frame.length, 12)
  return Buffer.concat([head, frame])
}

function ethernet () {
  const out = Buffer.alloc(ETH_SIZE)
  Buffer.from('020000000002', 'hex').copy(out, 0)
  Buffer.from('020000000001', 'hex').copy(out, 6)
  out.writeUInt16BE(0x0800, 12)
  return out
}

function ipv4 (rec, index) {
  const out = Buffer.alloc(IPV4_SIZE)
  out[0] = 0x45
  out.writeUInt16BE(IPV4_SIZE + UDP_SIZE + rec.data.length, 2)
  out.writeUInt16BE(index & 0xffff, 4)
  out.writeUInt16BE(0x4000, 6) // don't fragment
  out[8] = 64
  out[9] = 17 // UDP
  ipBytes(rec.srcIp || '127.0.0.1').copy(out, 12)
  ipBytes(rec.dstIp || '127.0.0.1').copy(out, 16)
  out.writeUInt16BE(checksum(out), 10)
  return out
}

function ipBytes (ip) {
  return Buffer.from(ip.split('.').map(Number))
}

/** RFC 791 header checksum: ones' complement of the ones' complement sum. */
function checksum (header) {
  let sum = 0
  for (let i = 0; i < header.length; i += 2) sum += header.readUInt16BE(i)
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  return ~sum & 0xffff
}

function udp (rec) {
  const head = Buffer.alloc(UDP_SIZE)
  head.writeUInt16BE(rec.srcPort, 0)
  head.writeUInt16BE(rec.dstPort, 2)
  head.writeUInt16BE(UDP_SIZE + rec.data.length, 4)
  // checksum 0: "no checksum", allowed for UDP over IPv4
  return Buffer.concat([head, rec.data])
}

module.exports = { buildPcap, writePcap }
