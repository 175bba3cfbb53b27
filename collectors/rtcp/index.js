'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const { STREAM_SETTINGS, NEW_KEY_SETTINGS } = require('../../workers/mongo-settings')
const { TOLERABLE_REASONS, MAX_SOURCES, JITTER_BUFFER_MS } = require('./constants')
const { CODECS, DEFAULT_CODEC } = require('./codecs')
const { CallAffinity } = require('./call-affinity')
const { decodeRtcp, callQualityOf } = require('./rtcp-records')
const { toStreamUpdates, ssrcsNamed } = require('./to-stream-updates')
const { callAnalytics } = require('./quality-analytics')

/**
 * The RTCP collector (RFC 3550): UDP on 5005 by default, hash distribution
 * on the call (call-affinity.js: both ends of a call meet in one worker,
 * which pairs their reports into round-trip times and clock rates; the
 * master remembers `maxSources` SSRCs for it, one forgotten counted in
 * `eventReasons.stateEvicted.callAffinity`). Each report block is a packet
 * from the reporter to the reported source, with the call quality it tells
 * (call-quality.js, the per-worker state of `enrich`), stored in the
 * `streams` sink; ended streams keep the call's analytics
 * (quality-analytics.js). Malformed datagrams are refused by reason
 * (decoder.js DECODE_REASONS); tolerated deviations (`--tolerate`) are
 * counted in the workers' `deviations`.
 */
module.exports = defineCollector({
  name: 'rtcp',
  description: 'RTCP (RFC 3550) call-quality collector: report blocks become streams in MongoDB',
  usage: 'collector run rtcp [options]',
  listen: { protocol: 'udp', port: 5005, distribution: 'hash' },
  settings: {
    ...STREAM_SETTINGS,
    tolerate: { type: 'list', choices: () => TOLERABLE_REASONS, default: [], group: 'Protocol', description: 'deviations from RFC 3550 decoded anyway and counted in the workers\' deviations (default: none; each is otherwise refused and counted by its reason)' },
    reducedSize: { type: 'boolean', default: true, group: 'Protocol', description: 'accept RFC 5506 reduced-size RTCP, a datagram not starting with an SR or RR (a lone NACK, PLI, SDES or BYE, as WebRTC endpoints that negotiated rtcp-rsize send): what it carries is kept (a CNAME, a BYE), the workers\' reducedSize counts them by first packet type; --no-reduced-size refuses them (first-not-sr-rr)' },
    codec: { type: 'string', choices: () => Object.keys(CODECS), default: DEFAULT_CODEC, group: 'Call quality', description: 'the calls\' codec, for the E-model\'s Ie and Bpl, where nothing says one (RTCP does not; over HEP a call\'s SDP does, for the codecs with planning values)' },
    jitterBuffer: { type: 'duration', default: JITTER_BUFFER_MS, range: [0, 1000], group: 'Call quality', description: 'delay of the receivers\' jitter buffers in the E-model\'s mouth-to-ear delay, unless an XR VoIP Metrics block gives its nominal delay (RTCP does not say; an adaptive buffer holds about 40–60 ms on a clean path)' },
    clockRate: { type: 'integer', range: [1000, 1000000], group: 'Call quality', description: 'RTP clock rate (Hz) for jitter in ms until the call\'s SDP (over HEP) or two SRs of the sender tell it (default: the codec\'s); until then jitter is kept in timestamp units and read at the clock learned' },
    // The master keeps as many for call affinity (affinity below).
    maxSources: { type: 'integer', default: MAX_SOURCES, range: [1, 10000000], group: 'Call quality', description: 'SSRCs (and as many stream sides) remembered by the master for call affinity and by each worker for call quality; past it the least recently seen are forgotten and counted (events.stateEvicted, the workers\' evicted)' },
    // New SSRCs a minute (cardinality): twice what the memory holds, a call's two ends.
    maxNewKeysPerMinute: { ...NEW_KEY_SETTINGS.maxNewKeysPerMinute, default: 2 * MAX_SOURCES }
  },
  // The call of an RTCP datagram; for anything else (-1) its sender.
  affinity: ({ maxSources }, evicted) => new CallAffinity({ maxSenders: maxSources, onEvict: () => evicted('callAffinity') }),
  decode: (message, settings) => decodeRtcp(message.data, settings),
  // New SSRCs are new stream sides, their documents and call-quality memory: capped per minute, each SSRC
  // the datagram names (by its first reporter alone, a known reporter's 31 blocks of fresh SSRCs a
  // datagram opened 31 streams, none counted).
  cardinality: (decoded) => ssrcsNamed(decoded),
  tally: { deviations: (decoded) => decoded.deviations, reducedSize: (decoded) => decoded.reducedSize || null },
  // The worker's call-quality memory pairs SRs with the reports naming them (RTT) and infers clock rates.
  state: (settings) => ({ quality: callQualityOf(settings) }),
  enrich: (decoded, { quality }, { receivedAt, remote }) => toStreamUpdates(decoded, remote, receivedAt, quality),
  stats: ({ quality }) => ({ quality: quality.stats() }),
  memory: ({ quality }) => quality.memory(),
  sinks: [sinks.streams({ analytics: callAnalytics })]
})
