'use strict'

module.exports = {
  description: 'RTCP (RFC 3550) call-quality collector: report blocks become streams in MongoDB',
  Collector: require('./rtcp-collector'),
  Config: require('./rtcp-config')
}
// The worker (mongoose and the MongoDB driver) is loaded where it runs, in
// the workers: the master that loads this module has no use for it.
Object.defineProperty(module.exports, 'Worker', { enumerable: true, get: () => require('./rtcp-worker') })
