'use strict'

/** RTP/RTCP protocol version carried in every header (RFC 3550 §6.4.1). */
const VERSION = 2

/** Common header size: V/P/count, PT, length (RFC 3550 §6.4.1). */
const HEADER_SIZE = 4

/** Size of one reception report block (RFC 3550 §6.4.1). */
const REPORT_BLOCK_SIZE = 24

/** Sender info of an SR after the reporter SSRC: NTP(8) RTP(4) counts(8). */
const SENDER_INFO_SIZE = 20

/** The 5-bit count field caps reports, SDES chunks and BYE sources. */
const MAX_COUNT = 31

/**
 * What one compound packet (or one HEP RTCP JSON report) may describe, per
 * role: report blocks, SDES chunks, BYE sources, XR blocks and DLRR items,
 * each at most what one packet's count field allows. RFC 3550 lets a
 * compound stack several RRs for more than 31 sources (a mixer's); a call's
 * endpoint reports one or two. Past this a datagram is refused
 * (`too-many-sources`): one datagram must not fan out into thousands of
 * stream documents and entries of call-quality memory.
 */
const MAX_COMPOUND_SOURCES = MAX_COUNT

/**
 * SDES items and XR blocks one compound may carry in all: eight per source
 * it may describe, each of the seven named SDES items and a PRIV for every
 * one of 31 chunks (a mixer describing its contributors in full); an
 * endpoint sends one to three items and an XR packet a few blocks. A 64 KB
 * datagram can otherwise stack about 21,000 empty items or 16,000 empty XR
 * blocks, milliseconds of decoding each. Past this a datagram is refused
 * (`too-many-items`) as the decoder meets the first one too many.
 */
const MAX_COMPOUND_ITEMS = 8 * MAX_COUNT

/**
 * SSRCs remembered per process (`--max-sources`): by the master for call
 * affinity, by each worker for call quality. Not the protocol's: ours.
 */
const MAX_SOURCES = 100000

/**
 * The receivers' jitter buffer delay (ms) assumed by the E-model when no XR
 * VoIP Metrics block gives its nominal delay (`--jitter-buffer`): RTCP does
 * not carry it, and an adaptive buffer on a clean path holds about 40–60 ms.
 */
const JITTER_BUFFER_MS = 50

/** Packet types (RFC 3550 §12.1, RFC 3611 §2). */
const PT = Object.freeze({
  SR: 200,
  RR: 201,
  SDES: 202,
  BYE: 203,
  APP: 204,
  XR: 207
})

/** SDES item types by name (RFC 3550 §6.5). PRIV is handled apart. */
const SDES_ITEM = Object.freeze({
  cname: 1,
  name: 2,
  email: 3,
  phone: 4,
  loc: 5,
  tool: 6,
  note: 7
})

/** SDES type code → item name, the inverse of SDES_ITEM. */
const SDES_NAME = Object.freeze(Object.fromEntries(
  Object.entries(SDES_ITEM).map(([name, code]) => [code, name])
))

const SDES_END = 0
const SDES_PRIV = 8

/** XR block types the decoder understands (RFC 3611 §4). */
const XR_BT = Object.freeze({
  RRT: 4,
  DLRR: 5,
  VOIP_METRICS: 7
})

/**
 * Every `reason` a DecodeError from decodeRtcp can carry, so a worker can
 * create one malformed-input counter per reason up front.
 */
const DECODE_REASONS = Object.freeze([
  'not-buffer',
  'too-short',
  'bad-version',
  'first-not-sr-rr',
  'bad-length',
  'bad-padding',
  'report-count',
  'truncated-block',
  'source-count-mismatch',
  'sdes-unterminated',
  'nonzero-padding',
  'sdes-bad-priv',
  'too-many-sources',
  'too-many-items',
  'srtcp'
])

/**
 * Reasons a caller may choose to tolerate (decodeRtcp's `tolerate` option):
 * deviations real senders are known to make that leave the rest of the
 * datagram unambiguous. A tolerated one is listed in the result's
 * `deviations` instead of rejecting the datagram.
 */
const TOLERABLE_REASONS = Object.freeze([
  'sdes-unterminated',
  'nonzero-padding'
])

module.exports = {
  JITTER_BUFFER_MS,
  VERSION,
  HEADER_SIZE,
  REPORT_BLOCK_SIZE,
  SENDER_INFO_SIZE,
  MAX_COUNT,
  MAX_COMPOUND_ITEMS,
  MAX_SOURCES,
  PT,
  SDES_ITEM,
  SDES_NAME,
  SDES_END,
  SDES_PRIV,
  XR_BT,
  MAX_COMPOUND_SOURCES,
  DECODE_REASONS,
  TOLERABLE_REASONS
}
