'use strict'

module.exports = {
  description: 'HEP3 (HOMER encapsulation) collector: SIP calls by Call-ID and their RTCP call quality from rtpengine, Kamailio, Asterisk, FreeSWITCH, heplify',
  Collector: require('./hep-collector'),
  Config: require('./hep-config')
}
// The worker (mongoose and the MongoDB driver) is loaded where it runs, in
// the workers: the master that loads this module has no use for it.
Object.defineProperty(module.exports, 'Worker', { enumerable: true, get: () => require('./hep-worker') })
