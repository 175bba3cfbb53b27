'use strict'

const path = require('node:path')
const MongoCollectorConfig = require('../../configs/mongo-collector-config')
const { TOLERABLE_REASONS, MAX_SOURCES } = require('./constants')
const { CODECS, DEFAULT_CODEC } = require('./codecs')

/** Flags of the RTCP collector: the base ones with RTCP defaults, plus stream lifetime and call quality. */
class RtcpConfig extends MongoCollectorConfig {
  static usage = 'collector run rtcp [options]'

  static flags = MongoCollectorConfig.extendFlags({
    port: { default: 5005 },
    name: { default: 'rtcp' },
    distribution: { default: 'hash' },
    workername: { required: false, default: path.join(__dirname, 'rtcp-worker.js') },
    streamTimeout: { type: 'duration', default: 60000, group: 'Storage', description: 'end a stream after this long without a report' },
    byeGrace: { type: 'duration', default: 5000, group: 'Storage', description: 'after a BYE, end the stream once quiet this long' },
    tolerate: { type: 'list', choices: TOLERABLE_REASONS, default: '', group: 'Protocol', description: 'deviations from RFC 3550 decoded anyway and counted in the workers\' deviations (default: none; each is otherwise refused and counted by its reason)' },
    codec: { type: 'string', choices: Object.keys(CODECS), default: DEFAULT_CODEC, group: 'Call quality', description: 'the calls\' codec, for the E-model\'s Ie and Bpl (RTCP does not say)' },
    clockRate: { type: 'integer', min: 1000, max: 1000000, group: 'Call quality', description: 'RTP clock rate (Hz) for jitter in ms until two SRs of the sender tell it (default: the codec\'s)' },
    maxSources: { type: 'integer', min: 1, max: 10000000, default: MAX_SOURCES, group: 'Call quality', description: 'SSRCs (and as many stream sides and calls) remembered by the master for call affinity and by each worker for call quality; past it the least recently seen are forgotten and counted (events.stateEvicted, the workers\' evicted)' }
  })
}

RtcpConfig.WORKER_KEYS = [...MongoCollectorConfig.WORKER_KEYS, 'streamTimeout', 'byeGrace', 'tolerate', 'codec', 'clockRate', 'maxSources']

module.exports = RtcpConfig
