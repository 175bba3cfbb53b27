'use strict'

const path = require('node:path')
const MongoCollectorConfig = require('../../configs/mongo-collector-config')
const { TOLERABLE_REASONS } = require('./constants')

/** Flags of the RTCP collector: the base ones with RTCP defaults, plus stream lifetime. */
class RtcpConfig extends MongoCollectorConfig {
  static usage = 'collector run rtcp [options]'

  static flags = MongoCollectorConfig.extendFlags({
    port: { default: 5005 },
    name: { default: 'rtcp' },
    distribution: { default: 'hash' },
    workername: { required: false, default: path.join(__dirname, 'rtcp-worker.js') },
    streamTimeout: { type: 'duration', default: 60000, group: 'Storage', description: 'end a stream after this long without a report' },
    byeGrace: { type: 'duration', default: 5000, group: 'Storage', description: 'after a BYE, end the stream once quiet this long' },
    tolerate: { type: 'list', choices: TOLERABLE_REASONS, default: '', group: 'Protocol', description: 'deviations from RFC 3550 decoded anyway and counted in the workers\' deviations (default: none; each is otherwise refused and counted by its reason)' }
  })
}

RtcpConfig.WORKER_KEYS = [...MongoCollectorConfig.WORKER_KEYS, 'streamTimeout', 'byeGrace', 'tolerate']

module.exports = RtcpConfig
