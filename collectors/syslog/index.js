'use strict'

const { collectorModule } = require('../collector-module')

module.exports = collectorModule({
  description: 'syslog (RFC 5424 / RFC 3164) collector over UDP or TCP: messages and per-minute counters in MongoDB',
  Collector: require('./syslog-collector'),
  Config: require('./syslog-config'),
  workerPath: require.resolve('./syslog-worker')
})
