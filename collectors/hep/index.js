'use strict'

const { collectorModule } = require('../collector-module')

module.exports = collectorModule({
  description: 'HEP3 (HOMER encapsulation) collector: SIP calls by Call-ID and their RTCP call quality from rtpengine, Kamailio, Asterisk, FreeSWITCH, heplify',
  Collector: require('./hep-collector'),
  Config: require('./hep-config'),
  workerPath: require.resolve('./hep-worker')
})
