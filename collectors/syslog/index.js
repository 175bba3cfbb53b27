'use strict'

module.exports = {
  description: 'syslog (RFC 5424 / RFC 3164) collector over UDP or TCP: messages and per-minute counters in MongoDB',
  Collector: require('./syslog-collector'),
  Config: require('./syslog-config')
}
// The worker (mongoose and the MongoDB driver) is loaded where it runs, in
// the workers: the master that loads this module has no use for it.
Object.defineProperty(module.exports, 'Worker', { enumerable: true, get: () => require('./syslog-worker') })
