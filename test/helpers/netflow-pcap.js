'use strict'

// Known traffic for the NetFlow oracle test: seeded TCP and UDP flows over
// IPv4 and IPv6, written as a libpcap file (Ethernet frames) that softflowd
// reads with -r. Every flow's packets, bytes (the IP datagram's length, as
// an exporter counts them) and first/last times are known here, so the
// decoded export can be checked against the traffic as well as against
// nfdump. test/helpers/pcap.js wraps UDP payloads for tshark; this one
// builds whole TCP/UDP packets of either family, which that one does not.

const fs = require('node:fs/promises')
const { prng } = require('./prng')
const { ipv6 } = require('./netflow-packets')

const ETHERTYPE = { 4: 0x0800, 6: 0x86dd }
const TRANSPORT_SIZE = { 6: 20, 17: 8 }
const TCP_FLAGS = { FIN: 0x01, SYN: 0x02, PSH: 0x08, ACK: 0x10 }

/**
 * Seeded flows: distinct 5-tuples (so no two share an exporter's flow
 * entry), one direction each, 1–12 packets of 40–1400 payload bytes (one
 * flow in 20 has 60–360, so counters pass 8 and 16 bits), a ToS / traffic
 * class each, start times spread over `spanMs` from `start`, packets 0–4 s
 * apart (the long flows' 0–0.2 s).
 *
 * @param {{ seed?: number, count?: number, start?: number, spanMs?: number, ipv6Share?: number }} [options]
 * @returns {Array<{ family: 4|6, proto: 6|17, srcAddr: string, dstAddr: string, srcPort: number, dstPort: number, tos: number, packets: Array<{ time: number, payload: number, flags: number }>, bytes: number, first: number, last: number }>}
 */
function makeFlows ({ seed = 37, count = 400, start = Date.UTC(2026, 10, 25, 10, 0, 0), spanMs = 120000, ipv6Share = 0.3 } = {}) {
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  const flows = []
  for (let i = 0; i < count; i++) {
    const family = rand() < ipv6Share ? 6 : 4
    const proto = rand() < 0.6 ? 6 : 17
    const srcAddr = family === 4 ? `10.${1 + int(200)}.${int(256)}.${1 + int(254)}` : `2001:db8:${(1 + int(0xfffe)).toString(16)}::${(1 + int(0xfffe)).toString(16)}`
    const dstAddr = family === 4 ? `192.0.2.${1 + (i % 254)}` : `2001:db8:ffff:${(i + 1).toString(16)}::1`
    const long = i % 20 === 7
    const n = long ? 60 + int(300) : 1 + int(12)
    let time = start + int(spanMs - 15000)
    const packets = []
    for (let p = 0; p < n; p++) {
      const flags = proto !== 6 ? 0 : p === 0 ? TCP_FLAGS.SYN : p === n - 1 ? TCP_FLAGS.FIN | TCP_FLAGS.ACK : TCP_FLAGS.ACK | TCP_FLAGS.PSH
      packets.push({ time, payload: 40 + int(1360), flags })
      time += int(long ? 200 : 4000)
    }
    const header = (family === 4 ? 20 : 40) + TRANSPORT_SIZE[proto]
    flows.push({
      family, proto, srcAddr, dstAddr, srcPort: 1024 + i, dstPort: proto === 6 ? 443 : 53, tos: [0, 0x10, 0x28, 0xb8][i % 4],
      packets,
      bytes: packets.reduce((sum, p) => sum + header + p.payload, 0),
      first: packets[0].time,
      last: packets[n - 1].time
    })
  }
  return flows
}

/**
 * The flows' packets in time order as one pcap file (microsecond stamps).
 * @param {ReturnType<typeof makeFlows>} flows
 * @returns {Buffer}
 */
function flowPcap (flows) {
  const frames = flows.flatMap((flow) => flow.packets.map((packet) => ({ time: packet.time, frame: frameOf(flow, packet) })))
  frames.sort((a, b) => a.time - b.time)
  const head = Buffer.alloc(24)
  head.writeUInt32LE(0xa1b2c3d4, 0)
  head.writeUInt16LE(2, 4)
  head.writeUInt16LE(4, 6)
  head.writeUInt32LE(65535, 16)
  head.writeUInt32LE(1, 20) // Ethernet
  const records = frames.map(({ time, frame }) => {
    const rec = Buffer.alloc(16)
    rec.writeUInt32LE(Math.floor(time / 1000), 0)
    rec.writeUInt32LE((time % 1000) * 1000, 4)
    rec.writeUInt32LE(frame.length, 8)
    rec.writeUInt32LE(frame.length, 12)
    return Buffer.concat([rec, frame])
  })
  return Buffer.concat([head, ...records])
}

/** Writes flowPcap(flows) to `path`. */
function writeFlowPcap (path, flows) {
  return fs.writeFile(path, flowPcap(flows))
}

function frameOf (flow, packet) {
  const transport = Buffer.alloc(TRANSPORT_SIZE[flow.proto] + packet.payload)
  transport.writeUInt16BE(flow.srcPort, 0)
  transport.writeUInt16BE(flow.dstPort, 2)
  if (flow.proto === 6) {
    transport[12] = 5 << 4 // data offset: 20 bytes
    transport[13] = packet.flags
    transport.writeUInt16BE(65535, 14)
  } else {
    transport.writeUInt16BE(transport.length, 4)
  }
  const ip = flow.family === 4 ? ipv4Header(flow, transport.length) : ipv6Header(flow, transport.length)
  const ethernet = Buffer.from('020000000002020000000001', 'hex')
  const type = Buffer.alloc(2)
  type.writeUInt16BE(ETHERTYPE[flow.family])
  return Buffer.concat([ethernet, type, ip, transport])
}

function ipv4Header (flow, payloadLength) {
  const out = Buffer.alloc(20)
  out[0] = 0x45
  out[1] = flow.tos
  out.writeUInt16BE(20 + payloadLength, 2)
  out[8] = 64
  out[9] = flow.proto
  Buffer.from(flow.srcAddr.split('.').map(Number)).copy(out, 12)
  Buffer.from(flow.dstAddr.split('.').map(Number)).copy(out, 16)
  let sum = 0
  for (let i = 0; i < 20; i += 2) sum += out.readUInt16BE(i)
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  out.writeUInt16BE(~sum & 0xffff, 10)
  return out
}

function ipv6Header (flow, payloadLength) {
  const out = Buffer.alloc(40)
  out.writeUInt32BE((6 << 28) | (flow.tos << 20), 0) // version, traffic class, flow label 0
  out.writeUInt16BE(payloadLength, 4)
  out[6] = flow.proto
  out[7] = 64
  ipv6(flow.srcAddr).copy(out, 8)
  ipv6(flow.dstAddr).copy(out, 24)
  return out
}

module.exports = { makeFlows, flowPcap, writeFlowPcap, TCP_FLAGS }
