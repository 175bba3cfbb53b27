'use strict'

module.exports = {
  description: 'syslog (RFC 5424 / RFC 3164) collector over UDP or TCP: messages and per-minute counters in MongoDB',
  Collector: require('./syslog-collector'),
  Config: require('./syslog-config'),
  Worker: require('./syslog-worker')
}
