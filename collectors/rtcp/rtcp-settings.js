'use strict'

const path = require('node:path')
const { declareSettings } = require('../../lib/shared/settings')
const { STREAM_SETTINGS } = require('../../workers/mongo-settings')
const { MONGO_COLLECTOR_SETTINGS } = require('../mongo-settings')
const { TOLERABLE_REASONS, MAX_SOURCES, JITTER_BUFFER_MS } = require('./constants')
const { CODECS, DEFAULT_CODEC } = require('./codecs')

/**
 * The RTCP collector's settings, declared once (see collectors/mongo-settings.js):
 * RtcpCollector, RtcpConfig, RtcpWorker and docs/collectors.md take them from here.
 */
module.exports = Object.freeze({
  defaults: Object.freeze({ name: 'rtcp', protocol: 'udp', port: 5005, distribution: 'hash', worker: path.join(__dirname, 'rtcp-worker.js') }),
  master: MONGO_COLLECTOR_SETTINGS.master,
  worker: declareSettings({
    ...STREAM_SETTINGS,
    tolerate: { type: 'list', choices: () => TOLERABLE_REASONS, default: [], group: 'Protocol', description: 'deviations from RFC 3550 decoded anyway and counted in the workers\' deviations (default: none; each is otherwise refused and counted by its reason)' },
    codec: { type: 'string', choices: () => Object.keys(CODECS), default: DEFAULT_CODEC, group: 'Call quality', description: 'the calls\' codec, for the E-model\'s Ie and Bpl (RTCP does not say)' },
    jitterBuffer: { type: 'duration', default: JITTER_BUFFER_MS, range: [0, 1000], group: 'Call quality', description: 'delay of the receivers\' jitter buffers in the E-model\'s mouth-to-ear delay, unless an XR VoIP Metrics block gives its nominal delay (RTCP does not say; an adaptive buffer holds about 40–60 ms on a clean path)' },
    clockRate: { type: 'integer', range: [1000, 1000000], group: 'Call quality', description: 'RTP clock rate (Hz) for jitter in ms until two SRs of the sender tell it (default: the codec\'s)' },
    // The master keeps as many for call affinity: RtcpCollector reads it too.
    maxSources: { type: 'integer', default: MAX_SOURCES, range: [1, 10000000], group: 'Call quality', description: 'SSRCs (and as many stream sides) remembered by the master for call affinity and by each worker for call quality; past it the least recently seen are forgotten and counted (events.stateEvicted, the workers\' evicted)' }
  })
})
