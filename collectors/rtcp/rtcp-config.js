'use strict'

const path = require('node:path')
const MongoCollectorConfig = require('../../configs/mongo-collector-config')

/** Flags of the RTCP collector: the base ones with RTCP defaults, plus stream lifetime. */
class RtcpConfig extends MongoCollectorConfig {
  static usage = 'collector run rtcp [options]'

  static flags = MongoCollectorConfig.extendFlags({
    port: { default: 5005 },
    name: { default: 'rtcp' },
    distribution: { default: 'hash' },
    workername: { required: false, default: path.join(__dirname, 'rtcp-worker.js') },
    streamTimeout: { type: 'duration', default: 60000, group: 'Storage', description: 'end a stream after this long without a report' },
    byeGrace: { type: 'duration', default: 5000, group: 'Storage', description: 'after a BYE, end the stream once quiet this long' }
  })
}

RtcpConfig.WORKER_KEYS = [...MongoCollectorConfig.WORKER_KEYS, 'streamTimeout', 'byeGrace']

module.exports = RtcpConfig
