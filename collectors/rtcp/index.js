'use strict'

const { collectorModule } = require('../collector-module')

module.exports = collectorModule({
  description: 'RTCP (RFC 3550) call-quality collector: report blocks become streams in MongoDB',
  Collector: require('./rtcp-collector'),
  Config: require('./rtcp-config'),
  workerPath: require.resolve('./rtcp-worker')
})
