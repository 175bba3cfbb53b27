'use strict'

module.exports = {
  description: 'RTCP (RFC 3550) call-quality collector: report blocks become streams in MongoDB',
  Collector: require('./rtcp-collector'),
  Config: require('./rtcp-config'),
  Worker: require('./rtcp-worker')
}
