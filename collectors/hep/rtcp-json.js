'use strict'

// HEP protocol type 5 carries RTCP either as JSON (rtpengine, heplify and
// captagent, Asterisk's res_hep_rtcp, FreeSWITCH) or as the raw compound
// packet (sipcapture's gossipper and other agents that forward the bytes).
// Both become what collectors/rtcp/decoder.js returns, `{ packets }`, so
// that one mapping (to-stream-updates.js) and one call-quality model serve
// RTCP heard directly and RTCP heard through HEP.

const { tryDecodeRtcp } = require('../rtcp/decoder')
const { MAX_COMPOUND_SOURCES } = require('../rtcp/constants')

// NTP seconds at the Unix epoch (RFC 5905): an agent that sends Unix time
// (Asterisk turns the NTP timestamp into a timeval) sends less than this.
const NTP_UNIX_OFFSET = 2208988800
const U32 = 0x100000000
// An SDES item's text is at most 255 octets (its length field, RFC 3550 §6.5).
const MAX_SDES_TEXT = 255

// Raw RTCP as an agent copied it: RFC 5506 reduced-size datagrams too (a
// WebRTC endpoint's lone NACK or PLI, SDES or BYE), as the RTCP collector
// reads them by default (docs/protocols.md).
const RAW_OPTIONS = Object.freeze({ reducedSize: true })

/**
 * The RTCP of one HEP type 5 payload, as `{ packets }` in the RTCP
 * decoder's shape, or `{ reason }`: 'hep-rtcp-json' (not JSON, or no SSRC),
 * 'hep-rtcp-field' (a field out of its range: not an unsigned 32-bit
 * integer, a fraction over 255, a CNAME over 255 bytes), 'too-many-sources'
 * (more report blocks or SDES chunks than one RTCP packet carries:
 * MAX_COMPOUND_SOURCES), or the RTCP decoder's own reason for a raw packet.
 *
 * JSON as the agents send it: `{ ssrc, type, report_count, report_blocks:
 * [{ source_ssrc, highest_seq_no, fraction_lost (0-255), ia_jitter,
 * packets_lost, lsr, dlsr }], sender_information: { ntp_timestamp_sec,
 * ntp_timestamp_usec, rtp_timestamp, packets, octets }, sdes_ssrc,
 * sdes_information: [{ sdes_chunk_ssrc, type, text }] }`, numbers possibly
 * as strings. Their quirks, read from the senders: `type` names the last
 * packet of the compound (an SR with SDES says 202), so an SR is known by
 * its sender information; `ntp_timestamp_usec` is the raw NTP fraction
 * (rtpengine, heplify) unless the seconds are Unix time (then both are a
 * timeval: Asterisk); `packets_lost` may come as the unsigned 24-bit field.
 *
 * @param {Buffer} payload
 */
function rtcpOfHep (payload) {
  if (payload.length > 0 && payload[0] >> 6 === 2) {
    const decoded = tryDecodeRtcp(payload, RAW_OPTIONS)
    return decoded.packets === null ? { reason: decoded.reason } : { packets: decoded.packets }
  }
  let json
  try {
    json = JSON.parse(payload.toString('utf8'))
  } catch {
    return { reason: 'hep-rtcp-json' }
  }
  if (json === null || typeof json !== 'object' || uint(json.ssrc) === null) return { reason: 'hep-rtcp-json' }
  if (count(json.report_blocks) > MAX_COMPOUND_SOURCES || count(json.sdes_information) > MAX_COMPOUND_SOURCES) return { reason: 'too-many-sources' }
  const packets = jsonPackets(json)
  return packets ? { packets } : { reason: 'hep-rtcp-field' }
}

// The SR or RR, then the CNAMEs; null when a field is out of range.
function jsonPackets (json) {
  const ssrc = uint(json.ssrc)
  const reports = []
  for (const block of Array.isArray(json.report_blocks) ? json.report_blocks : []) {
    const report = reportBlock(block)
    if (!report) return null
    reports.push(report)
  }
  const info = json.sender_information
  const sender = info && typeof info === 'object' ? senderInfo(info) : undefined
  if (sender === null) return null
  const packets = [sender ? { type: 'SR', ssrc, ...sender, reports } : { type: 'RR', ssrc, reports }]
  const chunks = cnameChunks(json)
  if (chunks === null) return null
  if (chunks.length > 0) packets.push({ type: 'SDES', chunks })
  return packets
}

function reportBlock (block) {
  if (!block || typeof block !== 'object') return null
  const fields = [block.source_ssrc, block.fraction_lost, block.packets_lost, block.highest_seq_no, block.ia_jitter, block.lsr, block.dlsr].map(uint)
  if (fields.includes(null) || fields[1] > 255) return null
  const [ssrc, fractionLost, lost, highestSeq, jitter, lsr, dlsr] = fields
  // Cumulative lost is a signed 24-bit field; some agents print it unsigned.
  const cumulativeLost = lost >= 0x800000 && lost <= 0xffffff ? lost - 0x1000000 : lost
  return { ssrc, fractionLost, cumulativeLost, highestSeq, jitter, lsr, dlsr }
}

// An all-zero sender information is what some agents send for an RR.
function senderInfo (info) {
  const fields = [info.ntp_timestamp_sec, info.ntp_timestamp_usec, info.rtp_timestamp, info.packets, info.octets].map((value) => value === undefined ? 0 : uint(value))
  if (fields.includes(null)) return null
  const [sec, fraction, rtpTimestamp, packetCount, octetCount] = fields
  if (sec === 0 && fraction === 0 && packetCount === 0 && octetCount === 0) return undefined
  // Unix seconds with microseconds (Asterisk); anything else is the NTP
  // timestamp's two words. (Real NTP seconds are below the offset only
  // before 1970 or, from 2036, in NTP era 1: then give agents' words as sent.)
  const unix = sec < NTP_UNIX_OFFSET && fraction < 1e6
  return {
    ntpSec: unix ? sec + NTP_UNIX_OFFSET : sec,
    ntpFrac: unix ? Math.floor(fraction * U32 / 1e6) : fraction,
    rtpTimestamp,
    packetCount,
    octetCount
  }
}

function count (list) {
  return Array.isArray(list) ? list.length : 0
}

// The CNAMEs; null when one is longer than an SDES item can be.
function cnameChunks (json) {
  const chunks = []
  for (const item of Array.isArray(json.sdes_information) ? json.sdes_information : []) {
    const ssrc = item && uint(item.sdes_chunk_ssrc)
    if (ssrc === null || uint(item.type) !== 1 || typeof item.text !== 'string') continue
    if (Buffer.byteLength(item.text) > MAX_SDES_TEXT) return null
    chunks.push({ ssrc, items: { cname: item.text } })
  }
  return chunks
}

/** A 32-bit unsigned integer given as a number or a decimal string, else null. */
function uint (value) {
  const n = typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value
  return Number.isInteger(n) && n >= 0 && n < U32 ? n : null
}

module.exports = { rtcpOfHep, HEP_RTCP_REASONS: ['hep-rtcp-json', 'hep-rtcp-field'] }
