'use strict'

// NetFlow v5 (Cisco's layout): a 24-byte header (version, count, sysUptime
// ms, unix secs and nsecs, flow sequence, engine type and ID, sampling) and
// `count` 48-byte records, 1 to 30 of them. Record times are sysUptime
// values: a flow's time is the export time less how long before the export
// it was, read as a signed 32-bit difference, which is right across the
// uptime wrap (every 49.7 days) and for exporters whose uptime starts
// after their flows did (softflowd reading a pcap). nfdump gets the same
// by adjusting for the wrap when First > Last or Last > sysUptime.

const { netflowRefusal } = require('./reasons')
const { newFlow, newDatagram } = require('./shapes')

const HEADER_SIZE = 24
const RECORD_SIZE = 48
const MAX_COUNT = 30

/**
 * @param {Buffer} buf one datagram whose first two bytes read 5
 * @returns {import('./shapes').NetflowDatagram|import('../../exceptions/decode-error')}
 */
function decodeV5 (buf) {
  if (buf.length < HEADER_SIZE) return netflowRefusal('netflow-truncated')
  const count = buf.readUInt16BE(2)
  if (count === 0 || count > MAX_COUNT) return netflowRefusal('netflow-bad-count')
  const end = HEADER_SIZE + count * RECORD_SIZE
  if (buf.length < end) return netflowRefusal('netflow-truncated')
  if (buf.length > end) return netflowRefusal('netflow-bad-length')
  const sysUptime = buf.readUInt32BE(4)
  const exportTime = buf.readUInt32BE(8) * 1000 + Math.floor(buf.readUInt32BE(12) / 1e6)
  const sequence = buf.readUInt32BE(16)
  const datagram = newDatagram(5, (buf[20] << 8) | buf[21], sequence, exportTime)
  datagram.nextSequence = (sequence + count) >>> 0
  datagram.sysUptime = sysUptime
  const samplingInterval = datagram.samplingInterval = buf.readUInt16BE(22) & 0x3fff // the top two bits are the mode
  for (let at = HEADER_SIZE; at < end; at += RECORD_SIZE) {
    const flow = newFlow()
    flow.srcAddr = `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`
    flow.dstAddr = `${buf[at + 4]}.${buf[at + 5]}.${buf[at + 6]}.${buf[at + 7]}`
    flow.nextHop = `${buf[at + 8]}.${buf[at + 9]}.${buf[at + 10]}.${buf[at + 11]}`
    flow.inputIf = buf.readUInt16BE(at + 12)
    flow.outputIf = buf.readUInt16BE(at + 14)
    flow.packets = buf.readUInt32BE(at + 16)
    flow.bytes = buf.readUInt32BE(at + 20)
    flow.first = exportTime - ((sysUptime - buf.readUInt32BE(at + 24)) | 0)
    flow.last = exportTime - ((sysUptime - buf.readUInt32BE(at + 28)) | 0)
    flow.srcPort = buf.readUInt16BE(at + 32)
    flow.dstPort = buf.readUInt16BE(at + 34)
    flow.tcpFlags = buf[at + 37]
    flow.proto = buf[at + 38]
    flow.tos = buf[at + 39]
    flow.srcAs = buf.readUInt16BE(at + 40)
    flow.dstAs = buf.readUInt16BE(at + 42)
    flow.samplingInterval = samplingInterval
    datagram.records.push(flow)
  }
  return datagram
}

module.exports = { decodeV5, MAX_COUNT }
