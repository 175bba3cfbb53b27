'use strict'

const path = require('node:path')
const MongoCollector = require('../mongo-collector')
const RtcpConfig = require('./rtcp-config')

const DEFAULTS = { name: 'rtcp', protocol: 'udp', port: 5005, distribution: 'hash', worker: path.join(__dirname, 'rtcp-worker.js') }

/**
 * The RTCP collector: UDP on 5005 by default, hash distribution on the
 * reporting source (one reporter's packets stay on one worker, which keeps
 * its coalescing effective), RtcpWorker writing call-quality streams.
 */
class RtcpCollector extends MongoCollector {
  static workerOptionKeys = RtcpConfig.WORKER_KEYS

  constructor (options = {}) {
    super({ ...DEFAULTS, ...options })
  }
}

module.exports = RtcpCollector
